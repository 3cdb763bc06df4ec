package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestMain(m *testing.M) { testutil.MainNoLeaks(m) }

type podSource = informerstest.Source[*corev1.Pod, *corev1.PodList]

// testCluster is an in-memory cluster serving pods.
type testCluster struct {
	pods   *podSource
	server *informerstest.Cluster
}

func newTestCluster(t testing.TB, pods ...*corev1.Pod) testCluster {
	t.Helper()
	c := testCluster{pods: informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods")), server: informerstest.NewCluster()}
	informerstest.Serve(c.server, corev1.SchemeGroupVersion.WithResource("pods"), c.pods)
	for _, p := range pods {
		_, err := c.pods.Add(p)
		require.NoError(t, err)
	}
	return c
}

func (c testCluster) cluster() fleet.Cluster { return fleet.Cluster{Server: c.server} }

func pod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node}}
}

// fastBackoff makes informers retry at once.
var fastBackoff = &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}

// newFleet returns a fleet shut down when the test ends.
func newFleet(t testing.TB) *fleet.Fleet {
	t.Helper()
	fl := fleet.New(fleet.Options{Factory: informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}}})
	t.Cleanup(func() { require.NoError(t, fl.Shutdown(context.Background())) })
	return fl
}

// waitCtx bounds a test's waits on its fleets.
func waitCtx(t testing.TB) context.Context { return testutil.Context(t, 20*time.Second) }

// events records a fleet handler's events as strings.
type events struct{ testutil.Events }

func (e *events) HandleAdd(cluster string, p *corev1.Pod, _ bool) {
	e.Record(fmt.Sprintf("add %s|%s/%s", cluster, p.Namespace, p.Name))
}

func (e *events) HandleUpdate(cluster string, _, p *corev1.Pod) {
	e.Record(fmt.Sprintf("update %s|%s/%s", cluster, p.Namespace, p.Name))
}

func (e *events) HandleDelete(cluster string, d informers.Deleted[*corev1.Pod]) {
	e.Record(fmt.Sprintf("delete %s|%s", cluster, d.Key))
}

func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, msg)
}

