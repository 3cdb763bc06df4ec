package dispatch

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run starts l and stops it at the end of the test.
func run(t *testing.T, l *Listener[int]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	t.Cleanup(func() {
		cancel()
		<-l.Done()
	})
}

type sink struct {
	mu  sync.Mutex
	got []int
}

func (s *sink) deliver(n Notification[int]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, n.New)
}

func (s *sink) values() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.got...)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond)
}

func TestDeliversInOrder(t *testing.T) {
	s := &sink{}
	l := New(Config[int]{Deliver: s.deliver})
	run(t, l)
	var want []int
	for i := range 10_000 {
		if i%100 == 0 {
			// Queue without waking, then wake: a burst.
			for j := range 10 {
				if l.Queue(Notification[int]{Kind: Add, New: i*10 + j}) {
					defer l.Wake()
				}
				want = append(want, i*10+j)
			}
			l.Wake()
			continue
		}
		l.Push(Notification[int]{Kind: Add, New: i * 10})
		want = append(want, i*10)
	}
	waitFor(t, func() bool { return len(s.values()) == len(want) })
	assert.Equal(t, want, s.values())
	waitFor(t, func() bool { return l.Backlog() == 0 })
}

func TestSyncedMarker(t *testing.T) {
	block := make(chan struct{})
	l := New(Config[int]{Deliver: func(Notification[int]) { <-block }})
	run(t, l)
	l.Push(Notification[int]{Kind: Add, New: 1})
	l.Push(Notification[int]{Kind: Synced})
	assert.False(t, l.HasSynced(), "the add before the marker is not delivered yet")
	close(block)
	select {
	case <-l.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("never synced")
	}
	assert.True(t, l.HasSynced())
}

func TestStopDropsQueueAndEnds(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	l := New(Config[int]{Deliver: func(Notification[int]) {
		calls++
		if calls == 1 {
			close(entered)
			<-release
		}
	}})
	run(t, l)
	for i := range 100 {
		l.Push(Notification[int]{Kind: Add, New: i})
	}
	<-entered
	assert.Equal(t, 100, l.Backlog())
	l.Stop()
	l.Stop() // twice is fine
	assert.True(t, l.Stopped())
	select {
	case <-l.Done():
		t.Fatal("done while a call is in progress")
	default:
	}
	close(release)
	<-l.Done()
	assert.Equal(t, 1, calls, "nothing delivered after Stop")
	assert.Zero(t, l.Backlog())
	l.Push(Notification[int]{Kind: Add}) // ignored
	assert.Zero(t, l.Backlog())
}

// Stop during a call settles the sync at once: Stopping closes while the
// call still runs, and the marker queued behind it is never reached.
func TestStopSettlesSyncDuringCall(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	l := New(Config[int]{Deliver: func(Notification[int]) {
		close(entered)
		<-release
	}})
	run(t, l)
	l.Push(Notification[int]{Kind: Add, New: 1})
	l.Push(Notification[int]{Kind: Synced})
	<-entered
	select {
	case <-l.Stopping():
		t.Fatal("stopping before Stop")
	default:
	}
	l.Stop()
	select {
	case <-l.Stopping():
	default:
		t.Fatal("Stop returned and Stopping is open")
	}
	assert.True(t, l.InCall())
	assert.False(t, l.HasSynced())
	close(release)
	<-l.Done()
	assert.False(t, l.HasSynced(), "the marker behind the call was reached after Stop")
}

func TestStopBeforeRun(t *testing.T) {
	l := New(Config[int]{Deliver: func(Notification[int]) { t.Error("delivered") }})
	l.Push(Notification[int]{Kind: Add})
	l.Stop()
	<-l.Done()
	l.Run(context.Background()) // returns at once
}

func TestPanicIsReportedAndDeliveryGoesOn(t *testing.T) {
	s := &sink{}
	var mu sync.Mutex
	var panics []any
	l := New(Config[int]{
		Deliver: func(n Notification[int]) {
			if n.New == 2 {
				panic("two")
			}
			s.deliver(n)
		},
		OnPanic: func(n Notification[int], v any, stack []byte) {
			mu.Lock()
			defer mu.Unlock()
			panics = append(panics, v)
			assert.Contains(t, string(stack), "TestPanicIsReportedAndDeliveryGoesOn")
		},
	})
	run(t, l)
	for i := range 4 {
		l.Push(Notification[int]{Kind: Add, New: i})
	}
	waitFor(t, func() bool { return len(s.values()) == 3 })
	assert.Equal(t, []int{0, 1, 3}, s.values())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []any{"two"}, panics)
}

