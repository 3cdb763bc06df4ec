package dispatch

import "sync/atomic"

// marker is the kind of the notification Mark queues: it is not delivered
// and does not count in the backlog.
const marker Kind = Synced + 1

// regular reports whether k is an event delivered to the handler: not a
// slot emptied by merging (0), not Synced, not a marker.
func (k Kind) regular() bool { return k >= Add && k < Synced }

// Mark is a place in a listener's queue; see Listener.Mark.
type Mark struct {
	done    chan struct{}
	reached atomic.Bool
}

// Done is closed when the worker reaches the mark, or when the listener
// stops before it does.
func (m *Mark) Done() <-chan struct{} { return m.done }

// Reached reports, once Done is closed, whether the worker reached the
// mark: every notification queued before it was delivered (or merged into
// a later one that was). False means the listener stopped first.
func (m *Mark) Reached() bool { return m.reached.Load() }

// Mark queues a mark behind the notifications queued so far and returns
// it. It costs a queue slot for as long as the mark waits, and nothing
// to the notifications around it: a producer that wants to know when the
// handler has caught up with a point of its stream asks for a mark then.
// A stopped listener returns a mark that is done and not reached.
func (l *Listener[T]) Mark() *Mark {
	m := &Mark{done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		close(m.done)
		return m
	}
	l.pending = append(l.pending, Notification[T]{Kind: marker})
	l.marks = append(l.marks, m)
	wake := l.idle
	l.idle = false
	l.mu.Unlock()
	if wake {
		l.Wake()
	}
	return m
}

// reachMark marks the oldest waiting mark reached: the worker has come to
// it. Marks are queued in the order of their notifications.
func (l *Listener[T]) reachMark() {
	l.mu.Lock()
	if len(l.marks) == 0 { // dropped by Stop meanwhile
		l.mu.Unlock()
		return
	}
	m := l.marks[0]
	l.marks[0] = nil
	l.marks = l.marks[1:]
	l.mu.Unlock()
	m.reached.Store(true)
	close(m.done)
}

// dropMarksLocked closes the marks still waiting, not reached; l.mu is
// held.
func (l *Listener[T]) dropMarksLocked() {
	for i, m := range l.marks {
		close(m.done)
		l.marks[i] = nil
	}
	l.marks = nil
}
