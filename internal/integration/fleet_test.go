package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// fleetTrackers follows a fleet informer's events with one tracker per
// cluster; a cluster attached again starts a fresh one, since its handler
// receives the cluster's state again as adds.
type fleetTrackers struct {
	mu sync.Mutex
	by map[string]*tracker[*corev1.ConfigMap]
}

func (f *fleetTrackers) reset(cluster string) *tracker[*corev1.ConfigMap] {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := newTracker[*corev1.ConfigMap]()
	f.by[cluster] = k
	return k
}

func (f *fleetTrackers) of(cluster string) *tracker[*corev1.ConfigMap] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.by[cluster]
}

func (f *fleetTrackers) handler() fleet.Handler[*corev1.ConfigMap] {
	return fleet.HandlerFuncs[*corev1.ConfigMap]{
		OnAdd:    func(c string, o *corev1.ConfigMap, initial bool) { f.of(c).HandleAdd(o, initial) },
		OnUpdate: func(c string, old, o *corev1.ConfigMap) { f.of(c).HandleUpdate(old, o) },
		OnDelete: func(c string, d informers.Deleted[*corev1.ConfigMap]) { f.of(c).HandleDelete(d) },
	}
}

// startControlPlanes starts n control planes at once, each stopped when
// the test ends.
func startControlPlanes(t *testing.T, n int) []*testenv.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	envs := make([]*testenv.Env, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { envs[i], errs[i] = testenv.Start(ctx, testenv.Options{}) })
	}
	wg.Wait()
	for _, env := range envs {
		if env != nil {
			t.Cleanup(func() { require.NoError(t, env.Stop()) })
		}
	}
	require.NoError(t, errors.Join(errs...))
	return envs
}

// TestFleetThreeControlPlanes runs a fleet informer over three real
// control planes while their objects change: attached while written,
// one detached and attached again, one kube-apiserver killed (SIGKILL)
// then started again. The others keep serving, readiness names the dead
// cluster within 5 seconds and recovers after its restart, and every
// cluster's cache and handler converge on their server.
func TestFleetThreeControlPlanes(t *testing.T) {
	testutil.NoLeaks(t)
	names := []string{"east", "west", "north"}
	envs := startControlPlanes(t, len(names))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ns = "fleet"
	admins := map[string]kubernetes.Interface{}
	churn := map[string]*churner{}
	for n, name := range names {
		cs := clientset(t, envs[n].Config())
		admins[name] = cs
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		c, err := startChurn(ctx, cs, ns, uint64(n+1))
		require.NoError(t, err)
		churn[name] = c
		t.Cleanup(c.Stop)
	}

	fl := fleet.New(fleet.Options{Factory: informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}}})
	t.Cleanup(func() { require.NoError(t, fl.Shutdown(context.Background())) })
	cms := fleet.InformerWith(fl, informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
	trackers := &fleetTrackers{by: map[string]*tracker[*corev1.ConfigMap]{}}
	reg, err := cms.AddHandler(trackers.handler())
	require.NoError(t, err)
	attach := func(n int) {
		trackers.reset(names[n])
		require.NoError(t, fl.Attach(ctx, names[n], fleet.Cluster{RESTConfig: envs[n].Config()}))
	}
	for n := range names {
		attach(n) // while the churn goes on
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	require.NoError(t, informers.WaitForSync(syncCtx, fl))
	require.NoError(t, informers.WaitForSync(syncCtx, reg))

	// Detached and attached again: a fresh cache.
	require.NoError(t, fl.Detach(ctx, "west"))
	_, attached := cms.Cluster("west")
	require.False(t, attached)
	attach(1)
	require.NoError(t, informers.WaitForSync(syncCtx, fl))
	require.NoError(t, informers.WaitForSync(syncCtx, reg)) // readiness counts handlers too

	// kill -9 north's kube-apiserver.
	ready := informers.ReadyCheck(fl)
	req := httptest.NewRequest("GET", "/readyz", nil)
	require.NoError(t, ready(req))
	before := map[string]int{"east": trackers.of("east").count(), "west": trackers.of("west").count()}
	require.NoError(t, envs[2].KillAPIServer())
	killed := time.Now()
	ok, msg := pollUntil(5*time.Second, func() (bool, string) {
		var se *fleet.SyncError
		err := ready(req)
		if !errors.As(err, &se) {
			return false, fmt.Sprint(err)
		}
		return slices.Equal(slices.Sorted(maps.Keys(se.Clusters)), []string{"north"}), err.Error()
	})
	require.True(t, ok, "readiness did not name north alone within 5s of its kill: %s", msg)
	t.Logf("readiness named north %v after its kill: %s", time.Since(killed).Round(time.Millisecond), msg)
	ok, msg = pollUntil(30*time.Second, func() (bool, string) {
		for c, n := range before {
			if trackers.of(c).count() < n+20 {
				return false, fmt.Sprintf("%s: %d events since the kill", c, trackers.of(c).count()-n)
			}
		}
		return true, ""
	})
	require.True(t, ok, "the other clusters' handlers stalled while north was down: %s", msg)

	require.NoError(t, envs[2].StartAPIServer(ctx))
	ok, msg = pollUntil(time.Minute, func() (bool, string) {
		err := ready(req)
		return err == nil, fmt.Sprint(err)
	})
	require.True(t, ok, "north not ready after its restart: %s", msg)

	// Every cache and handler converges on its server.
	for _, name := range names {
		churn[name].Stop()
	}
	stopped := time.Now()
	for _, name := range names {
		ok, msg := pollUntil(30*time.Second-time.Since(stopped), func() (bool, string) {
			l, err := admins[name].CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			server := make([]metav1.Object, len(l.Items))
			want := map[string]version{}
			for n := range l.Items {
				server[n] = &l.Items[n]
				want[keyOf(&l.Items[n])] = version{l.Items[n].UID, l.Items[n].ResourceVersion}
			}
			lister, attached := cms.Lister().Cluster(name)
			if !attached {
				return false, "not attached"
			}
			got := map[string]version{}
			for cm := range lister.All() {
				got[keyOf(cm)] = version{cm.UID, cm.ResourceVersion}
			}
			if !maps.Equal(want, got) {
				return false, fmt.Sprintf("cache has %d objects, server %d, or versions differ", len(got), len(want))
			}
			return trackers.of(name).converged(server)
		})
		require.True(t, ok, "cluster %s did not converge within 30s of the churn's end: %s", name, msg)
	}
	t.Logf("converged %v after the churn stopped; writes: east %d, west %d, north %d", time.Since(stopped).Round(time.Millisecond),
		churn["east"].Writes(), churn["west"].Writes(), churn["north"].Writes())
}
