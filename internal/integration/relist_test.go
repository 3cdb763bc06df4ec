package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// A long disconnect past an etcd compaction forces a relist after 410:
// objects deleted meanwhile reach handlers as deletes with the final state
// unknown, changed ones as updates, unchanged ones not at all.
func TestRelistAfterCompaction(t *testing.T) {
	// Without the watch cache, a watch from a compacted version gets 410
	// from etcd at once.
	env, admin, ns, ctx := newServer(t, testenv.Options{UncachedResources: []string{"configmaps"}}, 2*time.Minute)
	const n = 30
	createNumbered(ctx, t, admin, ns, 0, n)

	net, inf, seen := trackThroughFaults(ctx, t, env, ns)
	before := seen.count()
	require.Equal(t, n, before, "the initial adds")

	net.Cut()
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return inf.LastError() != nil }, "the informer noticed the cut")
	for i := range 10 { // deleted while cut off
		require.NoError(t, admin.CoreV1().ConfigMaps(ns).Delete(ctx, fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}))
	}
	for i := 10; i < 15; i++ { // changed
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data = map[string]string{"changed": "yes"}
		_, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	createNumbered(ctx, t, admin, ns, n, n+5) // created
	require.NoError(t, env.Compact(ctx))
	net.Heal()

	testutil.EventuallyWithin(t, time.Minute, func() bool {
		ok, _ := seen.converged(serverConfigMaps(t, admin, ns))
		return ok
	}, "handler converged after the relist")
	seen.mu.Lock()
	defer seen.mu.Unlock()
	assert.Equal(t, 10, seen.unknowns, "deletes found by the relist")
	assert.Equal(t, 10+5+5, seen.events-before, "one event per deleted, changed and created object; none for the 15 unchanged")
	assert.Equal(t, n-10+5, inf.Lister().Len())
}

// Restarting kube-apiserver (its watch cache starts afresh) and then etcd,
// while a writer keeps changing objects, costs no event: informers resume
// or relist and converge on the server's state.
func TestRestarts(t *testing.T) {
	env, admin, ns, ctx := newServer(t, testenv.Options{}, 3*time.Minute)

	f := informers.NewFactoryWith(clientset(t, env.Config()), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	inf, seen, _ := trackConfigMaps(t, f)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))

	stop := make(chan struct{})
	writerDone := make(chan int)
	go func() {
		writes := 0
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- writes
				return
			default:
			}
			name := fmt.Sprintf("cm-%d", i%40)
			var err error
			switch (i / 40) % 3 {
			case 0:
				_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
			case 1:
				var cm *corev1.ConfigMap
				if cm, err = admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
					cm.Data = map[string]string{"i": fmt.Sprint(i)}
					_, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
				}
			case 2:
				if i%2 == 1 {
					continue
				}
				err = admin.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err == nil {
				writes++
			}
		}
	}()
	waitWrites := func(min int) {
		testutil.EventuallyWithin(t, 30*time.Second, func() bool { return seen.count() >= min }, "writes flow")
	}
	waitWrites(50)
	require.NoError(t, env.RestartAPIServer(ctx))
	waitWrites(seen.count() + 50)
	require.NoError(t, env.RestartEtcd(ctx))
	waitWrites(seen.count() + 50)
	close(stop)
	writes := <-writerDone
	t.Logf("%d writes, %d events, %d deletes found by relists", writes, seen.count(), seen.unknowns)

	testutil.EventuallyWithin(t, time.Minute, func() bool {
		ok, why := seen.converged(serverConfigMaps(t, admin, ns))
		if !ok {
			t.Log(why)
		}
		return ok
	}, "handler converged after the restarts")
	assert.Equal(t, len(serverConfigMaps(t, admin, ns)), inf.Lister().Len())
}
