package informers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

// stalenessMetrics is a Metrics hook whose informer recorders implement
// StalenessMetrics: it keeps the last staleness told.
type stalenessMetrics struct {
	countingMetrics
	mu   sync.Mutex
	last informers.Staleness
	told int
}

func (m *stalenessMetrics) Informer(inf informers.AnyInformer) informers.InformerMetrics {
	return stalenessRecorder{countingInformer{&m.countingMetrics}, m}
}

func (m *stalenessMetrics) get() (informers.Staleness, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.told
}

type stalenessRecorder struct {
	countingInformer
	m *stalenessMetrics
}

func (r stalenessRecorder) Staleness(s informers.Staleness) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.last = s
	r.m.told++
}

// A watch that stays open but sends nothing keeps the informer synced;
// the staleness monitor sees its lag grow, fails readiness past the
// threshold, and sees it recover once events flow again.
func TestStalenessMonitorStalledWatch(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "p0", nil))
	cluster := informerstest.NewCluster()
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), src)
	m := &stalenessMetrics{countingMetrics: countingMetrics{counts: map[string]int{}}}
	const threshold = 150 * time.Millisecond
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{
		Server: cluster,
		Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m), Staleness: informers.Set(&informers.StalenessOptions{Interval: 10 * time.Millisecond, Threshold: threshold})},
	})
	inf := informers.Informer[*corev1.Pod](f)
	testutil.StartFactory(t, f)
	waitSynced(t, inf)
	ready := informers.ReadyCheck(f)
	testutil.Eventually(t, func() bool { _, told := m.get(); return told > 0 }, "the monitor probes")
	require.NoError(t, ready(nil))
	assert.Zero(t, inf.Stats().Staleness.Lag)

	src.StallWatches(true)
	for n := 1; n <= 3; n++ {
		mustAdd(t, src, pod("a", fmt.Sprintf("p%d", n), nil))
	}
	testutil.Eventually(t, func() bool { return inf.Stats().Staleness.Lag > threshold }, "the lag grows while the watch is silent")
	assert.True(t, inf.HasSynced(), "a stalled watch keeps the informer synced")
	err := ready(nil)
	var se *informers.StalenessError
	require.ErrorAs(t, err, &se, "readiness fails past the threshold")
	assert.Equal(t, threshold, se.Threshold)
	st := inf.Stats().Staleness
	assert.Equal(t, uint64(3), st.Versions, "three writes behind")
	assert.Equal(t, src.ResourceVersion(), st.ServerVersion)
	assert.NoError(t, st.Err)
	testutil.Eventually(t, func() bool { last, _ := m.get(); return last.Lag > 0 && last.Versions == 3 }, "the metrics hook is told")

	src.StallWatches(false)
	testutil.Eventually(t, func() bool { return ready(nil) == nil }, "readiness recovers once the events arrive")
	assert.Zero(t, inf.Stats().Staleness.Lag)
	testutil.Eventually(t, func() bool { last, _ := m.get(); return last.Lag == 0 && last.Versions == 0 }, "the metrics hook is told")
}

// Without a staleness monitor, Stats reports no staleness.
func TestStalenessMonitorOff(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	assert.Equal(t, informers.Staleness{}, inf.Stats().Staleness)
	require.NoError(t, informers.ReadyCheck(inf)(nil))
}

// A probe that fails leaves the lag as the answered probes showed it, and
// says why.
func TestStalenessProbeError(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "p0", nil))
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Staleness: informers.Set(&informers.StalenessOptions{Interval: 10 * time.Millisecond, Threshold: time.Hour}), OnError: informers.Set(func(error) {})},
	})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	testutil.Eventually(t, func() bool { return !inf.Stats().Staleness.Probed.IsZero() }, "a probe answered")
	src.FailList(context.DeadlineExceeded)
	testutil.Eventually(t, func() bool { return inf.Stats().Staleness.Err != nil }, "the failed probe is reported")
	assert.Zero(t, inf.Stats().Staleness.Lag)
	require.NoError(t, informers.ReadyCheck(inf)(nil))
}
