package informers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestInitialListThenWatch(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", streaming), func(t *testing.T) {
			src := newPodSource()
			src.RefuseWatchList(!streaming)
			mustAdd(t, src, pod("a", "x", nil), pod("a", "y", nil), pod("b", "z", nil))
			inf := newPodInformer(t, src)
			rec := &recorder{}
			reg, err := inf.AddHandler(rec)
			require.NoError(t, err)
			testutil.Run(t, inf)
			waitSynced(t, inf)
			testutil.Eventually(t, reg.HasSynced, "handler synced")
			assert.ElementsMatch(t, []string{"add a/x initial", "add a/y initial", "add b/z initial"}, rec.List())
			assert.Equal(t, streaming, inf.UsesWatchList())

			up := pod("a", "x", map[string]string{"v": "2"})
			_, err = src.Update(up)
			require.NoError(t, err)
			_, err = src.Delete("a", "y")
			require.NoError(t, err)
			mustAdd(t, src, pod("c", "w", nil))
			testutil.Eventually(t, func() bool { return len(rec.List()) == 6 }, "got %v", rec.List())
			assert.Equal(t, []string{"update a/x 1->4", "delete a/y", "add c/w"}, rec.List()[3:])

			assert.Equal(t, names(src.Objects()), names(mustList(t, inf.Lister())))
			got, err := inf.Lister().Namespace("a").Get("x")
			require.NoError(t, err)
			assert.Equal(t, "2", got.Labels["v"])
			calls := src.Calls()
			if streaming {
				assert.Zero(t, calls.List)
			} else {
				assert.Equal(t, 1, calls.List)
			}
		})
	}
}

func mustList(t *testing.T, l informers.Lister[*corev1.Pod]) []*corev1.Pod {
	t.Helper()
	return l.List(labels.Everything())
}

func TestPagedList(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true)
	for i := range 7 {
		mustAdd(t, src, pod("a", fmt.Sprintf("p%d", i), nil))
	}
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{PageSize: informers.Set[int64](2), Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	assert.Equal(t, 4, src.Calls().List, "7 objects in pages of 2")
	assert.Equal(t, names(src.Objects()), names(mustList(t, inf.Lister())))
	assert.Equal(t, src.ResourceVersion(), inf.LastSyncResourceVersion())
}

// A relist after 410 finds objects deleted while the informer was cut
// off: handlers get them as deletes with the final state unknown, and get
// nothing for objects that did not change.
func TestRelistAfterExpiry(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", streaming), func(t *testing.T) {
			src := newPodSource()
			src.RefuseWatchList(!streaming)
			mustAdd(t, src, pod("a", "keep", nil), pod("a", "gone", nil), pod("a", "changed", nil))
			inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
			testutil.Eventually(t, func() bool { return len(rec.List()) == 3 }, "initial adds")

			// Cut the informer off, change things, and forget the history.
			src.FailWatch(apierrors.NewServiceUnavailable("down"))
			src.FailList(apierrors.NewServiceUnavailable("down"))
			src.CloseWatches()
			testutil.Eventually(t, func() bool { return inf.LastError() != nil }, "informer noticed the outage")
			_, err := src.Delete("a", "gone")
			require.NoError(t, err)
			_, err = src.Update(pod("a", "changed", map[string]string{"v": "2"}))
			require.NoError(t, err)
			mustAdd(t, src, pod("a", "new", nil))
			src.Compact()
			src.FailWatch(nil)
			src.FailList(nil)

			testutil.Eventually(t, func() bool { return len(rec.List()) == 6 }, "relist events, got %v", rec.List())
			assert.ElementsMatch(t, []string{"delete a/gone unknown", "update a/changed 3->5", "add a/new"}, rec.List()[3:])
			assert.Equal(t, names(src.Objects()), names(mustList(t, inf.Lister())))
		})
	}
}

// An object deleted and recreated under the same name while the informer
// was cut off reaches handlers as a delete and an add, not an update.
func TestRelistRecreatedObject(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true)
	mustAdd(t, src, pod("a", "x", nil))
	inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	src.FailWatch(apierrors.NewServiceUnavailable("down"))
	src.CloseWatches()
	testutil.Eventually(t, func() bool { return inf.LastError() != nil }, "informer noticed the outage")
	_, err := src.Delete("a", "x")
	require.NoError(t, err)
	mustAdd(t, src, pod("a", "x", nil))
	src.Compact()
	src.FailWatch(nil)
	testutil.Eventually(t, func() bool { return len(rec.List()) == 3 }, "got %v", rec.List())
	assert.Equal(t, []string{"add a/x initial", "delete a/x unknown", "add a/x"}, rec.List())
}

