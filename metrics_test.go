package informers_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// countingMetrics counts what the hook is told, as "informer/what" and
// "handler/what" strings.
type countingMetrics struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *countingMetrics) add(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[s]++
}

func (m *countingMetrics) count(s string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[s]
}

func (m *countingMetrics) Informer(inf informers.AnyInformer) informers.InformerMetrics {
	m.add("informer " + inf.Name())
	return countingInformer{m}
}

func (m *countingMetrics) Handler(inf informers.AnyInformer, reg informers.AnyRegistration) informers.HandlerMetrics {
	m.add("handler " + reg.Name())
	return countingHandler{m}
}

type countingInformer struct{ m *countingMetrics }

func (c countingInformer) Request(verb string) { c.m.add("request " + verb) }
func (c countingInformer) RequestError(verb string, code int) {
	c.m.add(fmt.Sprintf("error %s %d", verb, code))
}
func (c countingInformer) Relist(reason string) { c.m.add("relist " + reason) }
func (c countingInformer) Synced(method string, took time.Duration, initial bool) {
	c.m.add(fmt.Sprintf("synced %s initial=%v", method, initial))
}
func (c countingInformer) Stopped() { c.m.add("stopped") }

type countingHandler struct{ m *countingMetrics }

func (c countingHandler) Delivered(e informers.EventType, took time.Duration) {
	c.m.add("delivered " + e.String())
}
func (c countingHandler) Panicked(e informers.EventType) { c.m.add("panicked " + e.String()) }
func (c countingHandler) Removed()                       { c.m.add("removed") }

// TestMetricsHook follows an informer and a handler through a failed list,
// a sync, events, a panic, a compaction that forces a relist, and the end.
func TestMetricsHook(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("ns", "a", nil), pod("ns", "b", nil))
	src.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("denied")))
	m := &countingMetrics{counts: map[string]int{}}
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), Metrics: informers.Set[informers.Metrics](m), OnError: informers.Set(func(error) {})}, Name: "pods",
	})
	require.NoError(t, err)
	reg, err := inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{
		OnUpdate: func(_, p *corev1.Pod) {
			if p.Name == "panics" {
				panic("handler bug")
			}
		},
	}, informers.HandlerOptions{Name: "h"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()

	testutil.Eventually(t, func() bool { return m.count("error watch-list 403") > 0 }, "no 403 counted")
	src.FailList(nil)
	testutil.Eventually(t, inf.HasSynced, "never synced")
	mustAdd(t, src, pod("ns", "panics", nil))
	_, err = src.Update(pod("ns", "panics", map[string]string{"x": "y"}))
	require.NoError(t, err)
	_, err = src.Delete("ns", "a")
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return m.count("panicked update") == 1 && m.count("delivered delete") == 1 }, "events not counted")

	st := inf.Stats()
	assert.Equal(t, 2, st.Objects)
	assert.Equal(t, src.ResourceVersion(), st.ResourceVersion)
	assert.True(t, st.Synced)
	assert.Equal(t, 2, st.SyncProgress)
	assert.Positive(t, st.InitialSync)
	assert.False(t, st.LastEvent.IsZero())

	src.Compact()
	src.CloseWatches()
	mustAdd(t, src, pod("ns", "c", nil))
	testutil.Eventually(t, func() bool {
		return m.count("relist expired") >= 1 && inf.Lister().Len() == 3 && reg.Backlog() == 0
	}, "no relist after compaction, or its add not delivered")

	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, 1, m.count("informer pods"))
	assert.Equal(t, 1, m.count("handler h"))
	assert.Equal(t, 4, m.count("delivered add"), "a, b, panics and c")
	// The first sync is one, by watch-list or, when the 403 ended the
	// watch-list attempt just before the list after it, by list.
	assert.Equal(t, 1, m.count("synced watch-list initial=true")+m.count("synced list initial=true"))
	assert.Positive(t, m.count("request watch-list"))
	assert.Equal(t, 1, m.count("stopped"))
	assert.Equal(t, 1, m.count("removed"))
	reg.Remove() // after the end: not counted again
	assert.Equal(t, 1, m.count("removed"))
}

// TestEventTypes checks that event types print as client-go spells them.
func TestEventTypes(t *testing.T) {
	for e, want := range map[informers.EventType]string{informers.EventAdd: "add", informers.EventUpdate: "update", informers.EventDelete: "delete", 0: "unknown"} {
		assert.Equal(t, want, e.String())
	}
}
