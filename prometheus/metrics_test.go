package prometheus_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
	informersprom "github.com/kubetyped/informers/prometheus"
	"github.com/kubetyped/informers/shard"
)

var fastBackoff = &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}}
}

// TestMetrics runs an informer with a handler over an in-process source
// and reads every kind of series from a scrape.
func TestMetrics(t *testing.T) {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, name := range []string{"a", "b"} {
		_, err := src.Add(pod(name, nil))
		require.NoError(t, err)
	}
	src.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("denied")))
	reg := prom.NewRegistry()
	m, err := informersprom.New(reg)
	require.NoError(t, err)
	_, err = informersprom.New(reg)
	require.Error(t, err, "registered twice")

	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), Metrics: informers.Set[informers.Metrics](m), OnError: informers.Set(func(error) {})},
	})
	require.NoError(t, err)
	var release sync.Once
	stuck := make(chan struct{})
	h, err := inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{
		OnUpdate: func(_, p *corev1.Pod) {
			if p.Name == "bad" {
				panic("bug")
			}
			<-stuck
		},
	}, informers.HandlerOptions{Name: "h"})
	require.NoError(t, err)
	url := serve(t, reg, informers.ReadyCheck(inf, h))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		release.Do(func() { close(stuck) })
		cancel()
		require.NoError(t, <-done)
	}()

	series := map[string]string{"name": "pods.v1", "resource": "pods", "version": "v1"}
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		v, _ := value(scrape(t, url), "informer_request_errors_total", map[string]string{"name": "pods.v1", "verb": "watch-list", "code": "403"})
		return v > 0
	}, "no 403 counted")
	code, body := readyz(t, url)
	assert.Equal(t, 503, code)
	assert.Contains(t, body, "403 Forbidden")

	src.FailList(nil)
	testutil.EventuallyWithin(t, 20*time.Second, func() bool { code, _ := readyz(t, url); return code == 200 }, "never ready")
	for i := range 10 {
		_, err := src.Update(pod("a", map[string]string{"i": string(rune('0' + i))}))
		require.NoError(t, err)
	}
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		v, _ := value(scrape(t, url), "informer_handler_backlog", map[string]string{"handler": "h"})
		return v == 10
	}, "backlog not 10")
	release.Do(func() { close(stuck) })
	_, err = src.Add(pod("bad", nil))
	require.NoError(t, err)
	_, err = src.Update(pod("bad", map[string]string{"x": "y"}))
	require.NoError(t, err)
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		f := scrape(t, url)
		backlog, _ := value(f, "informer_handler_backlog", map[string]string{"handler": "h"})
		panics, _ := value(f, "informer_handler_panics_total", map[string]string{"handler": "h", "event": "update"})
		return backlog == 0 && panics == 1
	}, "backlog not drained or panic not counted")

	f := scrape(t, url)
	for name, want := range map[string]float64{
		"informer_objects":                    3,
		"informer_undecodable_objects":        0,
		"informer_synced":                     1,
		"informer_watch_list":                 1,
		"informer_queued_items":               0,
		"informer_sync_objects_received":      2,
		"informer_processing_latency_seconds": 14, // 3 adds, 10 updates, 1 update of bad that returned
	} {
		got, ok := value(f, name, series)
		if assert.True(t, ok, "%s missing; series: %v", name, names(f, name)) {
			assert.Equal(t, want, got, name)
		}
	}
	for _, name := range []string{"informer_store_resource_version", "informer_initial_sync_duration_seconds", "informer_last_event_age_seconds", "informer_requests_total", "informer_syncs_total"} {
		got, ok := value(f, name, series)
		assert.True(t, ok && got > 0, "%s = %v", name, got)
	}
	adds, _ := value(f, "informer_handler_events_total", map[string]string{"handler": "h", "event": "add"})
	assert.Equal(t, 3.0, adds)

	h.Remove()
	_, ok := value(scrape(t, url), "informer_handler_events_total", map[string]string{"handler": "h"})
	assert.False(t, ok, "series of a removed handler")
}

// TestMetricsNamesTwoInformersApart gives two informers the same name:
// the second is numbered, so that scrapes do not fail on duplicates.
func TestMetricsNamesTwoInformersApart(t *testing.T) {
	reg := prom.NewRegistry()
	m, err := informersprom.New(reg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 2 {
		src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
		inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m)}, Name: "same"})
		require.NoError(t, err)
		wg.Go(func() { _ = inf.Run(ctx) })
		require.NoError(t, informers.WaitForSync(ctx, inf))
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	var got []string
	for _, f := range families {
		if f.GetName() == "informer_objects" {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" {
						got = append(got, l.GetValue())
					}
				}
			}
		}
	}
	assert.ElementsMatch(t, []string{"same", "same #2"}, got)
}

