package controllerruntime_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(klog.Background())
	testenv.Main(m)
}

// klogFlushDaemon ignores klog's flush daemon, which can start during a
// test and outlive it.
var klogFlushDaemon = goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1")

// sharedServer checks the test for leaks, klog's flush daemon aside, and
// returns the shared control plane with a clientset on it.
func sharedServer(t *testing.T) (*testenv.Env, kubernetes.Interface) {
	t.Helper()
	testutil.NoLeaks(t, klogFlushDaemon)
	env := testenv.Shared(t)
	return env, kubernetes.NewForConfigOrDie(env.Config())
}

// newManager returns a manager on our cache, run until the end of the
// test. Only NewCache (ours, unless opts sets one) differs from a stock
// manager.
func newManager(t *testing.T, cfg *rest.Config, opts manager.Options) manager.Manager {
	t.Helper()
	if opts.NewCache == nil {
		opts.NewCache = controllerruntime.NewCache
	}
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := ctrl.NewManager(cfg, opts)
	require.NoError(t, err)
	return mgr
}

func startManager(t *testing.T, mgr manager.Manager) {
	t.Helper()
	startUntilCleanup(t, mgr, "the manager")
	require.True(t, mgr.GetCache().WaitForCacheSync(testutil.Context(t, time.Minute)))
}

// startCache runs c until the end of the test.
func startCache(t *testing.T, c *controllerruntime.Cache) {
	t.Helper()
	startUntilCleanup(t, c, "the cache")
}

// startUntilCleanup starts what, s, until the end of the test, and then
// checks that its Start returns nil within a minute.
func startUntilCleanup(t *testing.T, s interface{ Start(context.Context) error }, what string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Errorf("%s did not stop", what)
		}
	})
}

// seen records what a reconciler read from the cache, per object: the
// value of its "v" label, or "gone".
type seen struct {
	mu   sync.Mutex
	last map[types.NamespacedName]string
}

func (s *seen) set(key types.NamespacedName, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[types.NamespacedName]string{}
	}
	s.last[key] = v
}

func (s *seen) get(key types.NamespacedName) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[key]
}

// reconciler reads its object through the manager's client (the cache)
// into a new obj.
func reconciler(c client.Client, newObj func() client.Object, s *seen) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := newObj()
		err := c.Get(ctx, req.NamespacedName, obj)
		switch {
		case apierrors.IsNotFound(err):
			s.set(req.NamespacedName, "gone")
		case err != nil:
			return reconcile.Result{}, err
		default:
			s.set(req.NamespacedName, obj.GetLabels()["v"])
		}
		return reconcile.Result{}, nil
	}
}

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// A manager on our cache reconciles created, updated and deleted objects,
// typed, unstructured and metadata-only.
func TestManagerReconciles(t *testing.T) {
	env, cs := sharedServer(t)
	ns := testutil.Namespace(t, cs)
	mgr := newManager(t, env.Config(), manager.Options{})

	typed, unstr, meta := &seen{}, &seen{}, &seen{}
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("typed").For(&corev1.ConfigMap{}).
		Complete(reconciler(mgr.GetClient(), func() client.Object { return &corev1.ConfigMap{} }, typed)))
	newSecret := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(secretGVK)
		return u
	}
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("unstructured").For(newSecret()).
		Complete(reconciler(mgr.GetClient(), newSecret, unstr)))
	newMeta := func() client.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
		return m
	}
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("metadata").For(&corev1.Service{}, builder.OnlyMetadata).
		Complete(reconciler(mgr.GetClient(), newMeta, meta)))
	startManager(t, mgr)

	ctx := testutil.Context(t, 2*time.Minute)
	key := types.NamespacedName{Namespace: ns, Name: "x"}
	objMeta := func(v string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: "x", Labels: map[string]string{"v": v}}
	}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: objMeta("1")}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: objMeta("1")}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: objMeta("1"),
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for name, s := range map[string]*seen{"typed": typed, "unstructured": unstr, "metadata": meta} {
		testutil.EventuallyWithin(t, time.Minute, func() bool { return s.get(key) == "1" }, "%s: created", name)
	}

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "x", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Labels["v"] = "2"
	_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "x", metav1.GetOptions{})
	require.NoError(t, err)
	sec.Labels["v"] = "2"
	_, err = cs.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	svc, err := cs.CoreV1().Services(ns).Get(ctx, "x", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Labels["v"] = "2"
	_, err = cs.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	for name, s := range map[string]*seen{"typed": typed, "unstructured": unstr, "metadata": meta} {
		testutil.EventuallyWithin(t, time.Minute, func() bool { return s.get(key) == "2" }, "%s: updated", name)
	}

	require.NoError(t, cs.CoreV1().ConfigMaps(ns).Delete(ctx, "x", metav1.DeleteOptions{}))
	require.NoError(t, cs.CoreV1().Secrets(ns).Delete(ctx, "x", metav1.DeleteOptions{}))
	require.NoError(t, cs.CoreV1().Services(ns).Delete(ctx, "x", metav1.DeleteOptions{}))
	for name, s := range map[string]*seen{"typed": typed, "unstructured": unstr, "metadata": meta} {
		testutil.EventuallyWithin(t, time.Minute, func() bool { return s.get(key) == "gone" }, "%s: deleted", name)
	}
}