func TestBookmarkAdvancesResourceVersion(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "x", nil))
	other := informersSourceNoise(t, src)
	inf, err := informers.NewInformer(src.ListWatch("a"), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	before := inf.LastSyncResourceVersion()
	other() // changes in another namespace: invisible to this informer
	require.Equal(t, before, inf.LastSyncResourceVersion())
	src.Bookmark()
	testutil.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == src.ResourceVersion() }, "bookmark applied")
	assert.NotEqual(t, before, inf.LastSyncResourceVersion())
}

// informersSourceNoise returns a function that writes objects in namespace
// "other" of src.
func informersSourceNoise(t *testing.T, src *podSource) func() {
	return func() {
		for i := range 3 {
			mustAdd(t, src, pod("other", fmt.Sprintf("n%d", i), nil))
		}
	}
}

func TestWatchListFallback(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true)
	mustAdd(t, src, pod("a", "x", nil))
	inf := newPodInformer(t, src)
	var errs atomic.Int32
	testutil.Run(t, inf)
	waitSynced(t, inf)
	calls := src.Calls()
	assert.Equal(t, 1, calls.WatchList, "tried streaming once")
	assert.Equal(t, 1, calls.List, "then listed")
	assert.False(t, inf.UsesWatchList())
	assert.Zero(t, errs.Load())
}

func TestLateHandler(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "x", nil), pod("a", "y", nil))
	inf := runSynced(t, src)

	rec := &recorder{}
	reg, err := inf.AddHandler(rec)
	require.NoError(t, err)
	waitSynced(t, reg)
	assert.ElementsMatch(t, []string{"add a/x initial", "add a/y initial"}, rec.List())
	_, err = src.Delete("a", "x")
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return rec.Has("delete a/x") }, "later events follow")
}

func TestRemoveHandlerWhileEventsFlow(t *testing.T) {
	src := newPodSource()
	inf := newPodInformer(t, src)
	var removedCalls, keptCalls atomic.Int64
	removed, err := inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(*corev1.Pod, bool) { removedCalls.Add(1) }})
	require.NoError(t, err)
	_, err = inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(*corev1.Pod, bool) { keptCalls.Add(1) }})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)

	const n = 200
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := range n {
			_, _ = src.Add(pod("a", fmt.Sprintf("p%d", i), nil))
		}
	}()
	testutil.Eventually(t, func() bool { return removedCalls.Load() > 0 }, "removed handler got events first")
	removed.Remove()
	select {
	case <-removed.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("removed handler never finished")
	}
	after := removedCalls.Load()
	<-writer
	testutil.Eventually(t, func() bool { return keptCalls.Load() == n }, "kept handler got all %d events, got %d", n, keptCalls.Load())
	assert.Equal(t, after, removedCalls.Load(), "no call after Done")
	assert.Zero(t, removed.Backlog())
}

func TestResync(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "x", nil), pod("a", "y", nil))
	inf := newPodInformer(t, src)
	resynced, plain := &recorder{}, &recorder{}
	_, err := inf.AddHandlerWith(resynced, informers.HandlerOptions{ResyncPeriod: informers.Set(20 * time.Millisecond)})
	require.NoError(t, err)
	_, err = inf.AddHandler(plain)
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	testutil.Eventually(t, func() bool {
		return resynced.Has("update a/x 1->1") && resynced.Has("update a/y 2->2")
	}, "resync replays the cache as updates")
	testutil.Eventually(t, func() bool { return len(plain.List()) == 2 }, "plain handler got the adds")
	for _, e := range plain.List() {
		assert.Contains(t, e, "add", "no resync for a handler without a period")
	}
}

