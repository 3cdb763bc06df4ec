//go:build k8s_v0_37

// Read-your-writes consistency came with controller-runtime v0.25
// (client.CacheOptions.EnableReadYourWritesConsistency); the adapter
// requires v0.24, so these tests build only with the k8s_v0_37 tag, which
// `make test-k8s-newest` sets on a copy of the module that requires the
// newest pair, k8s.io v0.37 and controller-runtime v0.25.

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

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
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

// controller-runtime's read-your-writes client keeps one resource version
// per kind, the highest any event carried: over a watch per namespace,
// whose versions interleave, it would take a write as cached before its
// event arrived. On a type watched per namespace the client's reads fail
// with an error that says what to do; with one cluster-wide watch they
// read every write.
func TestReadYourWritesWithNamespaceSelector(t *testing.T) {
	for _, mode := range []informers.NamespaceMode{informers.NamespaceModePerNamespace, informers.NamespaceModeClusterWide} {
		t.Run(mode.String(), func(t *testing.T) {
			env, cs := sharedServer(t)
			ctx := testutil.Context(t, 2*time.Minute)
			first, second, team := teamNamespaces(ctx, t, cs)
			setTeam(ctx, t, cs, second, team)
			mgr := newManager(t, env.Config(), manager.Options{
				NewCache: controllerruntime.NewCacheWithOptions(controllerruntime.Options{NamespaceSelector: "team=" + team, NamespaceMode: mode}),
				Client:   client.Options{Cache: &client.CacheOptions{EnableReadYourWritesConsistency: ptr.To(true)}},
			})
			c := mgr.GetClient()
			startManager(t, mgr)
			stale := 0
			for i := range 40 {
				ns := []string{first, second}[i%2]
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}}
				var got corev1.ConfigMap
				err := c.Create(ctx, cm)
				if err == nil {
					err = c.Get(ctx, client.ObjectKeyFromObject(cm), &got)
				}
				if mode == informers.NamespaceModePerNamespace {
					require.ErrorContains(t, err, "NamespaceModeClusterWide")
					return
				}
				require.NoError(t, err)
				if got.ResourceVersion != cm.ResourceVersion {
					stale++
				}
			}
			assert.Zero(t, stale)
		})
	}
}