func TestFleetReadsAndFollowsEveryCluster(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	east := newTestCluster(t, pod("shop", "web-0", "n1"), pod("shop", "web-1", "n2"))
	west := newTestCluster(t, pod("shop", "web-0", "n1"))
	fl := newFleet(t)

	pods := fleet.Informer[*corev1.Pod](fl) // before any cluster
	byNode, err := pods.AddIndex("node", func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} })
	require.NoError(t, err)
	rec := &events{}
	reg, err := pods.AddHandler(rec)
	require.NoError(t, err)
	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))
	require.NoError(t, fl.Attach(ctx, "west", west.cluster()))
	assert.ErrorIs(t, fl.Attach(ctx, "west", west.cluster()), fleet.ErrAttached)
	require.NoError(t, informers.WaitForSync(ctx, fl))
	require.NoError(t, informers.WaitForSync(ctx, reg))
	assert.Same(t, pods, fleet.Informer[*corev1.Pod](fl))
	assert.Equal(t, []string{"east", "west"}, fl.Clusters())

	// Keys carry the cluster.
	p, err := pods.Lister().Get(fleet.Key{Cluster: "west", Namespace: "shop", Name: "web-0"})
	require.NoError(t, err)
	assert.Equal(t, "web-0", p.Name)
	_, err = pods.Lister().Get(fleet.Key{Cluster: "west", Namespace: "shop", Name: "web-1"})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = pods.Lister().Get(fleet.Key{Cluster: "north", Namespace: "shop", Name: "web-0"})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Equal(t, 3, pods.Lister().Len())
	assert.Equal(t, []string{"east|shop/web-0", "east|shop/web-1", "west|shop/web-0"}, keys(pods.Lister().All()))
	eastPods, ok := pods.Lister().Cluster("east")
	require.True(t, ok)
	assert.Equal(t, 2, eastPods.Namespace("shop").Len())
	assert.Equal(t, []string{"east|shop/web-0", "west|shop/web-0"}, keys(byNode.All("n1")))
	assert.Equal(t, []string{"n1", "n2"}, byNode.Values())

	// Handlers receive the cluster of each event.
	eventually(t, func() bool { return len(rec.List()) == 3 }, "initial adds")
	assert.ElementsMatch(t, []string{"add east|shop/web-0", "add east|shop/web-1", "add west|shop/web-0"}, rec.List())
	_, err = west.pods.Delete("shop", "web-0")
	require.NoError(t, err)
	eventually(t, func() bool { return rec.Has("delete west|shop/web-0") }, "delete from west")

	// A cluster attached later gets the informer, its index and handler.
	north := newTestCluster(t, pod("ops", "db-0", "n1"))
	require.NoError(t, fl.Attach(ctx, "north", north.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, reg))
	eventually(t, func() bool { return rec.Has("add north|ops/db-0") }, "initial add from north")
	assert.Equal(t, []string{"east|shop/web-0", "north|ops/db-0"}, keys(byNode.All("n1")))

	// An informer requested after attach runs on every cluster.
	nodes := fleet.InformerWith(fl, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Namespace: informers.Set("ops")}})
	require.NoError(t, informers.WaitForSync(ctx, nodes))
	assert.Equal(t, []string{"north|ops/db-0"}, keys(nodes.Lister().All()))

	// Detaching drops the cluster from reads and handlers.
	require.NoError(t, fl.Detach(ctx, "east"))
	assert.Equal(t, []string{"north", "west"}, fl.Clusters())
	assert.Equal(t, []string{"north|ops/db-0"}, keys(pods.Lister().All()))
	_, ok = pods.Cluster("east")
	assert.False(t, ok)
	eventually(t, func() bool { return east.pods.Watchers() == 0 }, "east's watch ended")
	assert.Error(t, fl.Detach(ctx, "east"))

	reg.Remove()
	_, err = north.pods.Add(pod("ops", "db-1", "n1"))
	require.NoError(t, err)
	eventually(t, func() bool { return nodes.Lister().Len() == 2 }, "db-1 cached")
	assert.False(t, rec.Has("add north|ops/db-1"), "a removed handler got an event")
}

func keys(all func(func(string, *corev1.Pod) bool)) []string {
	var ks []string
	for cluster, p := range all {
		ks = append(ks, fleet.KeyOf(cluster, p).String())
	}
	slices.Sort(ks)
	return ks
}

func TestFailingClusterHoldsUpNoOther(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	forbidden := newTestCluster(t)
	forbidden.pods.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf("RBAC says no")))
	down := newTestCluster(t)
	down.pods.FailList(apierrors.NewServiceUnavailable("connection refused"))
	for n := range 8 {
		require.NoError(t, fl.Attach(ctx, fmt.Sprintf("ok-%d", n), newTestCluster(t, pod("a", "p", "n")).cluster()))
	}
	require.NoError(t, fl.Attach(ctx, "forbidden", forbidden.cluster()))
	require.NoError(t, fl.Attach(ctx, "down", down.cluster()))
	require.NoError(t, fl.Attach(ctx, "no-resource", fleet.Cluster{Server: informerstest.NewCluster()})) // as a missing CRD

	err := informers.WaitForSync(ctx, fl)
	require.NoError(t, ctx.Err(), "WaitForSync waited for the failing clusters until its context ended")
	var se *fleet.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"down", "forbidden", "no-resource"}, slices.Sorted(maps.Keys(se.Clusters)))
	assert.True(t, apierrors.IsNotFound(se.Clusters["no-resource"]), "%v", se.Clusters["no-resource"])
	assert.True(t, apierrors.IsForbidden(se.Clusters["forbidden"]), "%v", se.Clusters["forbidden"])
	assert.True(t, apierrors.IsServiceUnavailable(se.Clusters["down"]), "%v", se.Clusters["down"])
	assert.Contains(t, err.Error(), `cluster "forbidden"`)
	for n := range 8 {
		inf, ok := pods.Cluster(fmt.Sprintf("ok-%d", n))
		require.True(t, ok)
		assert.True(t, inf.HasSynced())
	}
	assert.Equal(t, 8, pods.Lister().Len())
	require.Error(t, informers.WaitForSync(ctx, pods))

	// A cluster that recovers syncs on its own and turns ready.
	down.pods.FailList(nil)
	ready := informers.ReadyCheck(fl)
	req := httptest.NewRequest("GET", "/readyz", nil)
	eventually(t, func() bool {
		err := ready(req)
		return errors.As(err, &se) && len(se.Clusters) == 2 && se.Clusters["forbidden"] != nil && se.Clusters["no-resource"] != nil
	}, "only the forbidden cluster and the one without the resource stay not ready")
}

