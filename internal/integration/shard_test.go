package integration

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/shard"
)

// shardGate is the kube-apiserver feature gate of sharded list and watch,
// alpha since 1.36; older servers do not know it, and ignore shard
// selectors.
const shardGate = "ShardedListAndWatch"

// withShardGate is a control plane with the shard gate on where the
// server has it.
var withShardGate = testenv.Options{FeatureGates: map[string]bool{shardGate: true}}

// shardFilterOn returns where env filters the shards of built-in
// resources: on the server where its gate is on, else on the client.
func shardFilterOn(env *testenv.Env) shard.Filter {
	if env.FeatureEnabled(shardGate) {
		return shard.FilterServer
	}
	return shard.FilterClient
}

// servedShardFilters memoizes servedShardFilter by control plane.
var servedShardFilters sync.Map // of *testenv.Env to shard.Filter

// servedShardFilter returns where the shards of config maps are filtered
// when env serves them: on the server if its lists with a shard selector
// carry shardInfo and its watches with one leave out the objects outside
// the shard, on the client if its lists carry none. That is
// shardFilterOn(env) when the watch cache serves them. A 1.36 server
// without one (the fault matrix's etcd server) filters its lists but not
// its watches: an informer filters on the server until an object outside
// its shard arrives on a watch, then on the client, and
// servedShardFilter returns FilterUnknown.
func servedShardFilter(t *testing.T, env *testenv.Env) shard.Filter {
	t.Helper()
	if f, ok := servedShardFilters.Load(env); ok {
		return f.(shard.Filter)
	}
	ctx := testutil.Context(t, time.Minute)
	cs := clientset(t, env.Config())
	ns := testutil.Namespace(t, cs)
	half := shard.Of(shard.ByUID, 0, 2)
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: half.Selector()})
	require.NoError(t, err)
	filter := shard.FilterClient
	if l.ShardInfo != nil {
		// Config maps are created until one in the shard follows one
		// outside it: a watch that filters sends the latter first.
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ShardSelector: half.Selector(), ResourceVersion: l.ResourceVersion})
		require.NoError(t, err)
		defer w.Stop()
		var outside bool
		var last string
		for i := 0; last == ""; i++ {
			cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i)}}, metav1.CreateOptions{})
			require.NoError(t, err)
			if !half.Contains(cm) {
				outside = true
			} else if outside {
				last = cm.Name
			}
		}
	probe:
		for filter = shard.FilterNone; filter == shard.FilterNone; {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(t, ok, "the probe's watch ended")
				cm, ok := ev.Object.(*corev1.ConfigMap)
				require.True(t, ok, "the probe's watch sent %v", ev.Object)
				switch {
				case !half.Contains(cm):
					filter = shard.FilterUnknown // lists filtered, watches not
					break probe
				case cm.Name == last:
					filter = shard.FilterServer
				}
			case <-ctx.Done():
				t.Fatal("the probe's watch sent no event of its config maps")
			}
		}
	}
	t.Logf("kube-apiserver %s serves config maps with shards filtered on the %s", env.Server().Version, map[shard.Filter]string{
		shard.FilterServer: "server", shard.FilterClient: "client", shard.FilterUnknown: "server in lists, on the client in watches"}[filter])
	servedShardFilters.Store(env, filter)
	return filter
}

