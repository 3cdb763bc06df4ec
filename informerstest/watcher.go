package informerstest

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// watcher is a watch.Interface with an unbounded queue, so that a source
// never blocks on a slow consumer, just as a server buffers for a client.
type watcher struct {
	bookmarks bool
	result    chan watch.Event
	stopped   chan struct{}
	stopOnce  sync.Once

	mu     sync.Mutex
	queue  []watch.Event
	closed bool // no more events will be queued
	held   bool // events are queued but not sent
	wake   chan struct{}
}

func newWatcher(ctx context.Context, bookmarks bool) *watcher {
	w := &watcher{
		bookmarks: bookmarks,
		result:    make(chan watch.Event),
		stopped:   make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	go w.forward(ctx)
	return w
}

// send queues ev; it never blocks.
func (w *watcher) send(ev watch.Event) {
	w.mu.Lock()
	if !w.closed {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	w.signal()
}

// signal wakes forward.
func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// hold holds back the events, or sends them again.
func (w *watcher) hold(held bool) {
	w.mu.Lock()
	w.held = held
	w.mu.Unlock()
	w.signal()
}

// close ends the stream after the queued events.

func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
}

// forward moves queued events to the result channel until the stream is
// closed and drained, the consumer stops, or ctx ends.
func (w *watcher) forward(ctx context.Context) {
	defer close(w.result)
	defer w.Stop()
	for {
		w.mu.Lock()
		queue, closed := w.queue, w.closed
		if w.held {
			queue, closed = nil, false
		} else {
			w.queue = nil
		}
		w.mu.Unlock()
		for _, ev := range queue {
			select {
			case w.result <- ev:
			case <-w.stopped:
				return
			case <-ctx.Done():
				return
			}
		}
		if len(queue) > 0 {
			continue
		}
		if closed {
			return
		}
		select {
		case <-w.wake:
		case <-w.stopped:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Stop ends the watch.
func (w *watcher) Stop() { w.stopOnce.Do(func() { close(w.stopped) }) }

// ResultChan returns the events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }
