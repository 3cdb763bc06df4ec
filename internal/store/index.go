package store

import (
	"fmt"
	"runtime/debug"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IndexFunc returns the values under which an object is indexed.
// Duplicates are ignored; nil or empty means the object is not indexed.
type IndexFunc[T any] func(T) []string

// index is one named index: a bucket per value.
type index[T metav1.Object] struct {
	name    string
	fn      IndexFunc[T]
	buckets map[string]*bucket[T]
}

// IndexFuncError reports an index function that panicked. The object is
// stored without values for that index.
type IndexFuncError struct {
	Index string
	Key   Key
	Value any
	Stack []byte
}

func (e *IndexFuncError) Error() string {
	return fmt.Sprintf("index %q panicked on %s: %v", e.Index, e.Key, e.Value)
}

// values calls the index function, turning a panic into an error.
func (ix *index[T]) values(obj T, key Key) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, &IndexFuncError{Index: ix.name, Key: key, Value: r, Stack: debug.Stack()}
		}
	}()
	return ix.fn(obj), nil
}

// add puts e into the bucket of every distinct value in vals.
func (ix *index[T]) add(e *entry[T], vals []string) {
	for i, v := range vals {
		if contains(vals[:i], v) {
			continue
		}
		b := ix.buckets[v]
		if b == nil {
			b = &bucket[T]{ix: ix, value: v}
			ix.buckets[v] = b
		}
		e.addIndexSlot(slot[T]{b: b, pos: b.add(e)})
	}
}

// sameValues reports whether e sits in exactly the buckets named by vals.
func (ix *index[T]) sameValues(e *entry[T], vals []string) bool {
	n := 0
	for _, s := range e.indexSlots() {
		if s.b.ix != ix {
			continue
		}
		if !contains(vals, s.b.value) {
			return false
		}
		n++
	}
	distinct := 0
	for i, v := range vals {
		if !contains(vals[:i], v) {
			distinct++
		}
	}
	return n == distinct
}

func contains(vals []string, v string) bool {
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}
