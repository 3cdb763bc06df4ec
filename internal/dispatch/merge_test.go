package dispatch

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// version is an object of a merging test: a key and a version.
type version struct {
	key string
	v   int
}

func keyOfVersion(o version) types.NamespacedName { return types.NamespacedName{Name: o.key} }

// follower is a handler that keeps the state its notifications describe
// and fails the test on a notification that does not fit that state.
type follower struct {
	t       *testing.T
	release chan struct{} // closed to let the first call return
	once    sync.Once
	mu      sync.Mutex
	state   map[string]int
	calls   int
}

func (f *follower) deliver(n Notification[version]) {
	f.once.Do(func() { <-f.release })
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	switch n.Kind {
	case Add:
		_, known := f.state[n.New.key]
		assert.False(f.t, known, "add of %s, which the handler has", n.New.key)
		f.state[n.New.key] = n.New.v
	case Update:
		cur, known := f.state[n.New.key]
		assert.True(f.t, known, "update of %s, which the handler does not have", n.New.key)
		assert.Equal(f.t, cur, n.Old.v, "update of %s from a version the handler does not have", n.New.key)
		f.state[n.New.key] = n.New.v
	case Delete:
		_, known := f.state[n.Old.key]
		assert.True(f.t, known, "delete of %s, which the handler does not have", n.Old.key)
		delete(f.state, n.Old.key)
	}
}

func (f *follower) snapshot() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.state)
}

// TestMergingQueueEndsInTheCacheState drives a merging listener, whose
// handler is stuck for the first part of each sequence, with random adds,
// updates, deletes, recreations and resyncs of a few keys, as an informer
// would: every notification the handler gets fits the state it has, it
// ends in the cache's state, and the backlog never exceeds two
// notifications per key.
func TestMergingQueueEndsInTheCacheState(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			keys := 1 + rng.IntN(8)
			f := &follower{t: t, release: make(chan struct{}), state: map[string]int{}}
			l := New(Config[version]{Deliver: f.deliver, KeyOf: keyOfVersion})
			ctx, cancel := context.WithCancel(context.Background())
			released := false
			defer func() {
				if !released {
					close(f.release)
				}
				cancel()
				<-l.Done()
			}()
			go l.Run(ctx)

			cache := map[string]int{}
			next := 0
			steps := 1 + rng.IntN(400)
			releaseAt := rng.IntN(steps)
			for step := range steps {
				if step == releaseAt {
					close(f.release)
					released = true
				}
				key := fmt.Sprint("k", rng.IntN(keys))
				cur, exists := cache[key]
				next++
				switch op := rng.IntN(10); {
				case !exists:
					cache[key] = next
					l.Push(Notification[version]{Kind: Add, New: version{key, next}})
				case op < 5:
					cache[key] = next
					l.Push(Notification[version]{Kind: Update, Old: version{key, cur}, New: version{key, next}})
				case op < 6: // resync
					l.Push(Notification[version]{Kind: Update, Old: version{key, cur}, New: version{key, cur}})
				case op < 8:
					delete(cache, key)
					l.Push(Notification[version]{Kind: Delete, Old: version{key, cur}, FinalStateUnknown: op == 7})
				default: // replaced under the same name
					cache[key] = next
					l.Push(Notification[version]{Kind: Delete, Old: version{key, cur}, FinalStateUnknown: true})
					l.Push(Notification[version]{Kind: Add, New: version{key, next}})
				}
				require.LessOrEqual(t, l.Backlog(), 2*keys+1, "backlog") // one being delivered
			}
			require.Eventually(t, func() bool { return l.Backlog() == 0 }, 10*time.Second, time.Millisecond)
			assert.Equal(t, cache, f.snapshot())
		})
	}
}