func TestResyncOnlyOnceSynced(t *testing.T) {
	s := &sink{}
	resyncs := make(chan struct{}, 100)
	l := New(Config[int]{
		Deliver: s.deliver,
		Resync:  5 * time.Millisecond,
		OnResync: func(l *Listener[int]) {
			l.Push(Notification[int]{Kind: Update, New: -1})
			select {
			case resyncs <- struct{}{}:
			default:
			}
		},
	})
	run(t, l)
	// Not synced: timers fire but no resync happens.
	l.Push(Notification[int]{Kind: Add, New: 7})
	waitFor(t, func() bool { return len(s.values()) == 1 })
	assert.Empty(t, resyncs)
	l.Push(Notification[int]{Kind: Synced})
	<-resyncs
	waitFor(t, func() bool {
		v := s.values()
		return len(v) >= 2 && v[len(v)-1] == -1
	})
}

func TestQueueGivesMemoryBack(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	l := New(Config[int]{Deliver: func(Notification[int]) {
		once.Do(func() { close(entered); <-release })
	}})
	run(t, l)
	l.Push(Notification[int]{Kind: Add})
	<-entered
	for range 100_000 {
		l.Push(Notification[int]{Kind: Add})
	}
	close(release)
	waitFor(t, func() bool { return l.Backlog() == 0 })
	l.Push(Notification[int]{Kind: Add}) // the worker recycles the big batch
	waitFor(t, func() bool { return l.Backlog() == 0 })
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Less(t, cap(l.pending)+cap(l.spare), shrinkAbove, "the backlog's arrays were dropped")
}

// No call of the handler begins after Stop returns, however Stop races with
// the worker; a call that began before may still be running, and InCall
// says so until it ends.
func TestNoCallBeginsAfterStop(t *testing.T) {
	for range 200 {
		var calls atomic.Int64
		l := New(Config[int]{Deliver: func(Notification[int]) { calls.Add(1) }})
		ctx, cancel := context.WithCancel(context.Background())
		go l.Run(ctx)
		for i := range 100 {
			l.Push(Notification[int]{Kind: Add, New: i})
		}
		l.Stop()
		inCall := l.InCall() // read first: a call that ends after it counted itself
		limit := calls.Load()
		if inCall {
			limit++
		}
		<-l.Done()
		cancel()
		require.LessOrEqual(t, calls.Load(), limit, "a call began after Stop returned")
		assert.False(t, l.InCall())
	}
}

// When Run's context ends, the listener stops as Stop does, whatever waits
// in its queue and however often it resyncs: the call in progress
// finishes, no other begins, and Run returns.
func TestContextEndStopsDelivery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		merge  bool
		resync time.Duration
	}{
		{name: "queue"},
		{name: "merging queue", merge: true},
		{name: "queue with resync", resync: time.Millisecond},
		{name: "merging queue with resync", merge: true, resync: time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var calls atomic.Int64
			cfg := Config[int]{
				Deliver: func(Notification[int]) {
					if calls.Add(1) == 1 {
						close(entered)
						<-release
					}
				},
				Resync: tc.resync,
			}
			cfg.OnResync = func(l *Listener[int]) {
				for i := range 20 {
					l.Push(Notification[int]{Kind: Update, New: i})
				}
			}
			if tc.merge {
				cfg.KeyOf = func(i int) types.NamespacedName { return types.NamespacedName{Name: strconv.Itoa(i)} }
			}
			l := New(cfg)
			ctx, cancel := context.WithCancel(context.Background())
			go l.Run(ctx)
			for i := range 2000 {
				l.Push(Notification[int]{Kind: Add, New: i})
			}
			l.Push(Notification[int]{Kind: Synced})
			<-entered
			cancel()
			close(release)
			select {
			case <-l.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("Run did not return; %d calls, backlog %d", calls.Load(), l.Backlog())
			}
			assert.Equal(t, int64(1), calls.Load(), "a call began after the context ended")
			assert.True(t, l.Stopped())
			assert.Zero(t, l.Backlog())
		})
	}
}
