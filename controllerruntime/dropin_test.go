package controllerruntime_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testutil"
)

// TestExtraCacheRunsWithoutLeadership adds a second cache to a manager that
// is not the leader, the way a controller runs caches for other clusters or
// namespaces: the cache runs and syncs on every replica, as
// controller-runtime's own caches do.
func TestExtraCacheRunsWithoutLeadership(t *testing.T) {
	env, cs := sharedServer(t)
	ctx := testutil.Context(t, 2*time.Minute)
	ns := testutil.Namespace(t, cs)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extra"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Another replica holds the lease for an hour.
	_, err = cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("another-replica"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	mgr := newManager(t, env.Config(), manager.Options{
		LeaderElection:          true,
		LeaderElectionID:        "leader",
		LeaderElectionNamespace: ns,
	})
	extra, err := controllerruntime.NewCache(env.Config(), cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	require.NoError(t, err)
	runnable, ok := extra.(manager.LeaderElectionRunnable)
	require.True(t, ok, "the cache is a manager.LeaderElectionRunnable")
	assert.False(t, runnable.NeedLeaderElection())
	_, err = extra.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	require.NoError(t, err)
	require.NoError(t, mgr.Add(extra))
	startUntilCleanup(t, mgr, "the manager")

	require.True(t, extra.WaitForCacheSync(ctx), "the extra cache syncs on a replica that is not the leader")
	var cm corev1.ConfigMap
	require.NoError(t, extra.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extra"}, &cm))
	select {
	case <-mgr.Elected():
		t.Fatal("the manager was elected; the test needs it not to be")
	default:
	}
}

// TestClusterScopedIgnoresDefaultNamespaces checks that cluster-scoped
// types take no setting of DefaultNamespaces, not even of its
// AllNamespaces entry: its label selector does not filter nodes, and its
// field selector on metadata.namespace, which nodes do not have, does not
// keep their informer from syncing.
func TestClusterScopedIgnoresDefaultNamespaces(t *testing.T) {
	env, cs := sharedServer(t)
	ctx := testutil.Context(t, 2*time.Minute)
	ns := testutil.Namespace(t, cs)
	var nodes []string
	for i, lbl := range []map[string]string{{"pick": "yes"}, nil} {
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			GenerateName: fmt.Sprintf("dropin-%d-", i), Labels: lbl,
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
		nodes = append(nodes, node.Name)
	}
	tests := []struct {
		name string
		all  cache.Config
	}{
		{name: "label selector", all: cache.Config{LabelSelector: labels.SelectorFromSet(labels.Set{"pick": "yes"})}},
		{name: "field selector on metadata.namespace", all: cache.Config{FieldSelector: fields.OneTermNotEqualSelector("metadata.namespace", "kube-system")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := controllerruntime.New(env.Config(), cache.Options{DefaultNamespaces: map[string]cache.Config{
				cache.AllNamespaces: tt.all,
				ns:                  {},
			}})
			require.NoError(t, err)
			startCache(t, c)
			require.True(t, c.WaitForCacheSync(ctx))
			var list corev1.NodeList
			require.NoError(t, c.List(ctx, &list), "nodes listed")
			var names []string
			for _, n := range list.Items {
				names = append(names, n.Name)
			}
			assert.Subset(t, names, nodes, "every node, unfiltered")
		})
	}
}

// TestMultiNamespaceSyncedChecker checks the checkers of an informer and of
// a handler registration that span several namespaces: each is one
// checker, done at once when taken after sync, and calls before sync
// start no goroutine each.
func TestMultiNamespaceSyncedChecker(t *testing.T) {
	env, cs := sharedServer(t)
	ctx := testutil.Context(t, 2*time.Minute)
	ns1, ns2 := testutil.Namespace(t, cs), testutil.Namespace(t, cs)
	c, err := controllerruntime.New(env.Config(), cache.Options{DefaultNamespaces: map[string]cache.Config{ns1: {}, ns2: {}}})
	require.NoError(t, err)

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	require.NoError(t, err)
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	for range 10_000 {
		select {
		case <-inf.HasSyncedChecker().Done():
			t.Fatal("informer checker done before the cache started")
		case <-reg.HasSyncedChecker().Done():
			t.Fatal("registration checker done before the cache started")
		default:
		}
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+10, "at most one waiting goroutine per checker, not one per call")
	assert.Same(t, inf.HasSyncedChecker(), inf.HasSyncedChecker(), "one checker per informer")
	assert.Same(t, reg.HasSyncedChecker(), reg.HasSyncedChecker(), "one checker per registration")

	startCache(t, c)
	require.True(t, c.WaitForCacheSync(ctx))
	testutil.EventuallyWithin(t, time.Minute, reg.HasSynced, "handler synced")
	for name, checker := range map[string]toolscache.DoneChecker{"informer": inf.HasSyncedChecker(), "registration": reg.HasSyncedChecker()} {
		select {
		case <-checker.Done():
		default:
			t.Errorf("the %s checker, taken after sync, is not done", name)
		}
	}

	// A registration made after sync: its checker is done as soon as its
	// handler has seen the initial state.
	late, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	testutil.EventuallyWithin(t, time.Minute, late.HasSynced, "late handler synced")
	select {
	case <-late.HasSyncedChecker().Done():
	default:
		t.Error("a late registration's checker, taken after its sync, is not done")
	}
}
