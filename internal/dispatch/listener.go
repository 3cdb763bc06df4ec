// Package dispatch delivers notifications to one handler on its own
// goroutine, so that a slow or stuck handler delays nobody else.
//
// A Listener's queue is a slice of notification values, swapped with a
// spare slice by the worker: pushing and delivering allocate nothing once
// the slices have grown to the backlog's size.
package dispatch

import (
	"context"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Kind says what a notification reports.
type Kind uint8

// The notification kinds.
const (
	Add Kind = iota + 1
	Update
	Delete
	// Synced marks the end of the initial state: when the worker reaches
	// it, the listener has delivered everything the informer had at sync.
	Synced
)

// Notification is one event for one handler.
type Notification[T any] struct {
	Old, New T
	Kind     Kind
	// InitialList marks an Add of the informer's initial state, or of the
	// cache's contents replayed to a handler added late.
	InitialList bool
	// FinalStateUnknown marks a Delete found by a relist rather than seen
	// on the watch: Old is the last state the cache held.
	FinalStateUnknown bool
	// LeftShard marks a Delete of an object that left the informer's
	// shard: it still exists on the server.
	LeftShard bool
	// LeftNamespace marks a Delete of an object whose namespace left the
	// informer's namespace selection: it still exists on the server.
	LeftNamespace bool
}

// shrinkAbove is the queue capacity above which a mostly idle queue gives
// its memory back after a backlog has been delivered.
const shrinkAbove = 1024

// The bits of Listener.state.
const (
	stateStopped    uint32 = 1 << iota // Stop was called
	stateInCall                        // the worker is in a call of the handler
	stateOverflowed                    // the queue went over its limit
)

// Listener queues notifications for one handler and delivers them in order
// on its own goroutine. The zero value is not usable; call New.
type Listener[T any] struct {
	cfg Config[T] // its Clock set

	mu      sync.Mutex
	pending []Notification[T]
	spare   []Notification[T]
	idle    bool // the worker waits on wake
	closed  bool // Stop was called
	// A merging queue is pending[head:]: the worker takes one notification
	// at a time, so that the others can still merge. index holds the
	// position in pending of the last notification queued for each key;
	// cancelled counts the slots of pending[head:] emptied by merging.
	head      int
	index     map[types.NamespacedName]int
	cancelled int
	one       []Notification[T] // the worker's batch of one
	// marks are the marks waiting in pending, in queue order.
	marks []*Mark
	// queued counts the notifications ever queued, under mu.
	queued atomic.Int64

	// The producer writes the fields above for every notification, the
	// worker those below for every call: on cache lines of their own, the
	// two do not take the lines from each other at every event.
	_ [64]byte
	// state holds stateStopped and stateInCall. The worker sets
	// stateInCall only while stateStopped is clear, with one compare and
	// swap: so once Stop has set stateStopped, no call begins.
	state atomic.Uint32
	// delivered counts the notifications delivered or dropped.
	delivered atomic.Int64
	_         [64]byte

	wake     chan struct{}
	stopping chan struct{} // closed by Stop
	done     chan struct{}
	doneOnce sync.Once
	started  atomic.Bool
	synced   chan struct{}
}

// Config describes a listener.
type Config[T any] struct {
	// Deliver calls the handler.
	Deliver func(Notification[T])
	// OnPanic is told when Deliver panics; the worker goes on with the
	// next notification.
	OnPanic func(n Notification[T], value any, stack []byte)
	// Resync, if positive, is how often to replay the cache as updates.
	Resync time.Duration
	// OnResync queues the replay; it is called on the worker goroutine.
	OnResync func(*Listener[T])
	// Clock times resyncs; nil means the real clock.
	Clock clock.Clock
	// KeyOf, if set, names the object a notification is about, and makes
	// the queue merge the notifications for one key that wait there (see
	// merge): the backlog is bounded by the number of keys, not events.
	// Notifications for different keys may then be delivered in another
	// order than queued; those for one key stay in order.
	KeyOf func(T) types.NamespacedName
	// Limit, if positive, is how many notifications may wait. Queueing one
	// more stops the listener, as Stop does, and calls OnOverflow on a
	// goroutine of its own.
	Limit      int
	OnOverflow func()
	// Observe, if set, is told of each delivered notification how long
	// the handler took.
	Observe func(Kind, time.Duration)
}

// New returns a listener; Run delivers its notifications.
func New[T any](cfg Config[T]) *Listener[T] {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	l := &Listener[T]{
		cfg:      cfg,
		wake:     make(chan struct{}, 1),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		synced:   make(chan struct{}),
	}
	if l.cfg.KeyOf != nil {
		l.index = make(map[types.NamespacedName]int)
	}
	return l
}

// Push queues n and wakes the worker if it waits. It never blocks on the
// handler.
func (l *Listener[T]) Push(n Notification[T]) {
	if l.Queue(n) {
		l.Wake()
	}
}

// Queue queues n without waking the worker. It reports whether the worker
// waits and must be woken with Wake; until then it does not see n. A
// producer with a burst of notifications queues them all and wakes each
// worker once at the end, instead of once per notification.
func (l *Listener[T]) Queue(n Notification[T]) (wake bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	// The Synced marker is no event: it neither counts against the limit
	// nor in the backlog.
	regular := n.Kind.regular()
	if regular && l.cfg.Limit > 0 && l.Backlog() >= l.cfg.Limit && !l.mergesInto(n) {
		l.overflowLocked()
		l.mu.Unlock()
		return false
	}
	if l.cfg.KeyOf == nil || !regular {
		l.pending = append(l.pending, n)
	} else if !l.queueMerged(n) {
		l.mu.Unlock()
		return false // merged into a waiting notification
	}
	if regular {
		// Counted under the lock: the worker, which takes the batch under
		// it, never counts as delivered a notification not yet counted as
		// queued.
		l.queued.Add(1)
	}
	wake = l.idle
	l.idle = false
	l.mu.Unlock()
	return wake
}

// mergesInto reports whether n would merge into a waiting notification
// rather than take a slot of its own; l.mu is held.
func (l *Listener[T]) mergesInto(n Notification[T]) bool {
	if l.cfg.KeyOf == nil || n.Kind == Synced {
		return false
	}
	i, ok := l.index[l.cfg.KeyOf(subject(n))]
	if !ok {
		return false
	}
	probe := l.pending[i]
	return merge(&probe, n) != mergedAfter
}

// overflowLocked stops the listener, whose queue is full, and has
// OnOverflow told; l.mu is held.
func (l *Listener[T]) overflowLocked() {
	if l.Stopped() {
		return
	}
	// Before the stop, so that whoever sees the listener done sees why.
	l.state.Or(stateOverflowed)
	l.stopLocked()
	if l.cfg.OnOverflow != nil {
		go l.cfg.OnOverflow()
	}
}

// Wake wakes the worker.
func (l *Listener[T]) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Backlog returns how many notifications are queued or being delivered.
func (l *Listener[T]) Backlog() int {
	delivered := l.delivered.Load() // first: queued only grows past it
	return int(l.queued.Load() - delivered)
}

// HasSynced reports whether the listener has delivered the informer's
// initial state.
func (l *Listener[T]) HasSynced() bool {
	select {
	case <-l.synced:
		return true
	default:
		return false
	}
}

// Synced is closed once the listener has delivered the initial state.
func (l *Listener[T]) Synced() <-chan struct{} { return l.synced }

// Stop drops the queue. No call of the handler begins after Stop returns;
// one that began before runs to its end (InCall reports it), and Done is
// closed once it has.
func (l *Listener[T]) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopLocked()
}

