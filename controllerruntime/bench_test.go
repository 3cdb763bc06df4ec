package controllerruntime_test

// BenchmarkCache puts controller-runtime's default cache beside ours on
// the same realistic pods in a real kube-apiserver and etcd; BENCHMARKS.md
// has the figures. It runs only with -bench and INFORMERS_E2E_BENCH set.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers/controllerruntime"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testenv"
)

// benchSpread is how the pods spread: over 50 namespaces (200 pods each at
// 10k, 2 000 at 100k) and 500 nodes, as in the root's BenchmarkQuery.
var benchSpread = bf.PodOptions{Namespaces: 50, Nodes: 500, Seed: 1}

// benchImpl is a cache under test and the protocol it must use to fill
// itself: "watch-list" (the initial state streamed by a watch) or "list"
// (a list, then a watch).
type benchImpl struct {
	name     string
	protocol string
	// gateOff turns client-go's WatchListClient feature gate off, which
	// controller-runtime's informers follow and ours do not.
	gateOff bool
	new     func(cfg *rest.Config) (crcache.Cache, error)
}

var (
	// benchCR is controller-runtime's cache as users get it: default
	// options (deep copies on read), client-go's gate at its default (on
	// in client-go v0.37), so watch-list streaming.
	benchCR = benchImpl{"controller-runtime", "watch-list", false, func(cfg *rest.Config) (crcache.Cache, error) {
		return crcache.New(cfg, crcache.Options{})
	}}
	// benchOurs is ours as users get it: the same options, watch-list
	// streaming.
	benchOurs = benchImpl{"informers", "watch-list", false, func(cfg *rest.Config) (crcache.Cache, error) {
		return controllerruntime.New(cfg, crcache.Options{})
	}}
	// benchCRList is controller-runtime's cache with the gate off: list,
	// then watch, as before client-go v0.35.
	benchCRList = benchImpl{"controller-runtime-list", "list", true, benchCR.new}
	// benchOursList is ours with watch-list off: list, then watch.
	benchOursList = benchImpl{"informers-list", "list", false, func(cfg *rest.Config) (crcache.Cache, error) {
		c, err := controllerruntime.New(cfg, crcache.Options{})
		if err != nil {
			return nil, err
		}
		controllerruntime.ListAndWatch(c)
		return c, nil
	}}
)

// BenchmarkCache measures controller-runtime's cache (cache.New, default
// options) and ours (New) on realistic pods created through a real
// kube-apiserver (internal/testenv, a control plane per size, objects
// created once per size), both over protobuf:
//
//	op=sync            from creating the cache, starting it and asking for
//	                   the Pod informer until it has synced (HasSynced,
//	                   polled every millisecond for both); B/op and
//	                   allocs/op count every goroutine's allocations;
//	                   retained-B/obj is the heap the synced cache holds
//	                   per pod (after two collections, above the heap
//	                   before it); peak-MB the highest heap during the sync
//	                   above the same baseline
//	op=list-namespace  List(&corev1.PodList{}, client.InNamespace(ns)) on a
//	                   synced cache, for the namespace of a random pod
//	op=list-index      List with client.MatchingFields{"spec.nodeName":
//	                   node} over an IndexField index, for the node of a
//	                   random pod, in all namespaces
//
// impl=controller-runtime and impl=informers are both caches as users get
// them; both stream their initial state with watch-list.
// impl=controller-runtime-list and impl=informers-list (op=sync only) list
// and then watch. Every sync checks, on the wire, which protocol was used.
// INFORMERS_E2E_BENCH=1 runs 10k pods, =large adds 100k.
func BenchmarkCache(b *testing.B) {
	mode := os.Getenv("INFORMERS_E2E_BENCH")
	if mode == "" {
		b.Skip("set INFORMERS_E2E_BENCH=1 (or large) to sync from a real kube-apiserver and etcd")
	}
	sizes := []int{10_000}
	if mode == "large" {
		sizes = append(sizes, 100_000)
	}
	for _, count := range sizes {
		// The parent of the sub-benchmarks runs once, -count or not: one
		// control plane and one set of pods per size.
		b.Run(fmt.Sprintf("pods=%d", count), func(b *testing.B) {
			env, cfg, picks := benchControlPlane(b, count)
			for _, impl := range []benchImpl{benchCR, benchOurs, benchCRList, benchOursList} {
				b.Run("op=sync/impl="+impl.name, func(b *testing.B) {
					benchSync(b, impl, env, cfg, count)
				})
			}
			for _, impl := range []benchImpl{benchCR, benchOurs} {
				benchLists(b, impl, cfg, picks)
			}
		})
	}
}

