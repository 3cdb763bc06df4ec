package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// A client-go style controller on the view of our informer handles a
// delete that happened while it was cut off: the relist after 410 delivers
// it as cache.DeletedFinalStateUnknown, which its DeleteFunc unwraps.
func TestClientGoControllerDeleteWhileDisconnected(t *testing.T) {
	env, admin, ns, ctx := newServer(t, testenv.Options{UncachedResources: []string{"configmaps"}}, 2*time.Minute)
	createNumbered(ctx, t, admin, ns, 0, 3)

	net, cfg := withFaults(env, "configmaps")
	f := informers.NewFactoryWith(clientset(t, cfg), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	informer := clientgo.SharedIndexInformer(informers.Informer[*corev1.ConfigMap](f))

	// The controller as client-go code writes it.
	var mu sync.Mutex
	var deleted, tombstones []string
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
				if !ok {
					t.Errorf("delete of %T", obj)
					return
				}
				tombstones = append(tombstones, tombstone.Key)
				cm = tombstone.Obj.(*corev1.ConfigMap)
			}
			deleted = append(deleted, cm.Name)
		},
	})
	require.NoError(t, err)
	lister := corelisters.NewConfigMapLister(informer.GetIndexer())
	testutil.StartFactory(t, f)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	got, err := lister.ConfigMaps(ns).Get("cm-0")
	require.NoError(t, err)
	assert.Equal(t, "cm-0", got.Name)

	require.NoError(t, admin.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-0", metav1.DeleteOptions{}))
	testutil.EventuallyWithin(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(deleted) == 1
	}, "the delete seen on the watch")

	net.Cut()
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return informer.Informer().LastError() != nil }, "the informer noticed the cut")
	require.NoError(t, admin.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-1", metav1.DeleteOptions{}))
	require.NoError(t, env.Compact(ctx))
	net.Heal()

	testutil.EventuallyWithin(t, time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(deleted) == 2
	}, "the delete found by the relist")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"cm-0", "cm-1"}, deleted)
	assert.Equal(t, []string{ns + "/cm-1"}, tombstones, "only the delete found by the relist is a tombstone")
	_, err = lister.ConfigMaps(ns).Get("cm-1")
	assert.Error(t, err)
	all, err := lister.ConfigMaps(ns).List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, all, 1)
}
