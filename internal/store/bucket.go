package store

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// bucket holds the objects that share one index value (or all objects).
// Each object's entry records its position, so that a removal can move the
// last object into the hole and the store, which finds that object's
// entry by its key, tell it its new position.
type bucket[T metav1.Object] struct {
	ix    *index[T] // nil for the all-objects and namespace buckets
	value string
	objs  []T
}

// slot records that an entry sits in bucket b at position pos.
type slot[T metav1.Object] struct {
	b   *bucket[T]
	pos int
}

// add appends e's object and returns its position.
func (b *bucket[T]) add(e *entry[T]) int {
	b.objs = append(b.objs, e.obj)
	return len(b.objs) - 1
}

// remove takes out the object at pos by moving the last object into it;
// the caller tells that object's entry its new position.
func (b *bucket[T]) remove(pos int) {
	last := len(b.objs) - 1
	b.objs[pos] = b.objs[last]
	var zero T
	b.objs[last] = zero
	b.objs = b.objs[:last]
	// Give memory back after mass deletions instead of pinning the peak.
	if c := cap(b.objs); c > 64 && len(b.objs) < c/4 {
		b.objs = append(make([]T, 0, c/2), b.objs...)
	}
}

// len returns the number of objects in the bucket.
func (b *bucket[T]) len() int { return len(b.objs) }
