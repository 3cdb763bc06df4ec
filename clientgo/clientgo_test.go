package clientgo_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

type podSource = informerstest.Source[*corev1.Pod, *corev1.PodList]

func newSource(t *testing.T, pods ...*corev1.Pod) *podSource {
	t.Helper()
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	src.RefuseWatchList(true)
	for _, p := range pods {
		_, err := src.Add(p)
		require.NoError(t, err)
	}
	return src
}

var fastBackoff = &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, Spec: corev1.PodSpec{NodeName: "n-" + name}}
}

func newInformer(t *testing.T, src *podSource) *informers.SharedInformer[*corev1.Pod] {
	t.Helper()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	return inf
}

// events records what a client-go handler receives.
type events struct{ testutil.Events }

// funcs is the kind of handler client-go controllers write: type
// assertions, and a tombstone to unwrap on delete.
func (e *events) funcs() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { e.Record("add " + obj.(*corev1.Pod).Name) },
		UpdateFunc: func(oldObj, newObj any) {
			e.Record(fmt.Sprintf("update %s %s->%s", newObj.(*corev1.Pod).Name, oldObj.(*corev1.Pod).ResourceVersion, newObj.(*corev1.Pod).ResourceVersion))
		},
		DeleteFunc: func(obj any) {
			switch o := obj.(type) {
			case *corev1.Pod:
				e.Record("delete " + o.Name)
			case cache.DeletedFinalStateUnknown:
				e.Record(fmt.Sprintf("delete %s unknown (%s)", o.Obj.(*corev1.Pod).Name, o.Key))
			default:
				e.Record(fmt.Sprintf("delete of %T", obj))
			}
		},
	}
}

// Deletes reach a client-go handler as the object when seen on the watch,
// and as cache.DeletedFinalStateUnknown when found by a relist.
func TestHandlerDeletes(t *testing.T) {
	testutil.NoLeaks(t)
	src := newSource(t, pod("a", "x", nil), pod("a", "y", nil), pod("a", "z", nil))
	inf := newInformer(t, src)
	rec := &events{}
	reg, err := clientgo.AddEventHandler(inf, rec.funcs())
	require.NoError(t, err)
	testutil.Run(t, inf)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, 10*time.Second), reg))
	assert.ElementsMatch(t, []string{"add x", "add y", "add z"}, rec.List())

	_, err = src.Delete("a", "x")
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return len(rec.List()) == 4 }, "got %v", rec.List())
	assert.Equal(t, "delete x", rec.List()[3])

	// Cut off, delete, forget the history: the relist finds y gone.
	src.FailWatch(apierrors.NewServiceUnavailable("down"))
	src.CloseWatches()
	testutil.Eventually(t, func() bool { return inf.LastError() != nil }, "the informer noticed the outage")
	_, err = src.Delete("a", "y")
	require.NoError(t, err)
	src.Compact()
	src.FailWatch(nil)
	testutil.Eventually(t, func() bool { return len(rec.List()) == 5 }, "got %v", rec.List())
	assert.Equal(t, "delete y unknown (a/y)", rec.List()[4])
}