func TestReadyCheckNamesAClusterThatGoesAway(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	fleet.Informer[*corev1.Pod](fl)
	east, west := newTestCluster(t, pod("a", "p", "n")), newTestCluster(t, pod("a", "p", "n"))
	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))
	require.NoError(t, fl.Attach(ctx, "west", west.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))
	ready := informers.ReadyCheck(fl)
	req := httptest.NewRequest("GET", "/readyz", nil)
	require.NoError(t, ready(req))

	west.pods.FailWatch(apierrors.NewServiceUnavailable("connection refused"))
	west.pods.FailList(apierrors.NewServiceUnavailable("connection refused"))
	west.pods.CloseWatches()
	var err error
	eventually(t, func() bool { err = ready(req); return err != nil }, "west not ready")
	var se *fleet.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"west"}, slices.Sorted(maps.Keys(se.Clusters)))

	west.pods.FailWatch(nil)
	west.pods.FailList(nil)
	eventually(t, func() bool { return ready(req) == nil }, "west ready again")
}

func TestAttachContextEndDetaches(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	c := newTestCluster(t, pod("a", "p", "n"))
	clusterCtx, cancel := context.WithCancel(ctx)
	require.NoError(t, fl.Attach(clusterCtx, "east", c.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))
	cancel()
	eventually(t, func() bool { return len(fl.Clusters()) == 0 && c.pods.Watchers() == 0 }, "detached")
	assert.Zero(t, pods.Lister().Len())
}

