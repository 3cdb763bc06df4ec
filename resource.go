package informers

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// describe names an informer by resource and Go type, as in
// "deployments.v1.apps (*v1.Deployment)".
func describe[T Object](gvr schema.GroupVersionResource) string {
	typ := reflect.TypeFor[T]().String() // names interface types too
	if gvr.Empty() {
		return typ
	}
	return fmt.Sprintf("%s (%s)", resourceName(gvr), typ)
}

// resourceName spells a GVR the way kubectl does: pods.v1,
// deployments.v1.apps.
func resourceName(gvr schema.GroupVersionResource) string {
	s := gvr.Resource + "." + gvr.Version
	if gvr.Group != "" {
		s += "." + gvr.Group
	}
	return s
}

// kindOf finds T's GroupVersionKind in sch.
func kindOf[T Object](sch *runtime.Scheme) (schema.GroupVersionKind, error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return schema.GroupVersionKind{}, fmt.Errorf("%v is not a pointer to a struct", typ)
	}
	gvks, _, err := sch.ObjectKinds(reflect.New(typ.Elem()).Interface().(runtime.Object))
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%v is not registered in the scheme: %w", typ, err)
	}
	return gvks[0], nil
}

// withBuiltIns returns a scheme with the types of user and those of
// client-go's scheme that user does not register under the same kind.
func withBuiltIns(user *runtime.Scheme) *runtime.Scheme {
	s := runtime.NewScheme()
	for gvk, typ := range user.AllKnownTypes() {
		s.AddKnownTypeWithName(gvk, reflect.New(typ).Interface().(runtime.Object))
	}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if !s.Recognizes(gvk) {
			s.AddKnownTypeWithName(gvk, reflect.New(typ).Interface().(runtime.Object))
		}
	}
	return s
}

// irregularResources lists the built-in kinds whose resource name is not
// the lower-case plural that meta.UnsafeGuessKindToResource makes of the
// kind. The generic rule serves every other type of k8s.io/api (a test
// checks them all); against a real server, discovery has the last word.
var irregularResources = map[schema.GroupKind]string{
	{Group: "", Kind: "Endpoints"}: "endpoints",
}

// resourceFor derives the resource of a kind.
func resourceFor(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	if name, ok := irregularResources[gvk.GroupKind()]; ok {
		return gvk.GroupVersion().WithResource(name)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvr
}

// guessResource derives T's resource from client-go's scheme, pluralizing
// its kind the way the API server does for built-in types.
func guessResource[T Object]() (schema.GroupVersionResource, error) {
	gvk, err := kindOf[T](scheme.Scheme)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return resourceFor(gvk), nil
}

// shape is how an informer's objects are represented.
type shape int

const (
	typedShape shape = iota
	dynamicShape
	metadataShape
)

// target is what a Go type resolves to.
type target struct {
	shape shape
	gvk   schema.GroupVersionKind // empty for dynamic and metadata informers
	gvr   schema.GroupVersionResource
}

// resolve finds the resource to serve T from.
func resolve[T Object](f *Factory, resource schema.GroupVersionResource) (target, error) {
	switch reflect.TypeFor[T]() {
	case reflect.TypeFor[*unstructured.Unstructured]():
		if resource.Empty() {
			return target{}, errors.New("a dynamic informer needs Options.Resource")
		}
		return target{shape: dynamicShape, gvr: resource}, nil
	case reflect.TypeFor[*metav1.PartialObjectMetadata]():
		if resource.Empty() {
			return target{}, errors.New("a metadata-only informer needs Options.Resource")
		}
		return target{shape: metadataShape, gvr: resource}, nil
	}
	gvk, err := kindOf[T](f.scheme)
	if err != nil {
		return target{}, err
	}
	if resource.Empty() {
		resource = resourceFor(gvk)
	}
	return target{shape: typedShape, gvk: gvk, gvr: resource}, nil
}
