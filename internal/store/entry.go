package store

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// item is a key's value in the store's map: the object beside its entry, so
// a Get reads the object without chasing the entry.
type item[T metav1.Object] struct {
	obj T
	e   *entry[T]
}

// entry is one cached object and where it sits: its position in the
// all-objects bucket, its namespace bucket and position there, and the
// custom index buckets, which an entry of a store without custom indexes
// has none of. Its key is its object's (KeyOf), which the entry does not
// keep again. An entry without custom index slots takes 80 bytes.
type entry[T metav1.Object] struct {
	obj    T
	v      Version // as the server sent it, before any transform
	gen    uint64
	ns     *bucket[T]
	allPos int
	nsPos  int
	ix     *indexSlots[T] // nil until the entry sits in a custom index bucket
}

// indexSlots holds the custom index buckets an entry sits in, grouped by
// index in no fixed order.
type indexSlots[T metav1.Object] struct {
	slots  []slot[T]
	inline [1]slot[T] // backing array for slots, so one index needs one allocation
}

// indexSlots returns the custom index buckets the entry sits in.
func (e *entry[T]) indexSlots() []slot[T] {
	if e.ix == nil {
		return nil
	}
	return e.ix.slots
}

// addIndexSlot records that the entry sits in a custom index bucket.
func (e *entry[T]) addIndexSlot(s slot[T]) {
	if e.ix == nil {
		e.ix = &indexSlots[T]{}
		e.ix.slots = e.ix.inline[:0]
	}
	e.ix.slots = append(e.ix.slots, s)
}

// posIn returns where the entry records its position in bucket b, or nil
// if b does not hold it; all is the all-objects bucket.
func (e *entry[T]) posIn(b, all *bucket[T]) *int {
	switch {
	case b == all:
		return &e.allPos
	case b == e.ns:
		return &e.nsPos
	case b.ix == nil:
		return nil
	}
	for i := range e.indexSlots() {
		if e.ix.slots[i].b == b {
			return &e.ix.slots[i].pos
		}
	}
	return nil
}

// holds reports whether the entry records position pos in bucket b; all
// is the all-objects bucket.
func (e *entry[T]) holds(b *bucket[T], pos int, all *bucket[T]) bool {
	p := e.posIn(b, all)
	return p != nil && *p == pos
}

// setObj replaces the object in every bucket the entry sits in; all is the
// all-objects bucket.
func (e *entry[T]) setObj(obj T, all *bucket[T]) {
	e.obj = obj
	all.objs[e.allPos] = obj
	e.ns.objs[e.nsPos] = obj
	for _, s := range e.indexSlots() {
		s.b.objs[s.pos] = obj
	}
}