// TestAttachDetachManyClusters attaches and detaches 100 clusters
// repeatedly, while a handler follows them: goroutines, open watches and
// heap return to what they were.
func TestAttachDetachManyClusters(t *testing.T) {
	testutil.NoLeaks(t)
	const clusters, podsEach, passes = 100, 50, 3
	ctx := waitCtx(t)
	sources := make([]testCluster, clusters)
	for n := range sources {
		var pods []*corev1.Pod
		for p := range podsEach {
			pods = append(pods, pod(fmt.Sprintf("ns-%d", p%5), fmt.Sprintf("pod-%d", p), "node"))
		}
		sources[n] = newTestCluster(t, pods...)
	}
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	var mu sync.Mutex
	adds := 0
	_, err := pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{OnAdd: func(string, *corev1.Pod, bool) {
		mu.Lock()
		adds++
		mu.Unlock()
	}})
	require.NoError(t, err)
	baseline := heapInUse()
	goroutines := runtime.NumGoroutine()

	for pass := range passes {
		var wg sync.WaitGroup
		for n, c := range sources {
			wg.Go(func() { assert.NoError(t, fl.Attach(ctx, fmt.Sprint(n), c.cluster())) })
		}
		wg.Wait()
		require.NoError(t, informers.WaitForSync(ctx, fl), "pass %d", pass)
		require.Equal(t, clusters*podsEach, pods.Lister().Len())
		if pass == 0 {
			attached := heapInUse()
			t.Logf("heap: %d B before attaching, %d B with 100 clusters attached", baseline, attached)
			require.Greater(t, attached, baseline+2<<20, "the heap check below would not see the caches")
		}
		for n := range sources {
			wg.Go(func() { assert.NoError(t, fl.Detach(ctx, fmt.Sprint(n))) })
		}
		wg.Wait()
		require.Empty(t, fl.Clusters())
		require.Zero(t, pods.Lister().Len())
		// The source forgets a stopped watch on a goroutine of its own.
		eventually(t, func() bool {
			for _, c := range sources {
				if c.pods.Watchers() != 0 {
					return false
				}
			}
			return true
		}, "every watch ended")
	}
	mu.Lock()
	assert.LessOrEqual(t, clusters*podsEach, adds)
	mu.Unlock()
	// Polled here: Eventually's own goroutine would count.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if runtime.NumGoroutine() > goroutines {
		buf := make([]byte, 1<<20)
		t.Logf("%d goroutines, baseline %d\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
	}
	// The caches held 5 000 pods; after detaching, the heap is back
	// within a small margin of where it was.
	after := heapInUse()
	t.Logf("heap: %d B after detaching them all", after)
	assert.Less(t, after, baseline+2<<20, "heap grew from %d", baseline)
	runtime.KeepAlive(sources) // in both measures
	runtime.KeepAlive(fl)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// clusterMetrics counts, per cluster, the informers that report and those
// that stopped.
type clusterMetrics struct {
	mu      sync.Mutex
	running map[string]int
}

func (c *clusterMetrics) forCluster(cluster string) informers.Metrics {
	return clusterRecorder{c, cluster}
}

func (c *clusterMetrics) count(cluster string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[cluster]
}

type clusterRecorder struct {
	m       *clusterMetrics
	cluster string
}

func (r clusterRecorder) Informer(informers.AnyInformer) informers.InformerMetrics {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.running[r.cluster]++
	return informerRecorder{r}
}

func (r clusterRecorder) Handler(informers.AnyInformer, informers.AnyRegistration) informers.HandlerMetrics {
	return handlerRecorder{}
}

type handlerRecorder struct{}

func (handlerRecorder) Delivered(informers.EventType, time.Duration) {}
func (handlerRecorder) Panicked(informers.EventType)                 {}
func (handlerRecorder) Removed()                                     {}

type informerRecorder struct{ clusterRecorder }

func (informerRecorder) Request(string)                     {}
func (informerRecorder) RequestError(string, int)           {}
func (informerRecorder) Relist(string)                      {}
func (informerRecorder) Synced(string, time.Duration, bool) {}
func (r informerRecorder) Stopped() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.running[r.cluster]--
}

func TestMetricsCarryTheClusterAndGoWithIt(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	metrics := &clusterMetrics{running: map[string]int{}}
	fl := fleet.New(fleet.Options{Factory: informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}}, Metrics: metrics.forCluster})
	t.Cleanup(func() { require.NoError(t, fl.Shutdown(context.Background())) })
	fleet.Informer[*corev1.Pod](fl)
	require.NoError(t, fl.Attach(ctx, "east", newTestCluster(t).cluster()))
	require.NoError(t, fl.Attach(ctx, "west", newTestCluster(t).cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))
	assert.Equal(t, 1, metrics.count("east"))
	assert.Equal(t, 1, metrics.count("west"))
	require.NoError(t, fl.Detach(ctx, "east"))
	assert.Equal(t, 0, metrics.count("east"), "the detached cluster's series are not gone")
	assert.Equal(t, 1, metrics.count("west"))
}

