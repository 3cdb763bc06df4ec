package store

// bucket holds the objects that share one index value (or all objects).
// objs and entries are parallel: entries[i] is the entry whose object is
// objs[i], so a removal can move the last element into the hole and tell
// that element's entry its new position.
type bucket[T any] struct {
	ix      *index[T] // nil for the all-objects and namespace buckets
	value   string
	objs    []T
	entries []*entry[T]
}

// slot records that an entry sits in bucket b at position pos.
type slot[T any] struct {
	b   *bucket[T]
	pos int
}

// add appends e's object and returns its position.
func (b *bucket[T]) add(e *entry[T]) int {
	b.objs = append(b.objs, e.obj)
	b.entries = append(b.entries, e)
	return len(b.objs) - 1
}

// remove takes out the element at pos by moving the last element into it.
func (b *bucket[T]) remove(pos int) {
	last := len(b.objs) - 1
	if pos != last {
		moved := b.entries[last]
		b.objs[pos] = b.objs[last]
		b.entries[pos] = moved
		moved.setPos(b, pos)
	}
	var zero T
	b.objs[last] = zero
	b.entries[last] = nil
	b.objs = b.objs[:last]
	b.entries = b.entries[:last]
	// Give memory back after mass deletions instead of pinning the peak.
	if c := cap(b.objs); c > 64 && len(b.objs) < c/4 {
		b.objs = append(make([]T, 0, c/2), b.objs...)
		b.entries = append(make([]*entry[T], 0, c/2), b.entries...)
	}
}

// len returns the number of objects in the bucket.
func (b *bucket[T]) len() int { return len(b.objs) }