func TestTransform(t *testing.T) {
	src := newPodSource()
	withFields := pod("a", "x", nil)
	withFields.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	mustAdd(t, src, withFields, pod("a", "bad", nil))
	var reported atomic.Pointer[informers.TransformError]
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) {
			var te *informers.TransformError
			if errors.As(err, &te) {
				reported.Store(te)
			}
		})},
		Transform: informers.Chain(informers.StripManagedFields[*corev1.Pod](), func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "bad" {
				return nil, errors.New("refused")
			}
			return p, nil
		}),
	})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	got, err := inf.Lister().Namespace("a").Get("x")
	require.NoError(t, err)
	assert.Nil(t, got.ManagedFields)
	_, err = inf.Lister().Namespace("a").Get("bad")
	assert.True(t, apierrors.IsNotFound(err))
	require.NotNil(t, reported.Load())
	assert.Equal(t, "a/bad", reported.Load().Key.String())
}

// A transform that renames objects caches them under their new keys, as
// client-go's informer does: lists, watch events and relists all map to
// the new key, and a relist notifies nothing for unchanged objects.
func TestTransformRenames(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "x", nil))
	rename := func(p *corev1.Pod) (*corev1.Pod, error) {
		p.Namespace, p.Name = "renamed-"+p.Namespace, p.Name+"-copy"
		return p, nil
	}
	inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}, Transform: rename})
	got, err := inf.Lister().Namespace("renamed-a").Get("x-copy")
	require.NoError(t, err)
	assert.Equal(t, "x-copy", got.Name)

	mustAdd(t, src, pod("a", "y", nil))
	_, err = src.Update(pod("a", "x", map[string]string{"v": "2"}))
	require.NoError(t, err)
	_, err = src.Delete("a", "y")
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return rec.Has("delete renamed-a/y-copy") }, "events: %v", rec.List())
	assert.Equal(t, []string{"add renamed-a/x-copy initial", "add renamed-a/y-copy"}, slices.DeleteFunc(rec.List(), func(e string) bool {
		return !strings.HasPrefix(e, "add")
	}))
	assert.True(t, rec.Has("update renamed-a/x-copy 1->3"), "events: %v", rec.List())
	_, err = inf.Lister().Namespace("a").Get("x")
	assert.True(t, apierrors.IsNotFound(err), "nothing under the server's key")

	before := len(rec.List())
	src.Compact() // a relist of what the cache holds already
	testutil.Eventually(t, func() bool { c := src.Calls(); return c.List+c.WatchList >= 2 && src.Watchers() > 0 }, "no relist")
	mustAdd(t, src, pod("a", "z", nil))
	testutil.Eventually(t, func() bool { return rec.Has("add renamed-a/z-copy") }, "events: %v", rec.List())
	assert.Equal(t, []string{"add renamed-a/z-copy"}, rec.List()[before:], "the relist notified unchanged objects")
	assert.Equal(t, 2, inf.Lister().Len())
}

func TestErrorsSurface(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC says no"))
	tests := []struct {
		name             string
		failList, failWL bool
		wantOp           string
	}{
		{name: "list and watch forbidden", failList: true, failWL: true, wantOp: "list"},
		{name: "watch forbidden", failWL: true, wantOp: "watch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := newPodSource()
			if tt.failList {
				src.FailList(forbidden)
			}
			if tt.failWL {
				src.FailWatch(forbidden)
			}
			var seen atomic.Int32
			inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
				Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) {
					var lw *informers.ListWatchError
					if errors.As(err, &lw) && apierrors.IsForbidden(err) {
						seen.Add(1)
					}
				})},
			})
			require.NoError(t, err)
			testutil.Run(t, inf)
			err = waitFailsPromptly(t, waitOn(inf))
			var ns *informers.NotSyncedError
			require.ErrorAs(t, err, &ns)
			assert.True(t, apierrors.IsForbidden(err), "the 403 is in the chain: %v", err)
			assert.Contains(t, err.Error(), "pods.v1")
			assert.NotZero(t, seen.Load())
			testutil.Eventually(t, func() bool {
				var lw *informers.ListWatchError
				return errors.As(inf.LastError(), &lw) && lw.Op == tt.wantOp
			}, "last error is the %s", tt.wantOp)

			// Fixing the cause lets the informer sync on its own.
			src.FailList(nil)
			src.FailWatch(nil)
			testutil.Eventually(t, inf.HasSynced, "synced once allowed")
			assert.NoError(t, inf.LastError())
		})
	}
}

func TestWaitForSyncDeadline(t *testing.T) {
	src := newPodSource()
	src.FailList(apierrors.NewServiceUnavailable("etcd is down"))
	src.FailWatch(apierrors.NewServiceUnavailable("etcd is down"))
	inf := newPodInformer(t, src)
	testutil.Run(t, inf)
	testutil.Eventually(t, func() bool { return inf.LastError() != nil }, "the list failed")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := informers.WaitForSync(ctx, inf)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, apierrors.IsServiceUnavailable(err), "says why: %v", err)
}

