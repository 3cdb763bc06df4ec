package store

// item is a key's value in the store's map: the object beside its entry, so
// a Get reads the object without chasing the entry.
type item[T any] struct {
	obj T
	e   *entry[T]
}

// entry is one cached object and the buckets it sits in.
// slots[0] is the all-objects bucket, slots[1] the namespace bucket, and the
// rest are the custom index buckets, grouped by index in no fixed order.
// Its key is its object's (KeyOf), which the entry does not keep again.
type entry[T any] struct {
	obj    T
	v      Version // as the server sent it, before any transform
	gen    uint64
	slots  []slot[T]
	inline [3]slot[T] // backing array for slots, so most entries need one allocation
}

// slotFor returns the slot of bucket b; b must hold the entry.
func (e *entry[T]) slotFor(b *bucket[T]) *slot[T] {
	for i := range e.slots {
		if e.slots[i].b == b {
			return &e.slots[i]
		}
	}
	panic("store: entry is not in the bucket that holds it")
}

// setObj replaces the object in every bucket the entry sits in.
func (e *entry[T]) setObj(obj T) {
	e.obj = obj
	for _, s := range e.slots {
		s.b.objs[s.pos] = obj
	}
}