// The view serves client-go's generated listers, WaitForCacheSync and
// WaitFor, and its handlers follow the informer.
func TestViewListersAndSync(t *testing.T) {
	testutil.NoLeaks(t)
	src := newSource(t, pod("a", "x", map[string]string{"app": "web"}), pod("a", "y", nil), pod("b", "x", map[string]string{"app": "web"}))
	inf := newInformer(t, src)
	view := clientgo.SharedIndexInformer(inf)
	assert.False(t, view.HasSynced())
	assert.Empty(t, view.LastSyncResourceVersion())
	testutil.Run(t, inf)

	stop := make(chan struct{})
	defer close(stop)
	require.True(t, cache.WaitForCacheSync(stop, view.HasSynced))
	require.True(t, cache.WaitFor(testutil.Context(t, 10*time.Second), "", view.HasSyncedChecker()))
	assert.Equal(t, src.ResourceVersion(), view.LastSyncResourceVersion())
	assert.Equal(t, src.ResourceVersion(), view.GetStore().LastStoreSyncResourceVersion())
	assert.True(t, view.GetController().HasSynced())
	assert.False(t, view.IsStopped())

	pods := corelisters.NewPodLister(view.GetIndexer())
	p, err := pods.Pods("a").Get("x")
	require.NoError(t, err)
	assert.Equal(t, "a", p.Namespace)
	_, err = pods.Pods("a").Get("nope")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	web, err := pods.List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	require.NoError(t, err)
	assert.Len(t, web, 2)
	inA, err := pods.Pods("a").List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, inA, 2)

	keys := view.GetStore().ListKeys()
	sort.Strings(keys)
	assert.Equal(t, []string{"a/x", "a/y", "b/x"}, keys)
	assert.Len(t, view.GetStore().List(), 3)
	got, ok, err := view.GetStore().Get(pod("b", "x", nil))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Same(t, got, mustGet(t, inf, "b", "x"), "the view shares the cache's objects")

	// A handler added through the view gets the cache, then changes.
	rec := &events{}
	reg, err := view.AddEventHandler(rec.funcs())
	require.NoError(t, err)
	require.True(t, cache.WaitFor(testutil.Context(t, 10*time.Second), "", reg.HasSyncedChecker()))
	assert.True(t, reg.HasSynced())
	assert.Len(t, rec.List(), 3)
	up := pod("a", "y", map[string]string{"v": "2"})
	_, err = src.Update(up)
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return len(rec.List()) == 4 }, "got %v", rec.List())
	require.NoError(t, view.RemoveEventHandler(reg))
	require.NoError(t, view.RemoveEventHandler(reg), "removing twice")
	assert.Error(t, view.RemoveEventHandler(otherRegistration{}))
}

type otherRegistration struct {
	cache.ResourceEventHandlerRegistration
}

func mustGet(t *testing.T, inf *informers.SharedInformer[*corev1.Pod], ns, name string) *corev1.Pod {
	t.Helper()
	p, err := inf.Lister().Namespace(ns).Get(name)
	require.NoError(t, err)
	return p
}

// Indexes added through the view serve client-go's index reads; the
// namespace index is built in.
func TestViewIndexers(t *testing.T) {
	testutil.NoLeaks(t)
	src := newSource(t, pod("a", "x", nil), pod("a", "y", nil), pod("b", "z", nil))
	inf := newInformer(t, src)
	view := clientgo.SharedIndexInformer(inf)
	byNode := func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Spec.NodeName, "all"}, nil }
	require.NoError(t, view.AddIndexers(cache.Indexers{"node": byNode, cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
	assert.ErrorContains(t, view.AddIndexers(cache.Indexers{"node": byNode}), "exists already")
	assert.ErrorContains(t, view.AddIndexers(cache.Indexers{cache.NamespaceIndex: byNode}), "built-in namespace index")
	testutil.Run(t, inf)
	require.True(t, cache.WaitForCacheSync(testutil.Context(t, 10*time.Second).Done(), view.HasSynced))

	idx := view.GetIndexer()
	assert.ElementsMatch(t, []string{"node", cache.NamespaceIndex}, keysOf(idx.GetIndexers()))
	objs, err := idx.ByIndex("node", "n-x")
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "x", objs[0].(*corev1.Pod).Name)
	keys, err := idx.IndexKeys("node", "all")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a/x", "a/y", "b/z"}, keys)
	assert.ElementsMatch(t, []string{"n-x", "n-y", "n-z", "all"}, idx.ListIndexFuncValues("node"))
	same, err := idx.Index(cache.NamespaceIndex, pod("a", "", nil))
	require.NoError(t, err)
	assert.Len(t, same, 2)
	withX, err := idx.Index("node", pod("c", "x", nil))
	require.NoError(t, err)
	assert.Len(t, withX, 3, "x's values are n-x and all: every pod, once")
	_, err = idx.Index("missing", pod("a", "x", nil))
	assert.Error(t, err)
	_, err = idx.ByIndex("missing", "v")
	assert.Error(t, err)

	n := 0
	require.NoError(t, cache.ListAllByNamespace(idx, "a", labels.Everything(), func(any) { n++ }))
	assert.Equal(t, 2, n)
}

func keysOf(m cache.Indexers) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// An index function's error is reported, as a panic of one would be.
func TestViewIndexFuncError(t *testing.T) {
	src := newSource(t, pod("a", "x", nil))
	var mu sync.Mutex
	var reported []error
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	})}})
	require.NoError(t, err)
	view := clientgo.SharedIndexInformer(inf)
	require.NoError(t, view.AddIndexers(cache.Indexers{"bad": func(any) ([]string, error) { return nil, errors.New("no value") }}))
	testutil.Run(t, inf)
	require.True(t, cache.WaitForCacheSync(testutil.Context(t, 10*time.Second).Done(), view.HasSynced))
	mu.Lock()
	defer mu.Unlock()
	var ixErr *informers.IndexError
	require.Len(t, reported, 1)
	require.ErrorAs(t, reported[0], &ixErr)
	assert.Equal(t, "bad", ixErr.Index)
	assert.Contains(t, ixErr.Error(), "no value")
}