func TestPanickingHandler(t *testing.T) {
	src := newPodSource()
	var panics atomic.Int32
	var lastPanic atomic.Pointer[informers.HandlerPanicError]
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) {
			var hp *informers.HandlerPanicError
			if errors.As(err, &hp) {
				panics.Add(1)
				lastPanic.Store(hp)
			}
		})},
	})
	require.NoError(t, err)
	var afterPanic atomic.Int32
	_, err = inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(p *corev1.Pod, _ bool) {
		if p.Name == "boom" {
			panic("handler bug")
		}
		afterPanic.Add(1)
	}}, informers.HandlerOptions{Name: "buggy"})
	require.NoError(t, err)
	healthy := &recorder{}
	_, err = inf.AddHandler(healthy)
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	mustAdd(t, src, pod("a", "boom", nil), pod("a", "fine", nil))
	testutil.Eventually(t, func() bool { return len(healthy.List()) == 2 && afterPanic.Load() == 1 }, "both handlers go on")
	require.Equal(t, int32(1), panics.Load())
	hp := lastPanic.Load()
	assert.Equal(t, "buggy", hp.Handler)
	assert.Equal(t, "add", hp.Event)
	assert.Equal(t, "a/boom", hp.Key.String())
	assert.Equal(t, "handler bug", hp.Value)
	assert.Contains(t, string(hp.Stack), "TestPanickingHandler")
}

// A handler that does not return holds up only itself: the cache and the
// other handlers keep up, and its backlog is visible.
func TestStuckHandler(t *testing.T) {
	src := newPodSource()
	inf := newPodInformer(t, src)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	stuck, err := inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(*corev1.Pod, bool) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}})
	require.NoError(t, err)
	fast := &recorder{}
	_, err = inf.AddHandler(fast)
	require.NoError(t, err)
	testutil.Run(t, inf)
	t.Cleanup(func() { close(release) })
	waitSynced(t, inf)
	const n = 100
	for i := range n {
		mustAdd(t, src, pod("a", fmt.Sprintf("p%d", i), nil))
	}
	<-entered
	testutil.Eventually(t, func() bool { return len(fast.List()) == n }, "fast handler keeps up")
	testutil.Eventually(t, func() bool { return inf.Lister().Len() == n }, "cache keeps up")
	assert.Equal(t, n, stuck.Backlog(), "one in progress and the rest queued")
}

func TestRunTwice(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	ctx := testutil.Run(t, inf)
	waitSynced(t, inf)
	require.Error(t, inf.Run(ctx))
}

func TestAddHandlerAfterStop(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = inf.Run(ctx) }()
	waitSynced(t, inf)
	cancel()
	<-inf.Stopped()
	_, err = inf.AddHandler(&recorder{})
	require.ErrorIs(t, err, informers.ErrStopped)
}

func TestNewInformerRejectsBadOptions(t *testing.T) {
	src := newPodSource()
	_, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{informers.NamespaceIndex: func(*corev1.Pod) []string { return nil }},
	})
	require.Error(t, err)
	_, err = informers.NewInformer(&informers.ListWatch[*corev1.Pod, *corev1.PodList]{}, informers.Options[*corev1.Pod]{})
	require.Error(t, err)
}

// A watch that ends, as server timeouts make it, resumes from the last
// resource version: no relist, no event lost or repeated.
func TestWatchResumesWithoutRelist(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true)
	mustAdd(t, src, pod("a", "x", nil))
	_, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	// (A watch that closes within a second without any event counts as a
	// failing server and leads to a relist, as in client-go: each watch
	// here gets an event first.)
	for i := range 3 {
		mustAdd(t, src, pod("a", fmt.Sprintf("p%d", i), nil))
		testutil.Eventually(t, func() bool { return rec.Has(fmt.Sprintf("add a/p%d", i)) }, "event %d", i)
		src.CloseWatches()
	}
	mustAdd(t, src, pod("a", "last", nil))
	testutil.Eventually(t, func() bool { return rec.Has("add a/last") }, "event after the last reconnect")
	calls := src.Calls()
	assert.Equal(t, 1, calls.List, "never relisted")
	assert.Equal(t, 4, calls.Watch)
	assert.Len(t, rec.List(), 5, "nothing repeated")
}

