package dispatch

// merged says how a notification combines with the one queued before it
// for the same key.
type merged uint8

const (
	// mergedInto: the queued notification now carries both.
	mergedInto merged = iota
	// mergedAway: the two cancel out (an add, then its delete).
	mergedAway
	// mergedAfter: both must be delivered, the new one after (a delete,
	// then an add of the same name).
	mergedAfter
)

// merge combines next into queued, two notifications for one key, queued
// in that order, so that the handler ends in the same state as if it had
// been delivered both: updates fold into the add or update before them, a
// delete replaces the update before it and cancels the add before it. A
// delete followed by an add stays two notifications: the object was
// replaced, which the handler may need to see.
func merge[T any](queued *Notification[T], next Notification[T]) merged {
	switch {
	case queued.Kind == Add && next.Kind == Update:
		queued.New = next.New
	case queued.Kind == Add && next.Kind == Add:
		queued.New = next.New
		queued.InitialList = queued.InitialList || next.InitialList
	case queued.Kind == Add && next.Kind == Delete:
		return mergedAway
	case queued.Kind == Update && next.Kind == Update:
		queued.New = next.New
	case queued.Kind == Update && next.Kind == Delete:
		*queued = next
	default:
		return mergedAfter
	}
	return mergedInto
}

// subject returns the object n is about: the new state, or, for a delete,
// the final one.
func subject[T any](n Notification[T]) T {
	if n.Kind == Delete {
		return n.Old
	}
	return n.New
}

// compactAbove is the number of cancelled slots in a merging queue above
// which, if they are half of it, the queue is compacted.
const compactAbove = 64

// queueMerged queues n into a merging queue; l.mu is held. It reports
// whether n took a new slot.
func (l *Listener[T]) queueMerged(n Notification[T]) bool {
	key := l.cfg.KeyOf(subject(n))
	i, ok := l.index[key]
	if !ok {
		l.index[key] = len(l.pending)
		l.pending = append(l.pending, n)
		return true
	}
	switch merge(&l.pending[i], n) {
	case mergedInto:
		return false
	case mergedAway:
		l.pending[i] = Notification[T]{} // a cancelled slot, skipped
		delete(l.index, key)
		l.cancelled++
		l.delivered.Add(1)
		if l.cancelled > compactAbove && l.cancelled > (len(l.pending)-l.head)/2 {
			l.compact()
		}
		return false
	}
	l.index[key] = len(l.pending)
	l.pending = append(l.pending, n)
	return true
}

// waitingLocked reports whether notifications wait; l.mu is held. In a
// merging queue it first moves past the cancelled slots at its head.
func (l *Listener[T]) waitingLocked() bool {
	if l.cfg.KeyOf != nil {
		for l.head < len(l.pending) && l.pending[l.head].Kind == 0 {
			l.head++
			l.cancelled--
		}
		if l.head == len(l.pending) {
			l.pending, l.head, l.cancelled = l.pending[:0], 0, 0
		}
	}
	return len(l.pending) > l.head
}

// takeMergedLocked takes the first notification of a merging queue, which
// waitingLocked found there, as a batch of one; l.mu is held. What remains can still
// merge, so the queue holds at most two notifications per key.
func (l *Listener[T]) takeMergedLocked() []Notification[T] {
	n := l.pending[l.head]
	l.pending[l.head] = Notification[T]{}
	if n.Kind.regular() {
		if key := l.cfg.KeyOf(subject(n)); l.index[key] == l.head {
			delete(l.index, key)
		}
	}
	l.head++
	switch {
	case l.head == len(l.pending):
		l.pending, l.head, l.cancelled = l.pending[:0], 0, 0
	case l.head > compactAbove && l.head > len(l.pending)/2:
		l.compact()
	}
	if l.one == nil {
		l.one = make([]Notification[T], 1)
	}
	l.one[0] = n
	return l.one
}

// compact moves the live notifications of a merging queue to the front of
// pending, dropping the slots taken or cancelled, and re-indexes them;
// l.mu is held.
func (l *Listener[T]) compact() {
	live := l.pending[:0]
	for _, n := range l.pending[l.head:] {
		if n.Kind != 0 {
			live = append(live, n)
		}
	}
	clear(l.pending[len(live):])
	l.pending, l.head, l.cancelled = live, 0, 0
	clear(l.index)
	for i, n := range live {
		if n.Kind.regular() {
			l.index[l.cfg.KeyOf(subject(n))] = i
		}
	}
}
