package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/shard"
)

// convergeWithin bounds how long, once a fault has ended and the churn
// has stopped, every cache may take to equal the server's state and every
// handler's view to equal its cache. Informers retry within a second
// (fastBackoff); what takes longer is stuck, not slow.
const convergeWithin = 30 * time.Second

// faultWait bounds each step of a fault's run: the informers' initial
// sync, a number of writes of the churn, and waiting until every informer
// has met the fault.
const faultWait = time.Minute

// TestFaultMatrix runs every combination of the informer options that
// change how a cache is filled (see matrixCombos), for config maps and for
// a custom resource, typed, unstructured and as views (see
// matrixResources), through each fault an informer meets in production
// (see matrixServers), with churn before, during and after the fault.
// After each fault, within convergeWithin, every cache must hold exactly
// the server's objects (of its selection and shard), by UID and resource
// version, a view's fields equal to the server object's, and every
// handler's events, replayed, must give its cache. docs/testing.md
// describes it.
//
// For each fault, all combinations run at once, each informer in a
// factory of its own with a transport of its own (faults), in a namespace
// of the fault's, against a control plane with kube-apiserver's
// ShardedListAndWatch gate on, so that the server filters shards; a server
// without the gate (before 1.36) ignores shard selectors, and the sharded
// informers filter on the client.
func TestFaultMatrix(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := testutil.Context(t, 15*time.Minute)
	for _, server := range matrixServers() {
		t.Run(server.name, func(t *testing.T) {
			env := testenv.New(t, server.opts)
			dyn, err := dynamic.NewForConfig(env.Config())
			require.NoError(t, err)
			createGadgetCRDIn(t, dyn, ctx, matrixGadgets.Group)
			for _, fault := range server.faults {
				t.Run(fault.name, func(t *testing.T) {
					start := time.Now()
					r := startMatrix(t, ctx, env)
					fault.inject(t, r)
					r.churned(t, 30) // and after it
					writes := r.stopChurn()
					r.converge(t)
					t.Logf("%s: %d informers through %d writes in %v", fault.name, len(r.informers), writes, time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}

// matrixServer is a control plane and the faults run on it, one after
// the other.
type matrixServer struct {
	name   string
	opts   testenv.Options
	faults []matrixFault
}

// matrixFault is a fault and how to inject it into a matrix run.
type matrixFault struct {
	name   string
	inject func(t *testing.T, r *matrixRun)
}

// matrixServers are the control planes of the matrix and their faults.
func matrixServers() []matrixServer {
	gates := withShardGate.FeatureGates
	return []matrixServer{
		{
			name: "watchcache", // objects served by kube-apiserver's watch cache, as usual
			opts: testenv.Options{FeatureGates: gates},
			faults: []matrixFault{
				{"closed-watch", closeWatches},
				{"watch-410", expireWatches},
				{"failing-list", failLists},
				{"throttling", throttleRequests},
				{"apiserver-kill", killAPIServer},
			},
		},
		{
			// Objects served by etcd, for 410s after a compaction.
			// kube-apiserver has no watch cache size for a custom
			// resource (it ignores --watch-cache-sizes for them), so
			// the watch cache is off for every resource.
			name: "etcd",
			opts: testenv.Options{FeatureGates: gates, UncachedResources: []string{"configmaps"}, APIServerArgs: []string{"--watch-cache=false"}},
			faults: []matrixFault{
				{"compaction", compactPastInformers},
			},
		},
	}
}

// compactPastInformers cuts every informer off the server, lets the churn
// go on, compacts etcd at its current revision and lets them back: the
// version each informer is at is compacted, and on a control plane
// without watch cache both a watch and a list at it fail with 410 Gone.
func compactPastInformers(t *testing.T, r *matrixRun) {
	r.churned(t, 20)
	for _, m := range r.informers {
		m.faults.Cut()
	}
	r.waitAll(t, "every informer has been refused", func(m *matrixInformer) bool { return m.faults.stats().refused > 0 })
	at := map[*matrixInformer]string{}
	for _, m := range r.informers {
		at[m] = m.inf.LastSyncResourceVersion()
	}
	r.churned(t, 50)
	server, err := r.admin.CoreV1().ConfigMaps(r.ns).List(r.ctx, metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NoError(t, r.env.Compact(r.ctx))
	for _, m := range r.informers {
		require.True(t, rvLess(at[m], server.ResourceVersion), "%s: at version %s, not behind the compaction at %s", m, at[m], server.ResourceVersion)
		m.faults.Heal()
	}
}

// closeWatches ends every informer's watch cleanly, as the server does at
// a watch's timeout, three times, each time once all watch again.
func closeWatches(t *testing.T, r *matrixRun) {
	for range 3 {
		r.churned(t, 20)
		r.hitWatches(t, "watches again", func(*matrixInformer) {})
	}
}

// expireWatches ends every informer's watch and answers its next watch
// with 410 Gone, twice.
func expireWatches(t *testing.T, r *matrixRun) {
	for range 2 {
		r.churned(t, 20)
		r.hitWatches(t, "relisted after a 410 and watches again", func(m *matrixInformer) { m.faults.ExpireWatches(1) })
	}
}

// failLists makes every informer relist, by a 410 on its watch, and fails
// its next lists (or watch-list streams): one with 500, one broken off
// halfway, and, for informers with a page size, one with 500 on its
// second page and one whose continue token expires there.
func failLists(t *testing.T, r *matrixRun) {
	r.churned(t, 20)
	r.hitWatches(t, "relisted through failing lists and watches again", func(m *matrixInformer) {
		m.faults.ExpireWatches(1)
		m.faults.FailLists(failWithStatus, breakOff)
		if m.pageSize > 0 {
			m.faults.FailLists(failNextPage, expireNextPage)
		}
	})
}

// throttleRequests throttles every informer's requests, as API Priority
// and Fairness does a client over its share: its next watch is answered
// 429 Too Many Requests twice before it resumes; then, after a 410 on its
// watch, its relist (list or watch-list) twice.
func throttleRequests(t *testing.T, r *matrixRun) {
	r.churned(t, 20)
	r.hitWatches(t, "watches again through throttling", func(m *matrixInformer) { m.faults.ThrottleWatches(2) })
	r.churned(t, 20)
	r.hitWatches(t, "relisted through throttling and watches again", func(m *matrixInformer) {
		m.faults.ExpireWatches(1)
		m.faults.ThrottleLists(2)
	})
}

// killAPIServer kills kube-apiserver (kill -9) and starts it again: every
// connection dies, and the new server's watch cache starts past every
// version an informer saw (etcd moves on while it is down, as the other
// API servers of a cluster make it do), so that every watch resuming from
// one gets 410 Gone.
func killAPIServer(t *testing.T, r *matrixRun) {
	r.churned(t, 50)
	require.NoError(t, r.env.CrashAPIServer(r.ctx))
}

// matrixRun is the matrix running against one control plane, with churn.
type matrixRun struct {
	ctx       context.Context
	env       *testenv.Env
	admin     kubernetes.Interface
	dyn       dynamic.Interface
	ns        string
	informers []*matrixInformer
	churns    []*churner // of the config maps and of the gadgets
}

// startMatrix creates a namespace, its objects and the churn on them,
// then starts an informer of every combination there and waits until
// every handler has synced.
func startMatrix(t *testing.T, ctx context.Context, env *testenv.Env) *matrixRun {
	r := &matrixRun{ctx: ctx, env: env, admin: clientset(t, env.Config())}
	var err error
	r.dyn, err = dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	r.ns = testutil.Namespace(t, r.admin)
	seed := rand.Uint64()
	t.Logf("churn seed %d", seed)
	for _, target := range []churnTarget{configMapChurn{r.admin, r.ns}, gadgetChurn{r.dyn, matrixGadgets, r.ns}} {
		c, err := startChurnOf(ctx, target, seed)
		require.NoError(t, err)
		t.Cleanup(c.Stop) // if the test ends early
		r.churns = append(r.churns, c)
	}
	for i, c := range matrixCombos() {
		r.informers = append(r.informers, c.resource.start(t, env, r.ns, c, i))
	}
	syncCtx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	for _, m := range r.informers {
		m.waitForSync(t, syncCtx)
	}
	return r
}

// churned waits until each churn has written n more times.
func (r *matrixRun) churned(t *testing.T, n int64) {
	t.Helper()
	targets := make([]int64, len(r.churns))
	for i, c := range r.churns {
		targets[i] = c.Writes() + n
	}
	testutil.EventuallyWithin(t, faultWait, func() bool {
		for i, c := range r.churns {
			if c.Writes() < targets[i] {
				return false
			}
		}
		return true
	}, "the churn writes")
}

// stopChurn stops the churns and returns how many writes they made.
func (r *matrixRun) stopChurn() int64 {
	var writes int64
	for _, c := range r.churns {
		c.Stop()
		writes += c.Writes()
	}
	return writes
}

// hitWatches arms faults for every informer's next requests, ends every
// informer's watch, and waits until every informer has met its faults and
// watches again.
func (r *matrixRun) hitWatches(t *testing.T, what string, arm func(*matrixInformer)) {
	t.Helper()
	opened := map[*matrixInformer]int{}
	for _, m := range r.informers {
		opened[m] = m.faults.stats().opened
		arm(m)
		m.faults.EndWatches()
	}
	r.waitAll(t, what, func(m *matrixInformer) bool {
		s := m.faults.stats()
		return s.pending == 0 && s.opened > opened[m] && s.open > 0
	})
}

// waitAll waits until cond holds for every informer. Informers for which
// it does not within faultWait fail the test, which goes on to show how
// far they converge.
func (r *matrixRun) waitAll(t *testing.T, what string, cond func(*matrixInformer) bool) {
	t.Helper()
	var late []*matrixInformer
	pollUntil(faultWait, func() (bool, string) {
		late = late[:0]
		for _, m := range r.informers {
			if !cond(m) {
				late = append(late, m)
			}
		}
		return len(late) == 0, ""
	})
	for _, m := range late {
		t.Errorf("%s: not %s within %v: %s", m, what, faultWait, m.describe())
	}
}

// converge waits until every informer has converged on the server's
// state, or convergeWithin has passed, then reports each combination as a
// subtest of its own.
func (r *matrixRun) converge(t *testing.T) {
	t.Helper()
	start := time.Now()
	server := map[schema.GroupVersionResource][]metav1.Object{}
	results := map[*matrixInformer]string{}
	for _, m := range r.informers {
		results[m] = "never compared: the server's objects could not be listed"
		server[m.resource.gvr] = nil
	}
	pollUntil(convergeWithin, func() (bool, string) {
		for gvr := range server {
			l, err := r.dyn.Resource(gvr).Namespace(r.ns).List(r.ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			objs := make([]metav1.Object, len(l.Items))
			for i := range l.Items {
				objs[i] = &l.Items[i]
			}
			server[gvr] = objs
		}
		done := true
		for _, m := range r.informers {
			results[m] = m.check(server[m.resource.gvr])
			done = done && results[m] == ""
		}
		return done, ""
	})
	took := time.Since(start)
	var failed []string
	for _, m := range r.informers {
		t.Run(m.String(), func(t *testing.T) {
			t.Log(m.describe())
			if msg := results[m]; msg != "" {
				failed = append(failed, m.String())
				t.Errorf("not converged %v after the fault: %s", convergeWithin, msg)
			}
		})
	}
	if len(failed) > 0 {
		t.Logf("%d of %d combinations did not converge: %s", len(failed), len(r.informers), strings.Join(failed, " "))
		return
	}
	var objects []string
	for gvr, objs := range server {
		objects = append(objects, fmt.Sprintf("%d %s", len(objs), gvr.Resource))
	}
	slices.Sort(objects)
	t.Logf("all %d combinations converged on %s in %v", len(r.informers), strings.Join(objects, " and "), took.Round(time.Millisecond))
}

// combo is one combination of the options of the matrix.
type combo struct {
	resource  *matrixResource
	watchList bool         // initial state by watch-list streaming, not list
	pageSize  int64        // Options.PageSize; 0 is the default
	kind      informerKind // what else the informer does
	selected  bool         // a label selector, on selectedLabel
}

// informerKind is what an informer of the matrix does besides caching.
type informerKind string

const (
	plainInformer       informerKind = "plain"
	transformedInformer informerKind = "transformed" // Options.Transform
	undecodedInformer   informerKind = "undecoded"   // DisableDecoder: client-go decodes
	shardedInformer     informerKind = "sharded"     // Options.Shard: one of two
	// Options.NamespaceSelector, selecting its namespace by the label
	// every namespace has of its name, with a watch per namespace; and
	// with one cluster-wide watch filtered on the client.
	namespaceSelectedInformer            informerKind = "namespace-selected"
	namespaceSelectedClusterWideInformer informerKind = "namespace-selected-clusterwide"
)

// matrixPageSize is the explicit page size of the matrix: small, so that
// every list spans several pages.
const matrixPageSize = 7

// matrixCombos returns every combination: 3 × 2 × 2 × 6 × 2 of the
// resources that have every kind, and 2 × 2 × 2 × 5 × 2 of the views,
// which have no interned kind.
func matrixCombos() []combo {
	var out []combo
	for _, resource := range matrixResources() {
		for _, watchList := range []bool{false, true} {
			for _, pageSize := range []int64{0, matrixPageSize} {
				for _, kind := range []informerKind{plainInformer, transformedInformer, undecodedInformer, shardedInformer, namespaceSelectedInformer, namespaceSelectedClusterWideInformer} {
					if kind == undecodedInformer && resource.view {
						continue
					}
					for _, selected := range []bool{false, true} {
						if selected && resource.view {
							continue // a view selects as its full type does
						}
						out = append(out, combo{resource, watchList, pageSize, kind, selected})
					}
				}
			}
		}
	}
	return out
}

// String names the combination, as in
// "gadget-list-page7-sharded-selected".
func (c combo) String() string {
	parts := []string{c.resource.name, "list", "pagedefault", string(c.kind), "all"}
	if c.watchList {
		parts[1] = "watchlist"
	}
	if c.pageSize > 0 {
		parts[2] = fmt.Sprintf("page%d", c.pageSize)
	}
	if c.selected {
		parts[4] = "selected"
	}
	return strings.Join(parts, "-")
}

// matrixResource is a resource of the matrix, cached as one Go type.
type matrixResource struct {
	name   string // starts the names of its combinations
	gvr    schema.GroupVersionResource
	scheme *runtime.Scheme // FactoryOptions.Scheme; nil for a built-in type
	// shardFilter is where a sharded informer says its shard is
	// filtered when the server has the gate on (without it, the
	// client filters). kube-apiserver 1.37 filters custom resources too, but
	// does not echo the shard selector in their lists' shardInfo (it
	// sets it only on lists that implement metav1.ShardedListInterface,
	// which UnstructuredList does not): an informer of a custom
	// resource, typed or unstructured, whose streamed list's metadata
	// has no shardInfo, concludes that the client filters.
	shardFilter shard.Filter
	// view is set for a view of the resource (a matrixView), asked for by
	// its resource. The library's decoders are the only ones that decode
	// views (DisableDecoder cannot be set): a view has no interned
	// combination.
	view bool
	// start is startMatrixInformer of the Go type.
	start func(t *testing.T, env *testenv.Env, ns string, c combo, i int) *matrixInformer
}

// matrixGadgets is the group version of the matrix's custom resource,
// gadgets (see createGadgetCRDIn), which the server serves as JSON only.
var matrixGadgets = schema.GroupVersion{Group: "faults.example.com", Version: "v1"}

// matrixResources are the resources of the matrix: config maps, typed
// (decoded by the library's protobuf decoder) and as a view
// (configMapView, by its view decoder, from protobuf), and gadgets typed
// (decoded by the library's JSON decoder), unstructured (by its
// unstructured decoder) and as a view (gadgetView, a type the scheme does
// not know, whose kind discovery tells, decoded from JSON by the view's
// own plan).
func matrixResources() []*matrixResource {
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	gadgets := matrixGadgets.WithResource("gadgets")
	return []*matrixResource{
		{name: "configmap", gvr: configMaps, shardFilter: shard.FilterServer, start: startMatrixInformer[*corev1.ConfigMap]},
		{name: "gadget", gvr: gadgets, scheme: gadgetSchemeOf(matrixGadgets), shardFilter: shard.FilterClient, start: startMatrixInformer[*Gadget]},
		{name: "gadget-unstructured", gvr: gadgets, shardFilter: shard.FilterClient, start: startMatrixInformer[*unstructured.Unstructured]},
		{name: "configmap-view", gvr: configMaps, shardFilter: shard.FilterServer, view: true, start: startMatrixInformer[*configMapView]},
		{name: "gadget-view", gvr: gadgets, shardFilter: shard.FilterClient, view: true, start: startMatrixInformer[*gadgetView]},
	}
}

// sortedKeys returns m's keys in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
