package informers

import (
	"fmt"
	"iter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Lister reads an informer's cache. Objects are shared with the cache:
// treat them as read-only. Get it from SharedInformer.Lister; the zero
// value is not usable.
type Lister[T Object] struct {
	inf *SharedInformer[T]
}

// List returns the objects whose labels match sel; nil matches everything.
// Unlike client-go's listers it returns no error: reading the cache cannot
// fail. It allocates the result; a reader in a hot loop should range over
// All or Select, which do not.
func (l Lister[T]) List(sel labels.Selector) []T {
	if selectsAll(sel) {
		return l.inf.store.AppendAll(nil)
	}
	return l.inf.selectList(func(dst []T) []T { return l.inf.store.AppendAll(dst) }, sel)
}

// All iterates over every cached object without allocating a result.
func (l Lister[T]) All() iter.Seq[T] {
	return l.inf.iterate(func(dst []T) []T { return l.inf.store.AppendAll(dst) })
}

// Select iterates over the objects whose labels match sel.
func (l Lister[T]) Select(sel labels.Selector) iter.Seq[T] {
	return filter(l.All(), sel)
}

// Get returns the cluster-scoped object called name, or a NotFound error.
func (l Lister[T]) Get(name string) (T, error) {
	return l.inf.get("", name)
}

// Len returns the number of cached objects.
func (l Lister[T]) Len() int { return l.inf.store.Len() }

// Namespace returns a lister for the objects of namespace ns.
func (l Lister[T]) Namespace(ns string) NamespaceLister[T] {
	return NamespaceLister[T]{inf: l.inf, ns: ns}
}

// ByIndex returns the objects that the named index files under value. It
// fails if there is no such index.
func (l Lister[T]) ByIndex(index, value string) ([]T, error) {
	objs, ok := l.inf.store.AppendIndex(nil, index, value)
	if !ok {
		return nil, fmt.Errorf("informers: %s has no index %q", l.inf.desc, index)
	}
	return objs, nil
}

// NamespaceLister reads one namespace of an informer's cache.
type NamespaceLister[T Object] struct {
	inf *SharedInformer[T]
	ns  string
}

// List returns the namespace's objects whose labels match sel; nil matches
// everything.
func (l NamespaceLister[T]) List(sel labels.Selector) []T {
	if selectsAll(sel) {
		return l.inf.store.AppendNamespace(nil, l.ns)
	}
	return l.inf.selectList(func(dst []T) []T { return l.inf.store.AppendNamespace(dst, l.ns) }, sel)
}

// All iterates over the namespace's objects without allocating a result.
func (l NamespaceLister[T]) All() iter.Seq[T] {
	return l.inf.iterate(func(dst []T) []T { return l.inf.store.AppendNamespace(dst, l.ns) })
}

// Select iterates over the namespace's objects whose labels match sel.
func (l NamespaceLister[T]) Select(sel labels.Selector) iter.Seq[T] {
	return filter(l.All(), sel)
}

// Get returns the object called name in the namespace, or a NotFound error.
func (l NamespaceLister[T]) Get(name string) (T, error) {
	return l.inf.get(l.ns, name)
}

// Len returns the number of objects in the namespace.
func (l NamespaceLister[T]) Len() int { return l.inf.store.CountNamespace(l.ns) }

func (i *SharedInformer[T]) get(ns, name string) (T, error) {
	obj, ok := i.store.Get(types.NamespacedName{Namespace: ns, Name: name})
	if !ok {
		return obj, apierrors.NewNotFound(i.resource.GroupResource(), name)
	}
	return obj, nil
}

// iterate yields the objects fill appends to a pooled buffer. The buffer
// is filled under the store's read lock, which is released before the first
// yield: a loop body may take its time, or read the cache again, without
// holding up the informer.
func (i *SharedInformer[T]) iterate(fill func([]T) []T) iter.Seq[T] {
	return func(yield func(T) bool) {
		i.withBuffer(fill, func(buf []T) {
			for _, obj := range buf {
				if !yield(obj) {
					return
				}
			}
		})
	}
}

// selectList returns the objects fill appends to a pooled buffer whose
// labels match sel, in a slice of their exact number: one allocation.
func (i *SharedInformer[T]) selectList(fill func([]T) []T, sel labels.Selector) []T {
	var out []T
	i.withBuffer(fill, func(buf []T) {
		n := 0
		for _, obj := range buf {
			if sel.Matches(labels.Set(obj.GetLabels())) {
				buf[n] = obj
				n++
			}
		}
		if n > 0 {
			out = make([]T, n)
			copy(out, buf[:n])
		}
	})
	return out
}

// withBuffer calls use with what fill appends to a buffer from the pool,
// then clears the buffer, so that it holds no object, and returns it.
func (i *SharedInformer[T]) withBuffer(fill func([]T) []T, use func([]T)) {
	bp := i.buffers.Get().(*[]T)
	buf := fill((*bp)[:0])
	defer func() {
		clear(buf)
		*bp = buf[:0]
		i.buffers.Put(bp)
	}()
	use(buf)
}

func selectsAll(sel labels.Selector) bool { return sel == nil || sel.Empty() }

// filter yields the objects of seq whose labels match sel.
func filter[T Object](seq iter.Seq[T], sel labels.Selector) iter.Seq[T] {
	if selectsAll(sel) {
		return seq
	}
	return func(yield func(T) bool) {
		for obj := range seq {
			if sel.Matches(labels.Set(obj.GetLabels())) && !yield(obj) {
				return
			}
		}
	}
}
