package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// readYourWritesIterations is how many writes each loop of
// TestReadYourWrites reads back.
const readYourWritesIterations = 2000

// A controller that writes an object and at once reads it back from the
// cache: through a Tracker it always reads its write; through a plain
// lister it often reads the past.
func TestReadYourWrites(t *testing.T) {
	env, admin, ns, ctx := sharedServer(t, 5*time.Minute)

	f := informers.NewFactoryWith(clientset(t, env.Config()), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
	inf := informers.Informer[*corev1.ConfigMap](f)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	tracker := informers.NewTracker(inf, 10*time.Second)

	loop := func(prefix string, read func(key types.NamespacedName) (*corev1.ConfigMap, error), wrote func(key types.NamespacedName, cm *corev1.ConfigMap) error) (stale int, took time.Duration) {
		written := map[types.NamespacedName]*corev1.ConfigMap{}
		start := time.Now()
		for i := range readYourWritesIterations {
			key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i%50)}
			cm, err := createOrUpdate(ctx, admin, written[key], key, i)
			require.NoError(t, err)
			written[key] = cm
			require.NoError(t, wrote(key, cm))
			got, err := read(key)
			if err != nil || got.ResourceVersion != cm.ResourceVersion {
				stale++
			}
		}
		return stale, time.Since(start)
	}

	plainStale, plainTook := loop("plain", func(key types.NamespacedName) (*corev1.ConfigMap, error) {
		return inf.Lister().Namespace(key.Namespace).Get(key.Name)
	}, func(types.NamespacedName, *corev1.ConfigMap) error { return nil })
	trackedStale, trackedTook := loop("tracked", func(key types.NamespacedName) (*corev1.ConfigMap, error) {
		return tracker.Get(ctx, key)
	}, tracker.Wrote)

	t.Logf("%d create-or-update then read: plain lister %d stale reads (%.1f%%, %v), Tracker %d stale reads (%v)",
		readYourWritesIterations, plainStale, 100*float64(plainStale)/readYourWritesIterations, plainTook.Round(time.Millisecond), trackedStale, trackedTook.Round(time.Millisecond))
	assert.Zero(t, trackedStale, "reads through the Tracker see the controller's own writes")
}

// createOrUpdate creates the config map key, or updates last, its last
// version, with data i.
func createOrUpdate(ctx context.Context, cs kubernetes.Interface, last *corev1.ConfigMap, key types.NamespacedName, i int) (*corev1.ConfigMap, error) {
	data := map[string]string{"i": strconv.Itoa(i)}
	if last == nil {
		return cs.CoreV1().ConfigMaps(key.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Data: data}, metav1.CreateOptions{})
	}
	next := last.DeepCopy()
	next.Data = data
	return cs.CoreV1().ConfigMaps(key.Namespace).Update(ctx, next, metav1.UpdateOptions{})
}

// configMapKind is the kind of the parents of the ReplicaSet-pattern test.
var configMapKind = schema.GroupKind{Kind: "ConfigMap"}

// childController keeps one child config map per parent config map, as a
// ReplicaSet controller keeps pods: it lists a parent's children from an
// index of the children's cache and creates one, with a generated name,
// when it finds none. A stale cache makes it create a second.
type childController struct {
	cs       kubernetes.Interface
	ns       string
	parents  *informers.SharedInformer[*corev1.ConfigMap]
	children *informers.SharedInformer[*corev1.ConfigMap]
	tracker  *informers.Tracker[*corev1.ConfigMap] // nil: reads the cache as it is
	queue    workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu               sync.Mutex
	created, retried int
}

func (c *childController) reconcile(ctx context.Context, key types.NamespacedName) error {
	if c.tracker != nil {
		if err := c.tracker.Wait(ctx, key); err != nil {
			return err
		}
	}
	parent, err := c.parents.Lister().Namespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		if c.tracker != nil {
			c.tracker.Forget(key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	children, err := c.children.Lister().ByIndex("controller", key.String())
	if err != nil || len(children) > 0 {
		return err
	}
	child, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: parent.Name + "-",
		Labels:       map[string]string{"role": "child"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID, Controller: ptr.To(true),
		}},
	}}, metav1.CreateOptions{})
	if c.tracker != nil {
		if err != nil {
			c.tracker.WriteFailed(key, err)
		} else {
			err = c.tracker.Wrote(key, child)
		}
	}
	if err == nil {
		c.mu.Lock()
		c.created++
		c.mu.Unlock()
	}
	return err
}

