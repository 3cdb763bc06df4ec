package informers

import (
	"iter"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/store"
)

// reader is the readers' side of an informer: what listers and indexes
// share. Reads take the store's read lock only while they copy.
type reader[T Object] struct {
	store    *store.Store[T]
	resource schema.GroupResource // for NotFound errors
	buffers  sync.Pool            // *[]T used by iterators
	// released says Factory.Release emptied the cache for good.
	released atomic.Bool
}

func newReader[T Object](st *store.Store[T], resource schema.GroupResource) *reader[T] {
	r := &reader[T]{store: st, resource: resource}
	r.buffers.New = func() any { return new([]T) }
	return r
}

// get returns the object ns/name, or a NotFound error; or a *ScopeError
// if the cache shows that the resource is not of the scope asked for.
func (r *reader[T]) get(ns, name string) (T, error) {
	obj, ok := r.store.Get(types.NamespacedName{Namespace: ns, Name: name})
	if ok {
		return obj, nil
	}
	if err := r.releasedError("get", types.NamespacedName{Namespace: ns, Name: name}.String()); err != nil {
		return obj, err
	}
	// The scope is read off the cache: objects with a namespace mean a
	// namespaced resource, objects without one a cluster-scoped one.
	total, clusterScoped := r.store.Len(), r.store.CountNamespace("")
	switch {
	case ns == "" && clusterScoped < total:
		return obj, &ScopeError{Resource: r.resource, Name: name, Namespaced: true}
	case ns != "" && total > 0 && clusterScoped == total:
		return obj, &ScopeError{Resource: r.resource, Name: name}
	}
	return obj, apierrors.NewNotFound(r.resource, name)
}

// releasedError returns, once the informer has been released, the error
// of a read (op of what) that finds nothing for that reason; nil before.
func (r *reader[T]) releasedError(op, what string) error {
	if !r.released.Load() {
		return nil
	}
	return errorf("%s %s %q: %w", op, r.resource, what, ErrReleased)
}

// iterate yields the objects fill appends to a pooled buffer. The buffer
// is filled under the store's read lock, which is released before the first
// yield: a loop body may take its time, or read the cache again, without
// holding up the informer.
func (r *reader[T]) iterate(fill func([]T) []T) iter.Seq[T] {
	return func(yield func(T) bool) {
		r.withBuffer(fill, func(buf []T) {
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
func (r *reader[T]) selectList(fill func([]T) []T, sel labels.Selector) []T {
	var out []T
	r.withBuffer(fill, func(buf []T) {
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
func (r *reader[T]) withBuffer(fill func([]T) []T, use func([]T)) {
	bp := r.buffers.Get().(*[]T)
	buf := fill((*bp)[:0])
	defer func() {
		clear(buf)
		*bp = buf[:0]
		r.buffers.Put(bp)
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
