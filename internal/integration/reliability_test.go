package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// An informer that synced on a namespace with nothing in it moves its
// resume point with the events that follow: after a disconnect it resumes
// from the last one, so a delete made meanwhile arrives, and objects that
// did not change are not delivered again.
func TestEmptyNamespaceResumes(t *testing.T) {
	env, admin, ns, ctx := sharedServer(t, 2*time.Minute)

	net, inf, seen := trackThroughFaults(ctx, t, env, ns)
	synced := inf.LastSyncResourceVersion()
	require.Zero(t, inf.Lister().Len())

	var last string
	for _, name := range []string{"a", "b"} {
		cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		last = cm.ResourceVersion
	}
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return inf.LastSyncResourceVersion() == last }, "the resume point follows the adds (synced at %s)", synced)
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return seen.count() == 2 }, "two adds delivered")

	net.Cut()
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return inf.LastError() != nil }, "the informer noticed the cut")
	require.NoError(t, admin.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{}))
	net.Heal()

	testutil.EventuallyWithin(t, time.Minute, func() bool {
		ok, _ := seen.converged(serverConfigMaps(t, admin, ns))
		return ok
	}, "the delete made while disconnected arrived")
	assert.Equal(t, 3, seen.count(), "two adds and the delete; b, unchanged, not delivered again")
	assert.Equal(t, 1, inf.Lister().Len())
}

// Release and Shutdown return only once the watch streams they stopped have
// ended: no goroutine decoding a stream outlives them.
func TestReleaseAndShutdownEndWatchStreams(t *testing.T) {
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ns := testutil.Namespace(t, admin)
	createConfigMaps(t, env, ns, 5)
	ctx := testutil.Context(t, time.Minute)
	for _, release := range []bool{true, false} {
		before := goleak.IgnoreCurrent()
		f := informers.NewFactoryWith(clientset(t, env.Config()), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
		cms := informers.Informer[*corev1.ConfigMap](f)
		informers.Informer[*corev1.Secret](f)
		runCtx, cancel := context.WithCancel(context.Background())
		f.Start(runCtx)
		require.NoError(t, informers.WaitForSync(ctx, f))
		if release {
			require.NoError(t, f.Release(ctx, cms))
		}
		require.NoError(t, f.Shutdown(ctx))
		cancel()
		goleak.VerifyNone(t, append(testutil.IdleConnections(), before)...)
	}
}