// What the view cannot honour fails with an error that says what to do.
func TestViewReadOnly(t *testing.T) {
	view := clientgo.SharedIndexInformer(newInformer(t, newSource(t)))
	store := view.GetIndexer()
	p := pod("a", "x", nil)
	for name, err := range map[string]error{
		"Add":                             store.Add(p),
		"Update":                          store.Update(p),
		"Delete":                          store.Delete(p),
		"Replace":                         store.Replace([]any{p}, "1"),
		"Resync":                          store.Resync(),
		"SetTransform":                    view.SetTransform(func(o any) (any, error) { return o, nil }),
		"SetWatchErrorHandler":            view.SetWatchErrorHandler(func(*cache.Reflector, error) {}),
		"SetWatchErrorHandlerWithContext": view.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}),
	} {
		assert.ErrorContains(t, err, name, name)
	}
	_, err := view.AddEventHandler(nil)
	assert.Error(t, err)
}

// Run runs an informer that has not run; it stops with its context, and
// the view reports it stopped.
func TestViewRun(t *testing.T) {
	testutil.NoLeaks(t)
	src := newSource(t, pod("a", "x", nil))
	view := clientgo.SharedIndexInformer(newInformer(t, src))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		view.Run(stop)
	}()
	require.True(t, cache.WaitForCacheSync(testutil.Context(t, 10*time.Second).Done(), view.HasSynced))
	close(stop)
	<-done
	assert.True(t, view.IsStopped())
	// A second run returns at once: an informer runs once.
	view.RunWithContext(testutil.Context(t, 10*time.Second))
}

// A client-go ListerWatcher feeds an informer.
func TestFromListerWatcher(t *testing.T) {
	testutil.NoLeaks(t)
	src := newSource(t, pod("a", "x", nil), pod("b", "y", nil))
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return src.List(ctx, "", opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return src.Watch(ctx, "", opts)
		},
	}
	inf, err := informers.NewInformer(clientgo.FromListerWatcher[*corev1.Pod](lw), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, 10*time.Second), inf))
	assert.Equal(t, 2, inf.Lister().Len())
	_, err = src.Add(pod("a", "z", nil))
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return inf.Lister().Len() == 3 }, "the watch is followed")

	bad := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return &corev1.Pod{}, nil },
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return src.Watch(ctx, "", opts)
		},
	}
	_, err = clientgo.FromListerWatcher[*corev1.Pod](bad).List(context.Background(), metav1.ListOptions{})
	assert.ErrorContains(t, err, "not a list")
}
