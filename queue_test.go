package informers_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// stateFollower is a handler that keeps the state its events describe,
// blocked until released, and records events that do not fit that state.
type stateFollower struct {
	release     chan struct{}
	once        sync.Once
	releaseOnce sync.Once
	mu          sync.Mutex
	state       map[string]string // key -> resource version
	wrong       []string
}

func newStateFollower() *stateFollower {
	return &stateFollower{release: make(chan struct{}), state: map[string]string{}}
}

func (f *stateFollower) wait() { f.once.Do(func() { <-f.release }) }

// Release lets the follower's events through. Calls after the first do
// nothing, so that a test may defer it and call it too.
func (f *stateFollower) Release() { f.releaseOnce.Do(func() { close(f.release) }) }

func (f *stateFollower) HandleAdd(p *corev1.Pod, _ bool) {
	f.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.state[key(p)]; ok {
		f.wrong = append(f.wrong, "add of known "+key(p))
	}
	f.state[key(p)] = p.ResourceVersion
}

func (f *stateFollower) HandleUpdate(old, p *corev1.Pod) {
	f.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state[key(p)] != old.ResourceVersion {
		f.wrong = append(f.wrong, fmt.Sprintf("update of %s from %s, handler has %q", key(p), old.ResourceVersion, f.state[key(p)]))
	}
	f.state[key(p)] = p.ResourceVersion
}

func (f *stateFollower) HandleDelete(d informers.Deleted[*corev1.Pod]) {
	f.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.state[d.Key.String()]; !ok {
		f.wrong = append(f.wrong, "delete of unknown "+d.Key.String())
	}
	delete(f.state, d.Key.String())
}

func (f *stateFollower) snapshot() (map[string]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.state), slices.Clone(f.wrong)
}

func cacheState(inf *informers.SharedInformer[*corev1.Pod]) map[string]string {
	m := map[string]string{}
	for p := range inf.Lister().All() {
		m[key(p)] = p.ResourceVersion
	}
	return m
}

// TestMergeByKeyEndsInTheCacheState runs random creates, updates, deletes
// and recreations, and relists that find deletions, behind a stuck handler
// with MergeByKey: its backlog stays within two events per object, every
// event it gets fits the state it has, and once released it ends in the
// cache's state, no delete lost.
func TestMergeByKeyEndsInTheCacheState(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			src := newPodSource()
			const objects = 20
			for n := range objects / 2 {
				mustAdd(t, src, pod("ns", fmt.Sprint("p", n), nil))
			}
			inf := newPodInformer(t, src)
			f := newStateFollower()
			reg, err := inf.AddHandlerWith(f, informers.HandlerOptions{MergeByKey: true})
			require.NoError(t, err)
			testutil.Run(t, inf)
			defer f.Release()
			waitSynced(t, inf)
			for range 500 {
				name := fmt.Sprint("p", rng.IntN(objects))
				existing := false
				for _, o := range src.Objects() {
					existing = existing || o.Name == name
				}
				switch op := rng.IntN(10); {
				case !existing:
					mustAdd(t, src, pod("ns", name, nil))
				case op < 6:
					_, err := src.Update(pod("ns", name, map[string]string{"v": strconv.Itoa(rng.IntN(1000))}))
					require.NoError(t, err)
				case op < 9:
					_, err := src.Delete("ns", name)
					require.NoError(t, err)
				default: // the watch ends and the informer relists
					src.Compact()
					src.CloseWatches()
				}
				require.LessOrEqual(t, reg.Backlog(), 2*objects+2)
			}
			f.Release()
			testutil.Eventually(t, func() bool {
				state, _ := f.snapshot()
				return reg.Backlog() == 0 && maps.Equal(state, cacheState(inf)) && len(state) == len(src.Objects())
			}, "handler state never matched the cache")
			_, wrong := f.snapshot()
			assert.Empty(t, wrong)
		})
	}
}