// A handler that panics on one cluster's events and blocks on another's
// delays no third cluster's.
func TestHandlerTroubleStaysInItsCluster(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	release := make(chan struct{})
	rec := &events{}
	_, err := pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{OnAdd: func(cluster string, p *corev1.Pod, initial bool) {
		switch cluster {
		case "panics":
			panic("handler bug")
		case "blocks":
			<-release
		}
		rec.HandleAdd(cluster, p, initial)
	}})
	require.NoError(t, err)
	defer close(release)
	healthy := newTestCluster(t)
	for _, name := range []string{"panics", "blocks"} {
		require.NoError(t, fl.Attach(ctx, name, newTestCluster(t, pod("a", "p", "n"), pod("a", "q", "n")).cluster()))
	}
	require.NoError(t, fl.Attach(ctx, "healthy", healthy.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))
	for n := range 20 {
		_, err := healthy.pods.Add(pod("a", fmt.Sprint(n), "n"))
		require.NoError(t, err)
	}
	eventually(t, func() bool { return len(rec.List()) == 20 }, "the healthy cluster's events delivered")
}

// flagged records a fleet handler's events with their flags: "add
// east|ns/name initial", "delete east|ns/name unknown".
type flagged struct{ testutil.Events }

func (e *flagged) HandleAdd(cluster string, p *corev1.Pod, initial bool) {
	ev := fmt.Sprintf("add %s|%s/%s", cluster, p.Namespace, p.Name)
	if initial {
		ev += " initial"
	}
	e.Record(ev)
}

func (e *flagged) HandleUpdate(cluster string, _, p *corev1.Pod) {
	e.Record(fmt.Sprintf("update %s|%s/%s", cluster, p.Namespace, p.Name))
}

func (e *flagged) HandleDelete(cluster string, d informers.Deleted[*corev1.Pod]) {
	ev := fmt.Sprintf("delete %s|%s", cluster, d.Key)
	if d.FinalStateUnknown {
		ev += " unknown"
	}
	e.Record(ev)
}

// TestDetachAndReattachDeliver pins what handlers receive when a cluster
// is detached and attached again: nothing at Detach (no deletes), then,
// from the new attachment, its whole state as adds with isInInitialList,
// objects seen before included and no delete for those gone meanwhile.
func TestDetachAndReattachDeliver(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	rec := &flagged{}
	reg, err := pods.AddHandler(rec)
	require.NoError(t, err)
	east := newTestCluster(t, pod("s", "a", "n"), pod("s", "b", "n"))

	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, reg))
	eventually(t, func() bool { return len(rec.List()) == 2 }, "initial adds")
	_, err = east.pods.Add(pod("s", "c", "n"))
	require.NoError(t, err)
	eventually(t, func() bool { return len(rec.List()) == 3 }, "the add of c")
	assert.ElementsMatch(t, []string{"add east|s/a initial", "add east|s/b initial", "add east|s/c"}, rec.List())

	// Detach delivers nothing: no deletes for the objects the handler was
	// given, and nothing of what changes on the server while detached.
	require.NoError(t, fl.Detach(ctx, "east"))
	eventually(t, func() bool { return east.pods.Watchers() == 0 }, "east's watch ended")
	assert.Zero(t, pods.Lister().Len())
	_, err = east.pods.Delete("s", "a")
	require.NoError(t, err)
	_, err = east.pods.Add(pod("s", "d", "n"))
	require.NoError(t, err)
	detached := len(rec.List())
	assert.Equal(t, 3, detached, "events at Detach: %v", rec.List())

	// Attached again: the server's state as initial adds, b and c a second
	// time, and no delete of a.
	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, reg))
	eventually(t, func() bool { return len(rec.List()) == detached+3 }, "initial adds again")
	assert.ElementsMatch(t, []string{"add east|s/b initial", "add east|s/c initial", "add east|s/d initial"}, rec.List()[detached:])

	// Then events flow as before.
	_, err = east.pods.Delete("s", "b")
	require.NoError(t, err)
	eventually(t, func() bool { return rec.Has("delete east|s/b") }, "the delete of b")
	assert.Len(t, rec.List(), detached+4, "%v", rec.List())
}