// Listed objects are copied out of the list's item array, so that the
// array can be freed as a whole: one cached item would keep it all
// reachable (kubernetes/kubernetes#113305).
func TestListItemsAreCopiedOut(t *testing.T) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.Pod{*pod("a", "x", nil), *pod("a", "y", nil)}}
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return list, nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	)
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	for i := range list.Items {
		got, err := inf.Lister().Namespace("a").Get(list.Items[i].Name)
		require.NoError(t, err)
		assert.NotSame(t, &list.Items[i], got, "cached object points into the list")
		assert.Equal(t, list.Items[i].Name, got.Name)
	}
}

// Bad input costs nothing but a clear error: an event of the wrong kind is
// reported and skipped, an undecodable stream ends the watch with an error
// and the informer reconnects; every good event still arrives.
func TestBadWatchEvents(t *testing.T) {
	watches := make(chan *watch.FakeWatcher, 4)
	var list atomic.Pointer[corev1.PodList]
	list.Store(&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return list.Load().DeepCopy(), nil },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(10, false)
			watches <- w
			return w, nil
		},
	)
	lw.DisableWatchList = true
	errs := make(chan error, 10)
	inf, rec := startRecording(t, lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) { errs <- err })}})
	w := <-watches

	w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "wrong", ResourceVersion: "2"}})
	good := pod("a", "good", nil)
	good.ResourceVersion = "3"
	w.Add(good)
	var lwErr *informers.ListWatchError
	require.ErrorAs(t, <-errs, &lwErr)
	assert.Equal(t, "decode", lwErr.Op)
	assert.Contains(t, lwErr.Error(), "*v1.ConfigMap")
	testutil.Eventually(t, func() bool { return rec.Has("add a/good") }, "the good event after the bad one")

	// What client-go's stream decoder sends when it cannot decode an event;
	// the server has a new object meanwhile, which the relist finds.
	list.Store(&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "4"}, Items: []corev1.Pod{*good, *pod("a", "later", nil)}})
	w.Error(&apierrors.NewInternalError(errors.New("unable to decode an event from the watch stream")).ErrStatus)
	require.ErrorAs(t, <-errs, &lwErr)
	assert.Equal(t, "watch", lwErr.Op)
	assert.True(t, apierrors.IsInternalError(lwErr))
	testutil.Eventually(t, func() bool { return rec.Has("add a/later") }, "the informer relisted and goes on")
	assert.Equal(t, 2, inf.Lister().Len())
}

// A handler removed before the informer ever ran is done at once.
func TestRemoveHandlerBeforeRun(t *testing.T) {
	inf, err := informers.NewInformer(newPodSource().ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	reg, err := inf.AddHandler(&recorder{})
	require.NoError(t, err)
	reg.Remove()
	select {
	case <-reg.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done never closed")
	}
}

// An informer of an interface type (informers.Object here, client.Object
// for controller-runtime) caches its objects by their dynamic types, copied
// out of the list pages, so that no page stays reachable through them.
func TestInformerOfInterfaceType(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true)
	mustAdd(t, src, pod("a", "x", nil), pod("a", "y", nil))
	var mu sync.Mutex
	var pages []*corev1.PodList
	lw := informers.NewListWatch[informers.Object](
		func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) {
			l, err := src.List(ctx, "", opts)
			mu.Lock()
			pages = append(pages, l)
			mu.Unlock()
			return l, err
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return src.Watch(ctx, "", opts)
		})
	inf, err := informers.NewInformer(lw, informers.Options[informers.Object]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	assert.Equal(t, "informers.Object", inf.String(), "named by its type, not by a nil value")
	testutil.Run(t, inf)
	waitSynced(t, inf)
	select {
	case <-inf.Synced():
	default:
		t.Fatal("Synced is not closed once HasSynced")
	}

	got, err := inf.Lister().Namespace("a").Get("x")
	require.NoError(t, err)
	p, ok := got.(*corev1.Pod)
	require.True(t, ok, "cached as %T", got)
	assert.Equal(t, "x", p.Name)
	mu.Lock()
	defer mu.Unlock()
	for _, page := range pages {
		for n := range page.Items {
			assert.NotSame(t, &page.Items[n], p, "the cached pod points into a list page")
		}
	}
}