// List through the manager's client answers label and field selectors and
// an IndexField index from our cache.
func TestManagerListSelectorsAndIndex(t *testing.T) {
	env, cs := sharedServer(t)
	ns, other := testutil.Namespace(t, cs), testutil.Namespace(t, cs)
	mgr := newManager(t, env.Config(), manager.Options{})
	require.NoError(t, mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, "spec.nodeName",
		func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }))
	ctx := testutil.Context(t, 2*time.Minute)
	for i, spec := range []struct{ ns, node, app string }{{ns, "n1", "web"}, {ns, "n1", "db"}, {ns, "n2", "web"}, {other, "n1", "web"}} {
		_, err := cs.CoreV1().Pods(spec.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": spec.app}},
			Spec:       corev1.PodSpec{NodeName: spec.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	startManager(t, mgr)

	for _, tc := range []struct {
		name string
		opts []client.ListOption
		want []string
	}{
		{"namespace", []client.ListOption{client.InNamespace(ns)}, []string{"p0", "p1", "p2"}},
		{"labels", []client.ListOption{client.InNamespace(ns), client.MatchingLabels{"app": "web"}}, []string{"p0", "p2"}},
		{"index in a namespace", []client.ListOption{client.InNamespace(ns), client.MatchingFields{"spec.nodeName": "n1"}}, []string{"p0", "p1"}},
		{"index and labels", []client.ListOption{client.InNamespace(ns), client.MatchingFields{"spec.nodeName": "n1"}, client.MatchingLabels{"app": "web"}}, []string{"p0"}},
		{"index in all namespaces", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}, client.MatchingLabels{"app": "web"}}, []string{"p0", "p3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pods corev1.PodList
			testutil.EventuallyWithin(t, time.Minute, func() bool {
				require.NoError(t, mgr.GetClient().List(ctx, &pods, tc.opts...))
				return len(namesOf(pods.Items, ns, other)) == len(tc.want)
			}, "listed %v", namesOf(pods.Items, ns, other))
			assert.ElementsMatch(t, tc.want, namesOf(pods.Items, ns, other))
			for _, p := range pods.Items {
				assert.Equal(t, "Pod", p.Kind, "copies carry their kind")
			}
		})
	}
	var pods corev1.PodList
	err := mgr.GetClient().List(ctx, &pods, client.MatchingFields{"spec.schedulerName": "x"})
	assert.ErrorContains(t, err, "field:spec.schedulerName")
}