// The server's shard selector and the client's hash agree bit for bit:
// each quarter of the hash space, by UID and by namespace, lists exactly
// the objects shard.Hash puts there. A server without the gate ignores
// the selector and lists everything, without shardInfo, and the client's
// quarters, which filter for it, split the objects exactly.
func TestShardHashMatchesServer(t *testing.T) {
	env := testenv.New(t, withShardGate)
	filtered := shardFilterOn(env) == shard.FilterServer
	t.Logf("kube-apiserver %s, %s filters shards", env.Server().Version, shardFilterOn(env))
	cs := clientset(t, env.Config())
	ctx := testutil.Context(t, 2*time.Minute)
	var namespaces []string
	for range 4 {
		namespaces = append(namespaces, testutil.Namespace(t, cs))
	}
	for i := range 200 {
		_, err := cs.CoreV1().ConfigMaps(namespaces[i%4]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	all, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, field := range []shard.Field{shard.ByUID, shard.ByNamespace} {
		total := 0
		for i := range 4 {
			quarter := shard.Of(field, i, 4)
			got, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{ShardSelector: quarter.Selector()})
			require.NoError(t, err)
			var want, mine []types.UID
			for _, cm := range all.Items {
				if quarter.Contains(&cm) {
					want = append(want, cm.UID)
				}
			}
			if filtered {
				require.NotNil(t, got.ShardInfo, "the gate is on")
				mine = uids(got.Items)
			} else {
				require.Nil(t, got.ShardInfo, "the server has no gate")
				require.ElementsMatch(t, uids(all.Items), uids(got.Items), "the server ignores the selector")
				for _, cm := range got.Items {
					if quarter.Contains(&cm) {
						mine = append(mine, cm.UID)
					}
				}
			}
			assert.ElementsMatch(t, want, mine, "%s, shard %d", field, i)
			total += len(mine)
		}
		assert.Equal(t, len(all.Items), total, field)
	}
}

func uids(cms []corev1.ConfigMap) []types.UID {
	out := make([]types.UID, len(cms))
	for i, cm := range cms {
		out[i] = cm.UID
	}
	return out
}

// With the gate on, three sharded informers over 3 000 config maps receive
// only their shards from the server; together they hold the server's set,
// each object once, through creates, deletes and delete-recreate churn. A
// server without the gate (before 1.36) ignores the shard selectors the
// informers send: they find no shardInfo in its lists and filter on the
// client, with the same sets.
func TestShardsServerFiltered(t *testing.T) {
	env := testenv.New(t, withShardGate)
	testShards(t, env, shardFilterOn(env))
}

// With the gate off (the default), or on a server without it, the server
// sends everything and the client filter gives the same sets.
func TestShardsClientFiltered(t *testing.T) {
	testShards(t, testenv.Shared(t), shard.FilterClient)
}

func testShards(t *testing.T, env *testenv.Env, filter shard.Filter) {
	testutil.NoLeaks(t)
	cs := clientset(t, env.Config())
	ns := testutil.Namespace(t, cs)
	ctx := testutil.Context(t, 5*time.Minute)
	const count, replicas = 3000, 3
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("cm-%04d", i)
	}
	require.NoError(t, parallel(count, 16, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(names[i]), metav1.CreateOptions{})
		return err
	}))

	type replica struct {
		inf   *informers.SharedInformer[*corev1.ConfigMap]
		owned *ownedSet
	}
	var rs []replica
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: env.Config(), Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	for i := range replicas {
		mine := shard.Of(shard.ByUID, i, replicas)
		inf := informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{Shard: &mine})
		owned := newOwnedSet()
		_, err := inf.AddHandler(owned)
		require.NoError(t, err)
		rs = append(rs, replica{inf, owned})
	}
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))

	check := func() (bool, string) {
		server, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		want := map[types.UID]string{}
		for _, cm := range server.Items {
			want[cm.UID] = cm.ResourceVersion
		}
		union := map[types.UID]int{}
		for i, r := range rs {
			cached := map[types.UID]string{}
			for cm := range r.inf.Lister().All() {
				if j, dup := union[cm.UID]; dup {
					return false, fmt.Sprintf("%s/%s in shards %d and %d", ns, cm.Name, j, i)
				}
				cached[cm.UID] = cm.ResourceVersion
				union[cm.UID] = i
			}
			if handled := r.owned.snapshot(); !maps.Equal(handled, cached) {
				return false, fmt.Sprintf("shard %d: the handler saw %d objects, the cache holds %d", i, len(handled), len(cached))
			}
		}
		for uid := range want {
			if _, ok := union[uid]; !ok {
				return false, fmt.Sprintf("%s is on the server and in no shard", uid)
			}
		}
		if len(union) != len(want) {
			return false, fmt.Sprintf("the shards hold %d objects, the server %d", len(union), len(want))
		}
		return true, ""
	}
	converged := func(what string) {
		t.Helper()
		ok, msg := pollUntil(time.Minute, check)
		require.True(t, ok, "%s: %s", what, msg)
	}
	converged("after the initial sync")
	for i, r := range rs {
		n := r.inf.Lister().Len()
		assert.InDelta(t, count/replicas, n, count/replicas/5, "shard %d holds about a third", i)
	}

	// Churn: deletes, creates, and deletes with recreation under the same
	// name (a new UID, which may fall in another shard).
	require.NoError(t, parallel(900, 16, func(i int) error {
		configMaps := cs.CoreV1().ConfigMaps(ns)
		switch n := i / 3; i % 3 {
		case 0:
			return configMaps.Delete(ctx, names[n], metav1.DeleteOptions{})
		case 1:
			_, err := configMaps.Create(ctx, configMap(fmt.Sprintf("new-%04d", n)), metav1.CreateOptions{})
			return err
		default:
			if err := configMaps.Delete(ctx, names[1000+n], metav1.DeleteOptions{}); err != nil {
				return err
			}
			_, err := configMaps.Create(ctx, configMap(names[1000+n]), metav1.CreateOptions{})
			return err
		}
	}))
	converged("after churn")

	var received uint64
	for i, r := range rs {
		st := r.inf.Shard()
		assert.Equal(t, filter, st.Filter, "shard %d", i)
		received += st.Received
		if filter == shard.FilterServer {
			assert.Zero(t, st.Dropped, "shard %d: the server sent only the shard", i)
		} else {
			assert.GreaterOrEqual(t, st.Received, uint64(count), "shard %d: the server sent everything", i)
			assert.InDelta(t, float64(st.Received)*2/3, float64(st.Dropped), float64(st.Received)/6, "shard %d drops the other two thirds", i)
		}
		t.Logf("shard %d: filter %s, holds %d, received %d, dropped %d", i, st.Filter, r.inf.Lister().Len(), st.Received, st.Dropped)
	}
	if filter == shard.FilterServer {
		// 3 000 listed once, plus the churn's 1 500 events, across shards.
		assert.Less(t, received, uint64(count+2000), "the replicas together received each object about once")
	}
}

// pollUntil polls check until it holds or d has passed, and returns its
// last result.
func pollUntil(d time.Duration, check func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(d)
	for {
		ok, msg := check()
		if ok || time.Now().After(deadline) {
			return ok, msg
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
}

// ownedSet is a handler that keeps the UIDs and versions of the objects
// it was told about and not told are gone: what its replica owns.
type ownedSet struct {
	mu   sync.Mutex
	objs map[types.UID]string
	left int
}

func newOwnedSet() *ownedSet { return &ownedSet{objs: map[types.UID]string{}} }

func (o *ownedSet) HandleAdd(cm *corev1.ConfigMap, _ bool) { o.put(cm) }
func (o *ownedSet) HandleUpdate(_, cm *corev1.ConfigMap)   { o.put(cm) }
func (o *ownedSet) HandleDelete(d informers.Deleted[*corev1.ConfigMap]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.objs, d.Object.UID)
	if d.LeftShard {
		o.left++
	}
}

func (o *ownedSet) put(cm *corev1.ConfigMap) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.objs[cm.UID] = cm.ResourceVersion
}

func (o *ownedSet) snapshot() map[types.UID]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.objs)
}
