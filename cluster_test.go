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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
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

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster, Backoff: fastBackoff})
	inf := informers.Informer[*corev1.Pod](f)
	c := &podTracker{queue: workqueue.NewTyped[types.NamespacedName](), lister: inf.Lister(), exists: map[types.NamespacedName]string{}}
	reg, err := inf.AddHandler(informers.Enqueue[*corev1.Pod](c.queue))
	require.NoError(t, err)
	startFactory(t, f)
	done := make(chan struct{})
	go func() { defer close(done); c.run() }()
	t.Cleanup(func() { c.queue.ShutDown(); <-done })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, informers.WaitForSync(ctx, reg))
	eventually(t, func() bool { return c.matches(pods) }, "initial state")

	// A watch closed by the server: the informer resumes.
	pods.CloseWatches()
	mustAdd(t, pods, pod("a", "p3", nil))
	eventually(t, func() bool { return c.matches(pods) }, "after a closed watch")

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
	eventually(t, func() bool { return lists() > before && apierrors.IsInternalError(inf.LastError()) }, "a relist after 410 failed, and is reported")
	pods.FailList(nil)
	eventually(t, func() bool { return c.matches(pods) }, "after a compaction and a failed list")
	assert.Equal(t, 2, inf.Lister().Len())

	// A resource the cluster does not serve is a 404, as from a server.
	cms := informers.Informer[*corev1.ConfigMap](f)
	err = cms.WaitForSync(ctx)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}
