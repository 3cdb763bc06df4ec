package informers

import (
	"iter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// NamespaceIndex is the name of the built-in index by namespace.
const NamespaceIndex = "namespace"

// Index is a named index over an informer's cache, returned by AddIndex.
type Index[T Object] struct {
	r    *reader[T]
	name string
}

// Name returns the index's name.
func (x *Index[T]) Name() string { return x.name }

// List returns the objects filed under value.
func (x *Index[T]) List(value string) []T {
	objs, _ := x.r.store.AppendIndex(nil, x.name, value)
	return objs
}

// All iterates over the objects filed under value without allocating a
// result.
func (x *Index[T]) All(value string) iter.Seq[T] {
	return x.r.iterate(func(dst []T) []T {
		objs, _ := x.r.store.AppendIndex(dst, x.name, value)
		return objs
	})
}

// Values returns the values that have at least one object.
func (x *Index[T]) Values() []string {
	vals, _ := x.r.store.IndexValues(x.name)
	return vals
}

// ControllerOf returns the key of obj's controller owner (the owner
// reference with controller set) if it is of kind owner. Owners are in
// their object's namespace.
func ControllerOf(obj metav1.Object, owner schema.GroupKind) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != owner.Kind {
		return types.NamespacedName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != owner.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, true
}

// IndexByController returns an index function that files each object under
// the key of its controller owner of kind owner, spelled "namespace/name"
// (names repeat across namespaces). Look up the objects a ReplicaSet
// controls with idx.List(informers.KeyOf(rs).String()):
//
//	idx, err := pods.AddIndex("controller", informers.IndexByController[*corev1.Pod](appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind()))
func IndexByController[T Object](owner schema.GroupKind) IndexFunc[T] {
	return func(obj T) []string {
		key, ok := ControllerOf(obj, owner)
		if !ok {
			return nil
		}
		return []string{key.String()}
	}
}