// TestMergingQueueCoalesces checks the rules one by one.
func TestMergingQueueCoalesces(t *testing.T) {
	a := func(v int) Notification[version] { return Notification[version]{Kind: Add, New: version{"k", v}} }
	u := func(o, v int) Notification[version] {
		return Notification[version]{Kind: Update, Old: version{"k", o}, New: version{"k", v}}
	}
	d := func(v int) Notification[version] { return Notification[version]{Kind: Delete, Old: version{"k", v}} }
	for _, tc := range []struct {
		name string
		in   []Notification[version]
		want []Notification[version]
	}{
		{"updates fold into the add", []Notification[version]{a(1), u(1, 2), u(2, 3)}, []Notification[version]{a(3)}},
		{"updates fold together", []Notification[version]{u(1, 2), u(2, 3)}, []Notification[version]{u(1, 3)}},
		{"a delete replaces updates", []Notification[version]{u(1, 2), d(2)}, []Notification[version]{d(2)}},
		{"a delete cancels the add", []Notification[version]{a(1), u(1, 2), d(2)}, nil},
		{"a recreation stays two", []Notification[version]{d(1), a(2), u(2, 3)}, []Notification[version]{d(1), a(3)}},
		{"a recreation deleted again", []Notification[version]{d(1), a(2), d(2)}, []Notification[version]{d(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Notification[version]
			l := New(Config[version]{Deliver: func(n Notification[version]) { got = append(got, n) }, KeyOf: keyOfVersion})
			for _, n := range tc.in {
				l.Queue(n)
			}
			assert.Equal(t, len(tc.want), l.Backlog())
			ctx, cancel := context.WithCancel(context.Background())
			go l.Run(ctx)
			require.Eventually(t, func() bool { return l.Backlog() == 0 }, 10*time.Second, time.Millisecond)
			cancel()
			<-l.Done()
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestQueueLimitStopsTheListener fills a bounded queue behind a stuck
// handler: the notification over the limit stops the listener and calls
// OnOverflow, while one that merges into a waiting one does not count.
func TestQueueLimitStopsTheListener(t *testing.T) {
	release := make(chan struct{})
	overflowed := make(chan struct{})
	l := New(Config[version]{
		Deliver:    func(Notification[version]) { <-release },
		KeyOf:      keyOfVersion,
		Limit:      3,
		OnOverflow: func() { close(overflowed) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-l.Done() }()
	go l.Run(ctx)
	add := func(k string) Notification[version] { return Notification[version]{Kind: Add, New: version{k, 1}} }
	l.Push(add("a"))
	require.Eventually(t, l.InCall, 10*time.Second, time.Millisecond) // a is being delivered
	l.Push(add("b"))
	l.Push(add("c"))
	l.Push(Notification[version]{Kind: Update, Old: version{"b", 1}, New: version{"b", 2}}) // merges
	assert.Equal(t, 3, l.Backlog())
	assert.False(t, l.Stopped())
	l.Push(add("d"))
	<-overflowed
	assert.True(t, l.Stopped())
	close(release)
	<-l.Done()
	assert.Equal(t, 0, l.Backlog())
}

// TestObserveTimesEachCall checks that Observe hears of every delivered
// notification, with its kind, and not of the synced marker.
func TestObserveTimesEachCall(t *testing.T) {
	var mu sync.Mutex
	kinds := map[Kind]int{}
	l := New(Config[int]{
		Deliver: func(Notification[int]) {},
		Observe: func(k Kind, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			assert.GreaterOrEqual(t, d, time.Duration(0))
			kinds[k]++
		},
	})
	run(t, l)
	l.Push(Notification[int]{Kind: Add})
	l.Push(Notification[int]{Kind: Synced})
	l.Push(Notification[int]{Kind: Update})
	l.Push(Notification[int]{Kind: Update})
	l.Push(Notification[int]{Kind: Delete})
	waitFor(t, func() bool { return l.Backlog() == 0 })
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[Kind]int{Add: 1, Update: 2, Delete: 1}, kinds)
}
