package syncwait

import (
	"slices"
	"sync"
)

// All returns a channel closed once done(x) is closed for every x of xs,
// and left open if ended(x) is closed first for one of them. It starts a
// goroutine only if one of xs is not done yet, and that goroutine ends
// once all are done or one has ended.
func All[S any](xs []S, done, ended func(S) <-chan struct{}) <-chan struct{} {
	first := slices.IndexFunc(xs, func(x S) bool { return !isClosed(done(x)) })
	if first < 0 {
		return closed
	}
	out := make(chan struct{})
	go func() {
		for _, x := range xs[first:] {
			select {
			case <-done(x):
			case <-ended(x):
				return
			}
		}
		close(out)
	}()
	return out
}

// Memo keeps the channel that All made for the syncers last asked about,
// so that asking again about the same ones, in the same order, makes no
// channel and starts no goroutine. The zero Memo is ready for use; it is
// safe for concurrent use.
type Memo[S comparable] struct {
	mu sync.Mutex
	of []S
	ch <-chan struct{}
}

// Get returns the channel of xs: the one made last if xs holds the same
// syncers as then, in the same order, and otherwise the one all makes.
func (m *Memo[S]) Get(xs []S, all func([]S) <-chan struct{}) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ch == nil || !slices.Equal(m.of, xs) {
		m.of, m.ch = slices.Clone(xs), all(xs)
	}
	return m.ch
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// closed is a closed channel.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