// namesOf returns the names of the pods of the test's namespaces.
func namesOf(pods []corev1.Pod, namespaces ...string) []string {
	var out []string
	for _, p := range pods {
		for _, ns := range namespaces {
			if p.Namespace == ns {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// A manager on our cache goes on reconciling after kube-apiserver restarts.
func TestManagerSurvivesAPIServerRestart(t *testing.T) {
	testutil.NoLeaks(t, klogFlushDaemon)
	env := testenv.New(t, testenv.Options{})
	cs := kubernetes.NewForConfigOrDie(env.Config())
	ns := testutil.Namespace(t, cs)
	mgr := newManager(t, env.Config(), manager.Options{})
	s := &seen{}
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("restart").For(&corev1.ConfigMap{}).
		Complete(reconciler(mgr.GetClient(), func() client.Object { return &corev1.ConfigMap{} }, s)))
	startManager(t, mgr)
	ctx := testutil.Context(t, 3*time.Minute)
	create := func(name string) {
		t.Helper()
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"v": "1"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("before")
	testutil.EventuallyWithin(t, time.Minute, func() bool { return s.get(types.NamespacedName{Namespace: ns, Name: "before"}) == "1" }, "reconciled before the restart")

	require.NoError(t, env.RestartAPIServer(ctx))
	create("after")
	require.NoError(t, cs.CoreV1().ConfigMaps(ns).Delete(ctx, "before", metav1.DeleteOptions{}))
	testutil.EventuallyWithin(t, 2*time.Minute, func() bool { return s.get(types.NamespacedName{Namespace: ns, Name: "after"}) == "1" }, "reconciled after the restart")
	testutil.EventuallyWithin(t, 2*time.Minute, func() bool { return s.get(types.NamespacedName{Namespace: ns, Name: "before"}) == "gone" }, "delete reconciled after the restart")
}

// RemoveInformer stops the informer of a type and frees it, with the
// objects it cached; the next request makes a new one.
func TestRemoveInformer(t *testing.T) {
	env, cs := sharedServer(t)
	ns := testutil.Namespace(t, cs)
	ctx := testutil.Context(t, time.Minute)
	const count = 20
	for i := range count {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
			Data:       map[string]string{"v": strings.Repeat("x", 1024)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	c, err := controllerruntime.New(env.Config(), ctrl.Options{}.Cache)
	require.NoError(t, err)
	startCache(t, c)
	require.True(t, c.WaitForCacheSync(ctx), "started")
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	require.True(t, inf.HasSynced(), "GetInformer waits for the informer to sync once the cache runs")
	require.False(t, inf.IsStopped())
	informer, cached := weakRefs(t, inf, ns)
	require.Len(t, cached, count, "the informer cached the namespace's config maps")

	require.NoError(t, c.RemoveInformer(ctx, &corev1.ConfigMap{}))
	assert.True(t, inf.IsStopped(), "the removed informer stopped")
	again, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	assert.NotSame(t, inf, again, "a new informer")
	assert.False(t, again.IsStopped())
	assert.NoError(t, c.RemoveInformer(ctx, &corev1.Secret{}), "removing an informer that is not there")

	inf = nil // the test's own reference: what is left is the cache's
	testutil.EventuallyWithin(t, 10*time.Second, func() bool {
		runtime.GC()
		if informer.Value() != nil {
			return false
		}
		for _, obj := range cached {
			if obj.Value() != nil {
				return false
			}
		}
		return true
	}, "the removed informer and the objects it cached are collected")
}

// weakRefs returns weak pointers to the informer behind inf, one of our
// cache's, and to the config maps of namespace ns that it caches: things
// that nothing but the cache holds.
func weakRefs(t *testing.T, inf cache.Informer, ns string) (weak.Pointer[informers.SharedInformer[client.Object]], []weak.Pointer[corev1.ConfigMap]) {
	t.Helper()
	view, ok := inf.(interface {
		Informer() *informers.SharedInformer[client.Object]
	})
	require.True(t, ok, "our cache's informer is a %T", inf)
	var cached []weak.Pointer[corev1.ConfigMap]
	for obj := range view.Informer().Lister().All() {
		if obj.GetNamespace() == ns {
			cached = append(cached, weak.Make(obj.(*corev1.ConfigMap)))
		}
	}
	return weak.Make(view.Informer()), cached
}
