package apiclient

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

// ResourceName spells a GVR the way kubectl does: pods.v1,
// deployments.v1.apps.
func ResourceName(gvr schema.GroupVersionResource) string {
	s := gvr.Resource + "." + gvr.Version
	if gvr.Group != "" {
		s += "." + gvr.Group
	}
	return s
}

// KindOf finds T's GroupVersionKind in sch.
func KindOf[T Object](sch *runtime.Scheme) (schema.GroupVersionKind, error) {
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

// WithBuiltIns returns a scheme with the types of user and those of
// client-go's scheme that user does not register under the same kind.
func WithBuiltIns(user *runtime.Scheme) *runtime.Scheme {
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

// ResourceFor derives the resource of a kind.
func ResourceFor(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	if name, ok := irregularResources[gvk.GroupKind()]; ok {
		return gvk.GroupVersion().WithResource(name)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvr
}

// GuessResource derives T's resource from client-go's scheme, pluralizing
// its kind the way the API server does for built-in types.
func GuessResource[T Object]() (schema.GroupVersionResource, error) {
	gvk, err := KindOf[T](scheme.Scheme)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return ResourceFor(gvk), nil
}

// Shape is how an informer's objects are represented.
type Shape int

// The shapes of objects.
const (
	Typed    Shape = iota // a Go type of the scheme
	Dynamic               // *unstructured.Unstructured
	Metadata              // *metav1.PartialObjectMetadata
	View                  // a struct of some of the fields of a resource's type
)

// Target is what a Go type resolves to.
type Target struct {
	Shape Shape
	// GVK is empty for dynamic and metadata informers; for a view, its
	// kind is empty if the scheme does not know the resource (a custom
	// resource), whose kind discovery tells.
	GVK schema.GroupVersionKind
	GVR schema.GroupVersionResource
	// API is, for a view of a type of the scheme, a pointer to that type,
	// the view is checked against and, for a built-in type, decoded as;
	// nil otherwise.
	API reflect.Type
}

// Resolve finds the resource to serve T from: resource, if set, and
// otherwise the resource of T's kind in sch. A T that sch does not
// register and that has metadata (IsView) is a view of resource.
func Resolve[T Object](sch *runtime.Scheme, resource schema.GroupVersionResource) (Target, error) {
	switch reflect.TypeFor[T]() {
	case reflect.TypeFor[*unstructured.Unstructured]():
		if resource.Empty() {
			return Target{}, errors.New("a dynamic informer needs Options.Resource")
		}
		return Target{Shape: Dynamic, GVR: resource}, nil
	case reflect.TypeFor[*metav1.PartialObjectMetadata]():
		if resource.Empty() {
			return Target{}, errors.New("a metadata-only informer needs Options.Resource")
		}
		return Target{Shape: Metadata, GVR: resource}, nil
	}
	gvk, err := KindOf[T](sch)
	if err != nil {
		if IsView(reflect.TypeFor[T]()) {
			return resolveView[T](sch, resource)
		}
		return Target{}, err
	}
	if resource.Empty() {
		resource = ResourceFor(gvk)
	}
	return Target{Shape: Typed, GVK: gvk, GVR: resource}, nil
}