func (c *childController) work(ctx context.Context) {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if err := c.reconcile(ctx, key); err != nil && ctx.Err() == nil {
			c.mu.Lock()
			c.retried++
			c.mu.Unlock()
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// runChildController runs the controller over namespace ns with two
// workers, tracked or not, while parents are created and churned and the
// API server restarts twice, then returns how many children each parent
// has on the server, once every parent has one.
func runChildController(t *testing.T, env *testenv.Env, ns string, tracked bool) (children map[string]int, c *childController) {
	t.Helper()
	ctx := testutil.Context(t, 5*time.Minute)
	admin := clientset(t, env.Config())
	f := informers.NewFactoryWith(clientset(t, env.Config()), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
	c = &childController{
		cs:      clientset(t, env.Config()),
		ns:      ns,
		parents: informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{LabelSelector: "role=parent"}),
		children: informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{
			LabelSelector: "role=child",
			Indexers:      map[string]informers.IndexFunc[*corev1.ConfigMap]{"controller": informers.IndexByController[*corev1.ConfigMap](configMapKind)},
		}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
	}
	if tracked {
		c.tracker = informers.NewTracker(c.children, 0)
	}
	fromParents, err := c.parents.AddHandler(informers.Enqueue[*corev1.ConfigMap](c.queue))
	require.NoError(t, err)
	fromChildren, err := c.children.AddHandler(informers.EnqueueOwner[*corev1.ConfigMap](c.queue, configMapKind))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(context.Background())
	f.Start(runCtx)
	require.NoError(t, informers.WaitForSync(ctx, fromParents, fromChildren))
	var workers sync.WaitGroup
	for range 2 {
		workers.Go(func() { c.work(runCtx) })
	}
	defer func() {
		c.queue.ShutDown()
		cancel()
		workers.Wait()
		require.NoError(t, f.Shutdown(testutil.Context(t, 30*time.Second)))
	}()

	// Parents are created one after the other, each patched at once three
	// times, so that its reconciles follow each other while its child is
	// on its way to the cache; meanwhile the API server restarts twice.
	const parents = 60
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for i := range parents {
			name := fmt.Sprintf("parent-%d", i)
			retry(ctx, func() error {
				_, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": "parent"}}}, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil // created, the response lost in a restart
				}
				return err
			})
			for n := range 3 {
				retry(ctx, func() error {
					_, err := admin.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"data":{"n":"%d"}}`, n), metav1.PatchOptions{})
					return err
				})
			}
			time.Sleep(50 * time.Millisecond) // pacing, so that the restarts fall amid the churn
		}
	}()
	for range 2 {
		time.Sleep(time.Second) // pacing
		require.NoError(t, env.RestartAPIServer(ctx))
	}
	<-churned

	testutil.EventuallyWithin(t, 2*time.Minute, func() bool {
		children = childrenPerParent(t, admin, ns)
		if len(children) < parents {
			return false
		}
		for _, n := range children {
			if n == 0 {
				return false
			}
		}
		return c.queue.Len() == 0
	}, "every parent has a child")
	return children, c
}

// retry calls write until it succeeds or ctx ends.
func retry(ctx context.Context, write func() error) {
	for write() != nil && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// childrenPerParent counts, on the server, the children of each parent.
func childrenPerParent(t *testing.T, cs kubernetes.Interface, ns string) map[string]int {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int{}
	for _, cm := range list.Items {
		switch cm.Labels["role"] {
		case "parent":
			out[cm.Name] += 0
		case "child":
			if ref := metav1.GetControllerOf(&cm); ref != nil {
				out[ref.Name]++
			}
		}
	}
	return out
}

// duplicates counts the children beyond the first of each parent.
func duplicates(children map[string]int) (n int, which []string) {
	for parent, count := range children {
		if count > 1 {
			n += count - 1
			which = append(which, fmt.Sprintf("%s:%d", parent, count))
		}
	}
	sort.Strings(which)
	return n, which
}

// The ReplicaSet pattern under churn and API server restarts: with a
// Tracker, no parent ever gets a second child; without one, some do.
func TestReplicaSetPatternDuplicates(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.New(t, testenv.Options{})
	admin := clientset(t, env.Config())

	plainChildren, plain := runChildController(t, env, testutil.Namespace(t, admin), false)
	plainDup, plainWhich := duplicates(plainChildren)
	trackedChildren, tracked := runChildController(t, env, testutil.Namespace(t, admin), true)
	trackedDup, trackedWhich := duplicates(trackedChildren)

	t.Logf("one child per parent, %d parents, 2 API server restarts: without a Tracker %d duplicate children (%d creates, %d retries) %v; with a Tracker %d (%d creates, %d retries)",
		len(plainChildren), plainDup, plain.created, plain.retried, plainWhich, trackedDup, tracked.created, tracked.retried)
	assert.Zero(t, trackedDup, "duplicate children with a Tracker: %v", trackedWhich)
}

// stalenessLog records what a staleness monitor reports, and the
// readiness of the factory at each report.
type stalenessLog struct {
	mu       sync.Mutex
	maxLag   time.Duration
	notReady int
	lastErr  error
}

func (l *stalenessLog) record(lag time.Duration, ready error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxLag = max(l.maxLag, lag)
	if ready != nil {
		l.notReady++
		l.lastErr = ready
	}
}

func (l *stalenessLog) get() (time.Duration, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxLag, l.notReady, l.lastErr
}

// After an API server restart, a watch whose connection does not carry the
// reset to the client (a half-open connection behind a proxy) stays open
// and silent: the informer reports synced, at its last version, forever.
// The staleness monitor, whose probes are separate requests, sees the lag
// grow and readiness fails past the threshold; once the connection is
// released the informer watches again and both recover.
func TestStalenessAfterAPIServerRestart(t *testing.T) {
	env, admin, ns, ctx := newServer(t, testenv.Options{}, 3*time.Minute)

	const threshold = 300 * time.Millisecond
	conn := newHalfOpen()
	cfg := env.Config()
	cfg.WrapTransport = conn.wrap
	f := informers.NewFactoryWith(clientset(t, cfg), informers.FactoryOptions{
		Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff), Staleness: informers.Set(&informers.StalenessOptions{Interval: 50 * time.Millisecond, Threshold: threshold})},
	})
	inf := informers.Informer[*corev1.ConfigMap](f)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	ready := informers.ReadyCheck(f)

	// A writer keeps the resource moving, so that the cache has events to
	// fall behind on, and a poller samples the monitor and readiness.
	stop := make(chan struct{})
	var background sync.WaitGroup
	defer func() { close(stop); background.Wait() }()
	background.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i%20)}, Data: map[string]string{"i": strconv.Itoa(i)}}
			if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
				_, _ = admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			}
		}
	})
	log := &stalenessLog{}
	background.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			log.record(inf.Stats().Staleness.Lag, ready(nil))
		}
	})
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return ready(nil) == nil && !inf.Stats().Staleness.Probed.IsZero() }, "ready, with the monitor probing")
	before, _, _ := log.get()

	require.NoError(t, env.RestartAPIServer(ctx))
	testutil.EventuallyWithin(t, time.Minute, func() bool { _, notReady, _ := log.get(); return notReady > 0 }, "readiness failed after the restart")
	_, _, lastErr := log.get()
	var se *informers.StalenessError
	require.ErrorAs(t, lastErr, &se, "readiness failed on staleness")
	assert.True(t, inf.HasSynced(), "the silent watch keeps the informer synced")
	assert.NoError(t, inf.LastError(), "and shows no error")
	testutil.EventuallyWithin(t, time.Minute, func() bool { return inf.Stats().Staleness.Lag > 5*threshold }, "the lag grows while the watch is silent")
	stale := inf.Stats().Staleness

	conn.Release()
	testutil.EventuallyWithin(t, time.Minute, func() bool { return ready(nil) == nil && inf.Stats().Staleness.Lag == 0 }, "readiness recovered")
	maxLag, notReady, _ := log.get()
	t.Logf("staleness before the restart peaked at %v; after it, with the watch silent: lag %v, %d versions behind, %d readiness checks failed (%v); peak %v; recovered once the watch was released",
		before.Round(time.Millisecond), stale.Lag.Round(time.Millisecond), stale.Versions, notReady, se, maxLag.Round(time.Millisecond))
	assert.Greater(t, maxLag, threshold)
	assert.Positive(t, stale.Versions)
}

// halfOpen is a transport under which a watch whose connection ends
// looks, to the client, open and silent, as a half-open connection behind
// a proxy that does not pass the reset on, until Release.
type halfOpen struct {
	next     http.RoundTripper
	released chan struct{}
	once     sync.Once
}

func newHalfOpen() *halfOpen { return &halfOpen{released: make(chan struct{})} }

// wrap is a rest.Config.WrapTransport.
func (h *halfOpen) wrap(rt http.RoundTripper) http.RoundTripper {
	h.next = rt
	return h
}

func (h *halfOpen) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err != nil || req.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	resp.Body = &silentBody{ReadCloser: resp.Body, released: h.released, closed: make(chan struct{})}
	return resp, nil
}

// Release lets the watches that ended end for the client too.
func (h *halfOpen) Release() { h.once.Do(func() { close(h.released) }) }

// silentBody is a watch response whose end the client does not see until
// released, or until it closes the body itself.
type silentBody struct {
	io.ReadCloser
	released  <-chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (b *silentBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		select {
		case <-b.released:
		case <-b.closed:
		}
	}
	return n, err
}

func (b *silentBody) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return b.ReadCloser.Close()
}