// benchControlPlane starts a control plane for the rest of b, creates
// count realistic pods in it and returns it, a protobuf client
// configuration for it and the reads to measure.
func benchControlPlane(b *testing.B, count int) (*testenv.Env, *rest.Config, []benchPick) {
	pods := bf.NewPodList(count, benchSpread)
	env := testenv.New(b, testenv.Options{})
	cfg := env.Config()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := bf.CreatePods(b.Context(), cs, pods, func(ns string) string { return ns }); err != nil {
		b.Fatal(err)
	}
	klog.Background().Info("Created the pods", "count", pods.Len(), "namespaces", benchSpread.Namespaces, "elapsed", time.Since(start).Round(time.Second))
	return env, cfg, benchPicks(pods)
}

// benchPick is what a read asks for: the namespace and the node of a pod,
// and how many pods each holds.
type benchPick struct {
	namespace, node     string
	inNamespace, onNode int
}

// benchPicks returns the namespaces and nodes of 1 024 random pods.
func benchPicks(pods *bf.PodList) []benchPick {
	byNS, byNode := map[string]int{}, map[string]int{}
	for i := range pods.Len() {
		ns, _ := pods.Key(i)
		byNS[ns]++
		byNode[pods.Node(i)]++
	}
	rng := rand.New(rand.NewPCG(7, 8))
	picks := make([]benchPick, 1024)
	for n := range picks {
		i := rng.IntN(pods.Len())
		ns, _ := pods.Key(i)
		picks[n] = benchPick{namespace: ns, node: pods.Node(i), inNamespace: byNS[ns], onNode: byNode[pods.Node(i)]}
	}
	return picks
}

// benchCache is a started cache whose Pod informer has synced.
type benchCache struct {
	crcache.Cache
	informer crcache.Informer
	stop     func() // stops the cache and waits for it
}

// benchStart creates a cache of impl over cfg, with the spec.nodeName index
// if index, starts it, asks for its Pod informer and waits until it has
// synced. It fails unless the cache used impl's protocol.
func benchStart(ctx context.Context, impl benchImpl, cfg *rest.Config, index bool) (*benchCache, error) {
	var wire benchWire
	c, err := impl.new(wire.watch(cfg))
	if err != nil {
		return nil, err
	}
	if index {
		if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", benchNodeName); err != nil {
			return nil, err
		}
	}
	// Our informers log the progress of long syncs; go test prints them
	// between a benchmark's name and its figures. Errors still show.
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, klog.FromContext(ctx).V(1)))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	bc := &benchCache{Cache: c, stop: func() { cancel(); <-done }}
	bc.informer, err = c.GetInformer(ctx, &corev1.Pod{}, crcache.BlockUntilSynced(false))
	if err == nil {
		err = bf.PollUntil(ctx, bc.informer.HasSynced)
	}
	if err == nil && wire.protocol() != impl.protocol {
		err = fmt.Errorf("%s synced by %s, not %s", impl.name, wire.protocol(), impl.protocol)
	}
	if err != nil {
		bc.stop()
		return nil, err
	}
	return bc, nil
}

// cached returns how many pods the cache holds.
func (c *benchCache) cached() int {
	return len(c.informer.(toolscache.SharedIndexInformer).GetStore().ListKeys())
}

func benchNodeName(obj client.Object) []string { return []string{obj.(*corev1.Pod).Spec.NodeName} }

