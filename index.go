package informers

import (
	"iter"

	"github.com/kubetyped/informers/internal/store"
)

// IndexFunc returns the values under which an index files an object, such
// as the node name of a pod. Duplicates are ignored; nil or empty leaves
// the object out of the index.
type IndexFunc[T Object] = store.IndexFunc[T]

// NamespaceIndex is the name of the built-in index by namespace.
const NamespaceIndex = store.NamespaceIndex

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
