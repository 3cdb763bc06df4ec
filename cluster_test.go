package informers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

// podTracker is a small controller: a workqueue fed by the pods informer
// and one worker that records, per key, whether the pod exists, as a
// reconciler reading the lister would.
type podTracker struct {
	queue  workqueue.TypedInterface[types.NamespacedName]
	lister informers.Lister[*corev1.Pod]
	mu     sync.Mutex
	exists map[types.NamespacedName]string // key -> resource version seen
}

func (c *podTracker) run() {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		p, err := c.lister.Namespace(key.Namespace).Get(key.Name)
		c.mu.Lock()
		if err == nil {
			c.exists[key] = p.ResourceVersion
		} else {
			delete(c.exists, key)
		}
		c.mu.Unlock()
		c.queue.Done(key)
	}
}

// matches reports whether the controller's view is the source's state.
func (c *podTracker) matches(src *podSource) bool {
	want := map[types.NamespacedName]string{}
	for _, p := range src.Objects() {
		want[informers.KeyOf(p)] = p.ResourceVersion
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return assert.ObjectsAreEqual(want, c.exists)
}

// A controller built on a Factory, the README's main way, runs on
// informerstest sources and converges through a closed watch, a
// compaction and a failing list.
func TestFactoryOnTestCluster(t *testing.T) {
	pods := newPodSource()
	mustAdd(t, pods, pod("a", "p1", nil), pod("a", "p2", nil))
	cluster := informerstest.NewCluster()
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), pods)

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	inf := informers.Informer[*corev1.Pod](f)
	c := &podTracker{queue: workqueue.NewTyped[types.NamespacedName](), lister: inf.Lister(), exists: map[types.NamespacedName]string{}}
	reg, err := inf.AddHandler(informers.Enqueue[*corev1.Pod](c.queue))
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	done := make(chan struct{})
	go func() { defer close(done); c.run() }()
	t.Cleanup(func() { c.queue.ShutDown(); <-done })
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, informers.WaitForSync(ctx, reg))
	testutil.Eventually(t, func() bool { return c.matches(pods) }, "initial state")

	// A watch closed by the server: the informer resumes.
	pods.CloseWatches()
	mustAdd(t, pods, pod("a", "p3", nil))
	testutil.Eventually(t, func() bool { return c.matches(pods) }, "after a closed watch")

	// Disconnected, the server changes and compacts; the informer's first
	// relist fails.
	unavailable := apierrors.NewInternalError(errors.New("etcd unavailable"))
	pods.FailWatch(unavailable)
	pods.CloseWatches()
	_, err = pods.Delete("a", "p1")
	require.NoError(t, err)
	changed := pod("a", "p2", map[string]string{"changed": "yes"})
	_, err = pods.Update(changed)
	require.NoError(t, err)
	pods.Compact()
	pods.FailList(unavailable)
	lists := func() int { c := pods.Calls(); return c.List + c.WatchList }
	before := lists()
	pods.FailWatch(nil)
	testutil.Eventually(t, func() bool { return lists() > before && apierrors.IsInternalError(inf.LastError()) }, "a relist after 410 failed, and is reported")
	pods.FailList(nil)
	testutil.Eventually(t, func() bool { return c.matches(pods) }, "after a compaction and a failed list")
	assert.Equal(t, 2, inf.Lister().Len())

	// A resource the cluster does not serve is a 404, as from a server.
	cms := informers.Informer[*corev1.ConfigMap](f)
	err = informers.WaitForSync(ctx, cms)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// gatedServer holds every list until the test lets it go, counting how
// many are in flight.
type gatedServer struct {
	informers.Server
	release            chan struct{}
	mu                 sync.Mutex
	inFlight, most, nb int
}

func (s *gatedServer) List(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.nb++
		s.mu.Unlock()
	}()
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Server.List(ctx, gvr, ns, opts)
}

func (s *gatedServer) counts() (inFlight, most, done int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight, s.most, s.nb
}

// MaxConcurrentLists bounds how many informers of a factory list at once.
func TestFactoryMaxConcurrentLists(t *testing.T) {
	cluster := informerstest.NewCluster()
	resources := []string{"pods", "configmaps", "secrets", "services", "serviceaccounts"}
	for _, res := range resources {
		src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource(res))
		src.RefuseWatchList(true)
		informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource(res), src)
	}
	srv := &gatedServer{Server: cluster, release: make(chan struct{})}
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: srv, MaxConcurrentLists: 2})
	// Five informers of pods served under five names: only the count of
	// lists in flight matters here.
	var infs []informers.Syncer
	for _, res := range resources {
		inf := informers.InformerWith(f, informers.Options[*corev1.Pod]{Resource: corev1.SchemeGroupVersion.WithResource(res)})
		require.NoError(t, inf.LastError())
		infs = append(infs, inf)
	}
	testutil.StartFactory(t, f)
	for n := range resources {
		testutil.Eventually(t, func() bool {
			inFlight, _, _ := srv.counts()
			return inFlight == min(2, len(resources)-n)
		}, "lists in flight before release %d", n)
		srv.release <- struct{}{}
		testutil.Eventually(t, func() bool { _, _, done := srv.counts(); return done == n+1 }, "list %d done", n)
	}
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, informers.WaitForSync(ctx, infs...))
	_, most, _ := srv.counts()
	assert.Equal(t, 2, most)
}