// benchWire counts the requests for pods that go through a client
// configuration: lists, and watches that stream the initial state first
// (watch-list).
type benchWire struct{ lists, watchLists atomic.Int64 }

// watch returns cfg with its requests counted.
func (w *benchWire) watch(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
				q := req.URL.Query()
				switch {
				case q.Get("sendInitialEvents") == "true":
					w.watchLists.Add(1)
				case q.Get("watch") == "":
					w.lists.Add(1)
				}
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// protocol names what the requests so far did.
func (w *benchWire) protocol() string {
	lists, watchLists := w.lists.Load(), w.watchLists.Load()
	switch {
	case watchLists > 0 && lists == 0:
		return "watch-list"
	case lists > 0 && watchLists == 0:
		return "list"
	}
	return fmt.Sprintf("%d lists and %d watch-lists", lists, watchLists)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// benchGateOff turns client-go's WatchListClient gate off for the rest of
// b.
func benchGateOff(b *testing.B) {
	was := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	if err := bf.SetClientGoWatchList(false); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := bf.SetClientGoWatchList(was); err != nil {
			b.Error(err)
		}
	})
}

// benchSync measures impl's initial sync of count pods. Before each, the
// API server's heap is collected, as the client's is, so that no sync pays
// for the garbage of the one before.
func benchSync(b *testing.B, impl benchImpl, env *testenv.Env, cfg *rest.Config, count int) {
	if impl.gateOff {
		benchGateOff(b)
	}
	var retained, peak float64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := env.CollectAPIServerGarbage(b.Context()); err != nil {
			b.Fatal(err)
		}
		base := bf.LiveHeap()
		heap := bf.StartHeapPeak(time.Millisecond)
		b.StartTimer()
		c, err := benchStart(b.Context(), impl, cfg, false)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		peak += float64(heap.Stop()) - float64(base)
		if n := c.cached(); n != count {
			b.Fatalf("%s cached %d pods, not %d", impl.name, n, count)
		}
		retained += float64(bf.LiveHeap()) - float64(base)
		c.stop()
		b.StartTimer()
	}
	b.ReportMetric(retained/float64(b.N)/float64(count), "retained-B/obj")
	b.ReportMetric(bf.MB(peak/float64(b.N)), "peak-MB")
}

// benchLists measures the reads of a cache of impl with the
// spec.nodeName index, synced once for all of them on first use.
func benchLists(b *testing.B, impl benchImpl, cfg *rest.Config, picks []benchPick) {
	var c *benchCache
	var err error
	synced := func() (*benchCache, error) {
		if c == nil && err == nil {
			c, err = benchStart(b.Context(), impl, cfg, true)
		}
		return c, err
	}
	defer func() {
		if c != nil {
			c.stop()
		}
	}()
	reads := []struct {
		op   string
		opts func(benchPick) []client.ListOption
		want func(benchPick) int
	}{
		{"list-namespace",
			func(p benchPick) []client.ListOption { return []client.ListOption{client.InNamespace(p.namespace)} },
			func(p benchPick) int { return p.inNamespace }},
		{"list-index",
			func(p benchPick) []client.ListOption {
				return []client.ListOption{client.MatchingFields{"spec.nodeName": p.node}}
			},
			func(p benchPick) int { return p.onNode }},
	}
	for _, r := range reads {
		b.Run(fmt.Sprintf("op=%s/impl=%s", r.op, impl.name), func(b *testing.B) {
			c, err := synced()
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			for _, p := range picks[:8] {
				var pods corev1.PodList
				if err := c.List(ctx, &pods, r.opts(p)...); err != nil {
					b.Fatal(err)
				}
				if len(pods.Items) != r.want(p) {
					b.Fatalf("listed %d pods, not %d", len(pods.Items), r.want(p))
				}
			}
			listed := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p := picks[i%len(picks)]
				var pods corev1.PodList
				if err := c.List(ctx, &pods, r.opts(p)...); err != nil {
					b.Fatal(err)
				}
				listed += len(pods.Items)
			}
			b.ReportMetric(float64(listed)/float64(b.N), "pods/op")
		})
	}
}