// stopLocked stops the listener, if it was not, and reports whether it
// did; l.mu is held.
func (l *Listener[T]) stopLocked() bool {
	if l.state.Or(stateStopped)&stateStopped != 0 {
		return false
	}
	l.closed = true
	close(l.stopping)
	if !l.started.Load() {
		// Run never started, and will not deliver if it does.
		l.doneOnce.Do(func() { close(l.done) })
	}
	l.delivered.Add(int64(live(l.pending[l.head:])))
	l.dropMarksLocked()
	clear(l.pending)
	l.pending = l.pending[:0]
	l.head = 0
	clear(l.index)
	l.cancelled = 0
	l.Wake()
	return true
}

// live counts the events of q that merging did not cancel, the Synced
// marker and marks aside.
func live[T any](q []Notification[T]) int {
	n := 0
	for i := range q {
		if q[i].Kind.regular() {
			n++
		}
	}
	return n
}

// Overflowed reports whether the listener stopped because its queue went
// over its limit. It is true before Done is closed.
func (l *Listener[T]) Overflowed() bool { return l.state.Load()&stateOverflowed != 0 }

// Stopped reports whether Stop was called.
func (l *Listener[T]) Stopped() bool { return l.state.Load()&stateStopped != 0 }

// Stopping is closed once Stop is called: from then on HasSynced does not
// change, while a call in progress may still run (see Done).
func (l *Listener[T]) Stopping() <-chan struct{} { return l.stopping }

// InCall reports whether a call of the handler is in progress.
func (l *Listener[T]) InCall() bool { return l.state.Load()&stateInCall != 0 }

// Done is closed when Run has returned: no delivery is in progress and none
// will start.
func (l *Listener[T]) Done() <-chan struct{} { return l.done }