// TestShardGauges reports where a sharded informer's shard is filtered,
// and what the client dropped, with a source that ignores shard selectors
// as a server without the gate does.
func TestShardGauges(t *testing.T) {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	src.IgnoreShardSelectors(true)
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		p := pod(name, nil)
		p.UID = types.UID("uid-" + name)
		_, err := src.Add(p)
		require.NoError(t, err)
	}
	reg := prom.NewRegistry()
	m, err := informersprom.New(reg)
	require.NoError(t, err)
	half := shard.Of(shard.ByUID, 0, 2)
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m)}, Shard: &half})
	require.NoError(t, err)
	runSynced(t, inf)
	url := serve(t, reg, informers.ReadyCheck(inf))
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		f := scrape(t, url)
		client, _ := value(f, "informer_shard_filter", map[string]string{"filter": "client"})
		dropped, _ := value(f, "informer_shard_objects_dropped_total", nil)
		objects, _ := value(f, "informer_objects", nil)
		return client == 1 && dropped > 0 && dropped+objects == 8
	}, "shard filter not reported as client with the drops")
}

// TestStalenessGauges follows a stalled watch through the staleness
// gauges and the readiness check: lag and versions grow while the watch
// is silent, readiness fails past the threshold, and both recover.
func TestStalenessGauges(t *testing.T) {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	reg := prom.NewRegistry()
	m, err := informersprom.New(reg)
	require.NoError(t, err)
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m), Staleness: informers.Set(&informers.StalenessOptions{Interval: 10 * time.Millisecond, Threshold: 100 * time.Millisecond})},
	})
	require.NoError(t, err)
	runSynced(t, inf)
	url := serve(t, reg, informers.ReadyCheck(inf))
	testutil.EventuallyWithin(t, 20*time.Second, func() bool { _, ok := value(scrape(t, url), "informer_staleness_seconds", nil); return ok }, "no staleness gauge")

	src.StallWatches(true)
	for _, name := range []string{"a", "b"} {
		_, err := src.Add(pod(name, nil))
		require.NoError(t, err)
	}
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		f := scrape(t, url)
		lag, _ := value(f, "informer_staleness_seconds", nil)
		versions, _ := value(f, "informer_staleness_resource_versions", nil)
		return lag > 0.1 && versions == 2
	}, "staleness not reported")
	code, body := readyz(t, url)
	assert.Equal(t, 503, code)
	assert.Contains(t, body, "is stale")

	src.StallWatches(false)
	testutil.EventuallyWithin(t, 20*time.Second, func() bool {
		f := scrape(t, url)
		lag, _ := value(f, "informer_staleness_seconds", nil)
		versions, _ := value(f, "informer_staleness_resource_versions", nil)
		code, _ := readyz(t, url)
		return lag == 0 && versions == 0 && code == 200
	}, "staleness did not recover")
}

// runSynced runs inf until the end of the test and waits for it to sync.
func runSynced(t *testing.T, inf *informers.SharedInformer[*corev1.Pod]) {
	t.Helper()
	require.NoError(t, informers.WaitForSync(testutil.Run(t, inf), inf))
}

// MetricNames names every metric Metrics exports, with the help the
// registry exports; each call returns a copy of its own, which changes
// neither the next copy nor what Metrics exports.
func TestMetricNames(t *testing.T) {
	reg := prom.NewRegistry()
	m, err := informersprom.New(reg)
	require.NoError(t, err)
	names := informersprom.MetricNames()
	names["informer_objects"] = "changed"
	delete(names, "informer_requests_total")
	assert.NotEqual(t, "changed", informersprom.MetricNames()["informer_objects"])
	assert.Contains(t, informersprom.MetricNames(), "informer_requests_total")

	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m)}})
	require.NoError(t, err)
	_, err = inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{}, informers.HandlerOptions{Name: "h"})
	require.NoError(t, err)
	testutil.Run(t, inf)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), inf))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, families)
	want := informersprom.MetricNames()
	for _, f := range families {
		help, ok := want[f.GetName()]
		require.True(t, ok, "%s is not in MetricNames", f.GetName())
		assert.Equal(t, help, f.GetHelp(), f.GetName())
	}
}
