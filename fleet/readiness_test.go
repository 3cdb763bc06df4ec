package fleet_test

import (
	"maps"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/internal/testutil"
)

// WaitForSync waits for a sync: a cluster whose caches synced is not in
// its error once its server has gone away; ReadyCheck names it.
func TestWaitForSyncWaitsForASyncReadyCheckTellsHealth(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	reg, err := pods.AddHandler(&events{})
	require.NoError(t, err)
	east, west := newTestCluster(t, pod("a", "p", "n")), newTestCluster(t, pod("a", "p", "n"))
	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))
	require.NoError(t, fl.Attach(ctx, "west", west.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))

	west.pods.FailWatch(apierrors.NewServiceUnavailable("connection refused"))
	west.pods.FailList(apierrors.NewServiceUnavailable("connection refused"))
	west.pods.CloseWatches()
	ready := informers.ReadyCheck(fl)
	req := httptest.NewRequest("GET", "/readyz", nil)
	var notReady error
	eventually(t, func() bool {
		notReady = ready(req)
		return apierrors.IsServiceUnavailable(notReady)
	}, "west not ready, its lists refused")
	var se *fleet.SyncError
	require.ErrorAs(t, notReady, &se)
	assert.Equal(t, []string{"west"}, slices.Sorted(maps.Keys(se.Clusters)))

	assert.NoError(t, informers.WaitForSync(ctx, fl), "the fleet synced")
	assert.NoError(t, informers.WaitForSync(ctx, pods), "the informer synced")
	assert.NoError(t, informers.WaitForSync(ctx, reg), "the handler was delivered the initial state")
	assert.Error(t, ready(req), "west is still not ready")
}

// Synced of a fleet, a fleet informer and a registration gives one channel
// while their clusters stay the same, and starts no goroutine per call.
func TestSyncedOneChannelWhileClustersStay(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	reg, err := pods.AddHandler(&events{})
	require.NoError(t, err)
	east := newTestCluster(t, pod("a", "p", "n"))
	east.pods.FailList(apierrors.NewServiceUnavailable("not yet"))
	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))

	syncers := []informers.Syncer{fl, pods, reg}
	first := make([]<-chan struct{}, len(syncers))
	for k, s := range syncers {
		first[k] = s.Synced()
	}
	before := runtime.NumGoroutine()
	for range 10_000 {
		for k, s := range syncers {
			require.Equal(t, first[k], s.Synced(), "%v: one channel while the clusters stay", s)
		}
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+1, "no goroutine per call")

	west := newTestCluster(t, pod("b", "q", "n"))
	require.NoError(t, fl.Attach(ctx, "west", west.cluster()))
	for k, s := range syncers {
		assert.NotEqual(t, first[k], s.Synced(), "%v: a new cluster, a new channel", s)
	}
	east.pods.FailList(nil)
	for _, s := range syncers {
		select {
		case <-s.Synced():
		case <-ctx.Done():
			t.Fatalf("%v: Synced not closed after every cluster synced", s)
		}
	}
}