// Run delivers notifications until Stop is called or ctx ends. It runs at
// most once; a listener stopped before Run never delivers. When ctx ends,
// the listener stops as Stop does: what is queued is dropped, resync ends,
// and no call begins, so Run returns once a call in progress has.
func (l *Listener[T]) Run(ctx context.Context) {
	if l.started.Swap(true) {
		return
	}
	defer l.doneOnce.Do(func() { close(l.done) })
	defer l.Stop()
	defer context.AfterFunc(ctx, l.Stop)()
	var resync <-chan time.Time
	var timer clock.Timer
	if l.cfg.Resync > 0 {
		timer = l.cfg.Clock.NewTimer(jittered(l.cfg.Resync))
		defer timer.Stop()
		resync = timer.C()
	}
	for {
		select {
		case <-resync: // checked here too, so a busy queue does not starve it
			l.resyncNow(timer)
		default:
		}
		batch, ok := l.next(ctx, resync)
		if !ok {
			return
		}
		if batch == nil {
			l.resyncNow(timer)
			continue
		}
		if !l.deliverBatch(ctx.Done(), batch) {
			return
		}
		if l.cfg.KeyOf == nil {
			l.recycle(batch)
		}
	}
}

// deliverBatch delivers batch, skipping the slots merging cancelled, and
// reports false if the listener was stopped meanwhile, or stops it and
// reports false once ending is closed: Run's context ended, and
// context.AfterFunc may not have stopped the listener yet.
func (l *Listener[T]) deliverBatch(ending <-chan struct{}, batch []Notification[T]) bool {
	var start time.Time
	if l.cfg.Observe != nil {
		start = time.Now()
	}
	for i := range batch {
		kind := batch[i].Kind
		if kind == 0 {
			continue
		}
		if kind == marker {
			l.reachMark()
			continue
		}
		select {
		case <-ending:
			l.Stop()
		default:
		}
		if kind == Synced {
			l.reachSynced()
			continue
		}
		if !l.enterCall() {
			l.delivered.Add(int64(live(batch[i:])))
			return false
		}
		l.call(batch[i])
		l.state.And(^stateInCall)
		l.delivered.Add(1)
		if l.cfg.Observe != nil {
			// One clock read per call: each call ends where the next
			// begins.
			end := time.Now()
			l.cfg.Observe(kind, end.Sub(start))
			start = end
		}
	}
	return true
}

// enterCall marks a call in progress, unless Stop was called.
func (l *Listener[T]) enterCall() bool {
	for {
		s := l.state.Load()
		if s&stateStopped != 0 {
			return false
		}
		if l.state.CompareAndSwap(s, s|stateInCall) {
			return true
		}
	}
}

// resyncNow queues a replay of the cache, once the initial state has been
// delivered, and rearms the timer.
func (l *Listener[T]) resyncNow(timer clock.Timer) {
	if l.HasSynced() {
		l.cfg.OnResync(l)
	}
	timer.Reset(jittered(l.cfg.Resync))
}

// jittered returns d shortened or lengthened by up to a tenth, so that the
// resyncs of many handlers do not fire together.
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + rand.Float64()/5))
}

// next waits for queued notifications and takes them all. It returns a nil
// batch when the resync timer fires and false when the listener must end.
func (l *Listener[T]) next(ctx context.Context, resync <-chan time.Time) ([]Notification[T], bool) {
	l.mu.Lock()
	for !l.waitingLocked() && !l.closed {
		l.idle = true
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, false
		case <-resync:
			return nil, true
		case <-l.wake:
		}
		l.mu.Lock()
	}
	l.idle = false
	if l.closed {
		l.mu.Unlock()
		return nil, false
	}
	if l.cfg.KeyOf != nil {
		batch := l.takeMergedLocked()
		l.mu.Unlock()
		return batch, true
	}
	batch := l.pending
	l.pending = l.spare[:0]
	l.spare = nil
	l.mu.Unlock()
	return batch, true
}

// recycle keeps a delivered batch's array for reuse, unless it is large and
// the backlog has gone, so that a past spike does not pin memory.
func (l *Listener[T]) recycle(batch []Notification[T]) {
	clear(batch)
	l.mu.Lock()
	defer l.mu.Unlock()
	if cap(batch) > shrinkAbove && len(l.pending) < cap(batch)/4 {
		return
	}
	l.spare = batch[:0]
}

// reachSynced marks the initial state delivered, unless Stop came first:
// once Stop has returned, whether the listener synced is settled.
func (l *Listener[T]) reachSynced() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed && !l.HasSynced() {
		close(l.synced)
	}
}

// call delivers n, recovering a panic of the handler.
func (l *Listener[T]) call(n Notification[T]) {
	defer func() {
		if r := recover(); r != nil {
			l.cfg.OnPanic(n, r, debug.Stack())
		}
	}()
	l.cfg.Deliver(n)
}
