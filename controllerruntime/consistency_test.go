package controllerruntime_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubetyped/informers/internal/testutil"
)

// consistencyIterations is how many writes TestReadYourWritesConsistency
// reads back, with the option and without.
const consistencyIterations = 500

// controller-runtime's EnableReadYourWritesConsistency over our cache: its
// consistent client registers a handler on our informers and waits, before
// each read, until that handler has seen the versions its writes returned.
// Reads after creates, updates, status-less patches and deletes see them;
// the same reads with the option turned off per request often do not.
func TestReadYourWritesConsistency(t *testing.T) {
	env, admin := sharedServer(t)
	ns := testutil.Namespace(t, admin)
	mgr := newManager(t, env.Config(), manager.Options{
		Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Client: client.Options{Cache: &client.CacheOptions{EnableReadYourWritesConsistency: ptr.To(true)}},
	})
	c := mgr.GetClient()
	startManager(t, mgr)
	ctx := testutil.Context(t, 5*time.Minute)

	loop := func(prefix string, readOpts ...client.GetOption) (stale int) {
		for i := range consistencyIterations {
			key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i%20)}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}, Data: map[string]string{"i": strconv.Itoa(i)}}
			var err error
			switch {
			case i < 20:
				err = c.Create(ctx, cm)
			case i%2 == 0:
				err = c.Update(ctx, cm) // no version: an unconditional update
			default:
				err = c.Patch(ctx, cm, client.Merge)
			}
			require.NoError(t, err)
			var got corev1.ConfigMap
			if err := c.Get(ctx, key, &got, readOpts...); err != nil || got.ResourceVersion != cm.ResourceVersion {
				stale++
			}
		}
		return stale
	}
	plain := loop("plain", client.DisableReadYourWritesConsistency)
	consistent := loop("consistent")
	t.Logf("%d writes then reads through controller-runtime's client on our cache: %d stale without read-your-writes consistency, %d with it",
		consistencyIterations, plain, consistent)
	assert.Zero(t, consistent)

	// A list waits for every write of the kind; a read after a delete
	// finds the object gone.
	var list corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	assert.Len(t, list.Items, 40)
	for i := range 20 {
		key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("consistent-%d", i)}
		require.NoError(t, c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}))
		err := c.Get(ctx, key, &corev1.ConfigMap{})
		assert.True(t, apierrors.IsNotFound(err), "read after delete: %v", err)
	}
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	assert.Len(t, list.Items, 20)
}
