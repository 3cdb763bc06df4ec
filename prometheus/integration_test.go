package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
	informersprom "github.com/kubetyped/informers/prometheus"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestScrapeOnRealControlPlane serves /metrics and /readyz for two
// factories on a real kube-apiserver, one of them a restricted user's, and
// reads them as Prometheus and a kubelet would: the objects gauge follows
// created pods, the restricted informer's 403 fails readiness, a stuck
// handler's backlog rises and drains, and an API server restart moves the
// watch error and relist counters.
func TestScrapeOnRealControlPlane(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.New(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(env.Config())
	require.NoError(t, err)
	restricted, err := kubernetes.NewForConfig(env.RestrictedConfig())
	require.NoError(t, err)
	ns := "metrics"
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	reg := prom.NewRegistry()
	m, err := informersprom.New(reg)
	require.NoError(t, err)
	backoff := &wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: 1 << 20}
	f := informers.NewFactoryWith(admin, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Metrics: informers.Set[informers.Metrics](m), Backoff: informers.Set(backoff)}})
	pods := informers.Informer[*corev1.Pod](f)
	stuck := make(chan struct{})
	var release sync.Once
	defer release.Do(func() { close(stuck) })
	_, err = pods.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{
		OnUpdate: func(_, _ *corev1.Pod) { <-stuck },
	}, informers.HandlerOptions{Name: "stuck"})
	require.NoError(t, err)
	rf := informers.NewFactoryWith(restricted, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Metrics: informers.Set[informers.Metrics](m), Backoff: informers.Set(backoff), OnError: informers.Set(func(error) {})}})
	informers.Informer[*corev1.Secret](rf)
	allReady := func(r *http.Request) error {
		return errors.Join(informers.ReadyCheck(f)(r), informers.ReadyCheck(rf)(r))
	}
	url := serve(t, reg, allReady)

	runCtx, stop := context.WithCancel(context.Background())
	f.Start(runCtx)
	rf.Start(runCtx)
	defer func() {
		release.Do(func() { close(stuck) })
		stop()
		assert.NoError(t, f.Shutdown(context.Background()))
		assert.NoError(t, rf.Shutdown(context.Background()))
	}()
	require.NoError(t, informers.WaitForSync(ctx, f))

	podSeries := map[string]string{"resource": "pods", "name": "pods.v1 namespace=" + ns}
	for i := range 5 {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	testutil.EventuallyWithin(t, 20*time.Second, func() bool { v, _ := value(scrape(t, url), "informer_objects", podSeries); return v == 5 }, "objects gauge never said 5")

	code, body := readyz(t, url)
	assert.Equal(t, 503, code)
	assert.Contains(t, body, "403 Forbidden")
	assert.Contains(t, body, "secrets")
	assert.NotContains(t, body, "pods.v1", "the admin's informer is ready")

	for i := range 5 {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, fmt.Sprint("p", i), metav1.GetOptions{})
		require.NoError(t, err)
		p.Labels = map[string]string{"touched": "yes"}
		_, err = admin.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	stuckSeries := map[string]string{"resource": "pods", "handler": "stuck"}
	testutil.EventuallyWithin(t, 20*time.Second, func() bool { v, _ := value(scrape(t, url), "informer_handler_backlog", stuckSeries); return v >= 5 }, "backlog of the stuck handler never grew")
	release.Do(func() { close(stuck) })
	testutil.EventuallyWithin(t, 20*time.Second, func() bool { v, _ := value(scrape(t, url), "informer_handler_backlog", stuckSeries); return v == 0 }, "backlog never drained")

	families := scrape(t, url)
	watchErrors, _ := value(families, "informer_request_errors_total", map[string]string{"resource": "pods", "verb": "watch"})
	relists, _ := value(families, "informer_relists_total", map[string]string{"resource": "pods"})
	require.NoError(t, env.RestartAPIServer(ctx))
	// Writes after the restart, so that the informer has something to
	// catch up on.
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "after-restart"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		return err == nil
	}, "apiserver not back")
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		f := scrape(t, url)
		e, _ := value(f, "informer_request_errors_total", map[string]string{"resource": "pods", "verb": "watch"})
		r, _ := value(f, "informer_relists_total", map[string]string{"resource": "pods"})
		o, _ := value(f, "informer_objects", podSeries)
		return e > watchErrors && r > relists && o == 6
	}, "watch errors and relists did not move, or the cache did not catch up")
	t.Logf("readyz while forbidden: %s", strings.TrimSpace(body))
}
