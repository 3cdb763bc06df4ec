package informers

import (
	"iter"

	"k8s.io/apimachinery/pkg/labels"
)

// Lister reads an informer's cache. Objects are shared with the cache:
// treat them as read-only. Get it from SharedInformer.Lister; the zero
// value is not usable.
//
// The lister of an informer that Factory.Release released reads an empty
// cache: List, All, Select and Len find nothing, and Get, a
// NamespaceLister's Get and ByIndex return an error that wraps
// ErrReleased, not a NotFound that a controller would take for a deleted
// object. Ask the factory for the informer again for a fresh cache.
type Lister[T Object] struct {
	r *reader[T]
}

// List returns the objects whose labels match sel; nil matches everything.
// Unlike client-go's listers it returns no error: reading the cache cannot
// fail. It allocates the result; a reader in a hot loop should range over
// All or Select, which do not.
func (l Lister[T]) List(sel labels.Selector) []T {
	if selectsAll(sel) {
		return l.r.store.AppendAll(nil)
	}
	return l.r.selectList(func(dst []T) []T { return l.r.store.AppendAll(dst) }, sel)
}

// All iterates over every cached object without allocating a result.
func (l Lister[T]) All() iter.Seq[T] {
	return l.r.iterate(func(dst []T) []T { return l.r.store.AppendAll(dst) })
}

// Select iterates over the objects whose labels match sel.
func (l Lister[T]) Select(sel labels.Selector) iter.Seq[T] {
	return filter(l.All(), sel)
}

// Get returns the cluster-scoped object called name, or a NotFound error.
// On a namespaced resource it returns a *ScopeError (once the cache holds
// any object to tell the scope by): use Namespace(ns).Get.
func (l Lister[T]) Get(name string) (T, error) {
	return l.r.get("", name)
}

// Len returns the number of cached objects.
func (l Lister[T]) Len() int { return l.r.store.Len() }

// Namespace returns a lister for the objects of namespace ns.
func (l Lister[T]) Namespace(ns string) NamespaceLister[T] {
	return NamespaceLister[T]{r: l.r, ns: ns}
}

// ByIndex returns the objects that the named index files under value. It
// fails if there is no such index.
func (l Lister[T]) ByIndex(index, value string) ([]T, error) {
	objs, ok := l.r.store.AppendIndex(nil, index, value)
	if !ok {
		return nil, errorf("%s has no index %q", l.r.resource, index)
	}
	if len(objs) == 0 {
		if err := l.r.releasedError("index "+index, value); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// NamespaceLister reads one namespace of an informer's cache.
type NamespaceLister[T Object] struct {
	r  *reader[T]
	ns string
}

// List returns the namespace's objects whose labels match sel; nil matches
// everything.
func (l NamespaceLister[T]) List(sel labels.Selector) []T {
	if selectsAll(sel) {
		return l.r.store.AppendNamespace(nil, l.ns)
	}
	return l.r.selectList(func(dst []T) []T { return l.r.store.AppendNamespace(dst, l.ns) }, sel)
}

// All iterates over the namespace's objects without allocating a result.
func (l NamespaceLister[T]) All() iter.Seq[T] {
	return l.r.iterate(func(dst []T) []T { return l.r.store.AppendNamespace(dst, l.ns) })
}

// Select iterates over the namespace's objects whose labels match sel.
func (l NamespaceLister[T]) Select(sel labels.Selector) iter.Seq[T] {
	return filter(l.All(), sel)
}

// Get returns the object called name in the namespace, or a NotFound error.
func (l NamespaceLister[T]) Get(name string) (T, error) {
	return l.r.get(l.ns, name)
}

// Len returns the number of objects in the namespace.
func (l NamespaceLister[T]) Len() int { return l.r.store.CountNamespace(l.ns) }