// TestQueueLimitRemovesTheHandler overfills a bounded queue: the handler is
// removed, its registration and OnError report a *HandlerOverflowError,
// and a readiness check on it fails.
func TestQueueLimitRemovesTheHandler(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("ns", "a", nil))
	reported := make(chan error, 1)
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{OnError: informers.Set(func(err error) {
			select {
			case reported <- err:
			default:
			}
		})},
	})
	require.NoError(t, err)
	f := newStateFollower()
	defer close(f.release)
	reg, err := inf.AddHandlerWith(f, informers.HandlerOptions{Name: "stuck", QueueLimit: 5})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	for n := range 10 {
		mustAdd(t, src, pod("ns", fmt.Sprint("p", n), nil))
	}
	var overflow *informers.HandlerOverflowError
	require.ErrorAs(t, <-reported, &overflow)
	assert.Equal(t, "stuck", overflow.Handler)
	assert.Equal(t, 5, overflow.Limit)
	require.ErrorAs(t, reg.Err(), &overflow)
	require.ErrorAs(t, informers.ReadyCheck(reg)(nil), &overflow)

	_, err = inf.AddHandlerWith(f, informers.HandlerOptions{QueueLimit: -1})
	require.Error(t, err)
}

// A queue limit counts events only: the end of the initial state queued
// behind them is no event. A handler added to an informer holding n
// objects with HandlerOptions{QueueLimit: n} stays, and its backlog counts n.
func TestQueueLimitCountsEventsOnly(t *testing.T) {
	for _, merge := range []bool{false, true} {
		t.Run(fmt.Sprintf("merge=%v", merge), func(t *testing.T) {
			src := newPodSource()
			mustAdd(t, src, pod("ns", "a", nil), pod("ns", "b", nil), pod("ns", "c", nil))
			inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
			require.NoError(t, err)
			testutil.Run(t, inf)
			waitSynced(t, inf)
			f := newStateFollower()
			reg, err := inf.AddHandlerWith(f, informers.HandlerOptions{QueueLimit: 3, MergeByKey: merge})
			require.NoError(t, err)
			testutil.Eventually(t, func() bool { return reg.Backlog() == 3 }, "backlog %d, want the 3 adds", reg.Backlog())
			require.NoError(t, reg.Err(), "removed with only its limit of events waiting")
			close(f.release)
			waitSynced(t, reg)
			testutil.Eventually(t, func() bool { return reg.Backlog() == 0 }, "backlog %d after the initial state", reg.Backlog())
			require.NoError(t, reg.Err())
		})
	}
}

// A handler removed before it was delivered the initial state makes its
// WaitForSync return why at once, not when its context ends.
func TestWaitForSyncOfRemovedHandler(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("ns", "a", nil), pod("ns", "b", nil), pod("ns", "c", nil))
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)

	overflowing := newStateFollower()
	defer close(overflowing.release)
	reg, err := inf.AddHandlerWith(overflowing, informers.HandlerOptions{QueueLimit: 2})
	require.NoError(t, err)
	var overflow *informers.HandlerOverflowError
	require.ErrorAs(t, waitFailsPromptly(t, waitOn(reg)), &overflow)
	assert.Equal(t, 2, overflow.Limit)

	removed := newStateFollower()
	defer close(removed.release)
	reg, err = inf.AddHandler(removed)
	require.NoError(t, err)
	reg.Remove()
	require.ErrorIs(t, waitFailsPromptly(t, waitOn(reg)), informers.ErrStopped)

	// Removed while its handler is in a call that does not return: the
	// wait still ends at once, as nothing more will be delivered.
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	var once sync.Once
	reg, err = inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(*corev1.Pod, bool) {
		once.Do(func() { close(entered) })
		<-release
	}})
	require.NoError(t, err)
	<-entered
	reg.Remove()
	require.ErrorIs(t, waitFailsPromptly(t, waitOn(reg)), informers.ErrStopped)
	select {
	case <-reg.Done():
		t.Fatal("done while the call runs")
	default:
	}
}

// TestReadyCheck follows an informer through a 403, recovery and its
// handler's sync.
func TestReadyCheck(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("ns", "a", nil))
	src.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC: access denied")))
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}})
	require.NoError(t, err)
	f := newStateFollower()
	reg, err := inf.AddHandlerWith(f, informers.HandlerOptions{Name: "follower"})
	require.NoError(t, err)
	check := informers.ReadyCheck(inf, reg)
	testutil.Run(t, inf)
	defer f.Release()

	testutil.Eventually(t, func() bool { return inf.LastError() != nil }, "no list error")
	err = check(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403 Forbidden")
	assert.Contains(t, err.Error(), "handler follower")

	src.FailList(nil)
	testutil.Eventually(t, inf.HasSynced, "never synced")
	err = check(nil)
	require.Error(t, err, "the handler is stuck before its initial state")
	assert.NotContains(t, err.Error(), "cache of")
	f.Release()
	testutil.Eventually(t, func() bool { return check(nil) == nil }, "never ready")

	require.Error(t, informers.ReadyCheck(nil)(nil))
}
