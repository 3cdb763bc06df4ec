// Side-by-side benchmarks of this library and client-go v0.37.2, run in one
// `go test -bench` so that every figure is a ratio on one machine at one
// time (see BENCHMARKS.md and `make bench`). They only run with -bench.
// `make bench` runs them against client-go v0.37.2 with the k8s_v0_37 tag;
// a plain `go test -bench` in the repository compares with the client-go
// its go.mod requires, v0.36, without clientgo-typed, which needs v0.37
// (bench_clientgo_typed_test.go).
//
// Sub-benchmarks are named <Scenario>/<params>/impl=<impl>, where impl is
//
//	clientgo         client-go's SharedIndexInformer, untyped handlers and
//	                 readers (cache.ListAllByNamespace, Indexer.ByIndex...)
//	clientgo-typed   the same informer through client-go's typed wrappers:
//	                 cache.NewTypedSharedIndexInformer,
//	                 TypedResourceEventHandlerFuncs, and the generated
//	                 listers built on listers.ResourceIndexer
//	informers        ours, reading through slices (Lister.List, Index.List)
//	informers-iter   ours, reading through iterators (All, Select)
//	informers-strip  ours with the StripManagedFields transform
//	clientgo-strip   client-go with a transform that strips managedFields
//	floor            the least work possible: a map and a namespace (and
//	                 node) index under one mutex, handlers called directly
//	                 on the watch goroutine (internal/benchfixtures.Floor)
//
// Fairness rules:
//
//   - Same protocol. client-go v0.37.2 streams its initial state with
//     watch-list by default (the WatchListClient feature gate), and an
//     informer over a fake watcher that never sends the initial-events-end
//     bookmark would wait forever. So client-go runs with the gate off:
//     benchNewClientGo, which builds every client-go informer over a fake
//     watcher, and BenchmarkEndToEnd turn it off first (benchWatchListOff)
//     and fail if it is still on. Ours honours the gate too, and gets
//     ListWatch.DisableWatchList besides; BenchmarkEndToEnd turns the gate
//     on for the syncs of ours that stream.
//     Both list, then watch the same kind of fake watcher. The setting
//     holds from the first such benchmark to the end of the test binary;
//     the tests and examples, which run before any benchmark, keep
//     client-go's defaults.
//   - Same objects. Every implementation lists from the same Source
//     (benchSource, fixtures in internal/benchfixtures): the same list function returning fresh
//     objects and the same pre-built watch events.
//   - Same handler work. Handlers are written once (benchHandler)
//     and adapted to each API; client-go's untyped adapter does the type
//     assertions (and tombstone check) its users must write.
//   - Same indexes and resync: the namespace index everywhere, a node index
//     where queried; resync off, except ReadWrite, which keeps client-go's
//     60s (it never fires within a run).
//   - The fixture stays out of the measurement where it can: Update and
//     SlowHandler send pre-built objects through buffered fake watchers;
//     Relist starts its clock when the list function returns. InitialSync
//     counts making the fresh list (as a decoder would) for every
//     implementation alike: that is the job the floor is measured on.
//     ReadWrite copies client-go's BenchmarkSharedIndexInformer exactly,
//     fixture included, so that its figures compare with client-go's own.
//   - EndToEnd (opt-in) uses a real kube-apiserver: both sides get the same
//     protobuf clientset; ours is shown both as users get it (watch-list
//     streaming) and with list and watch like client-go.
//   - Memory: peak-MB is the highest heap (live objects and garbage not yet
//     collected, runtime/metrics /memory/classes/heap/objects:bytes,
//     sampled every millisecond) above the heap before the operation;
//     retained-MB is the heap after two collections with the cache still
//     alive, above the same baseline.
package informers_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8srand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testenv"
)

// benchSpread is how realistic pods spread: 50 namespaces over 500 nodes.
var benchSpread = bf.PodOptions{Namespaces: 50, Nodes: 500, Seed: 1}

var (
	benchListsMu sync.Mutex
	benchLists   = map[string]*bf.PodList{}
)

// benchPods returns the shared list of count realistic pods.
func benchPods(count int, managedFields bool) *bf.PodList {
	benchListsMu.Lock()
	defer benchListsMu.Unlock()
	key := fmt.Sprint(count, managedFields)
	if l := benchLists[key]; l != nil {
		return l
	}
	o := benchSpread
	o.ManagedFields = managedFields
	l := bf.NewPodList(count, o)
	benchLists[key] = l
	return l
}

// benchFresh returns a list function that returns all of l, fresh, for
// any request: a server that does not page.
func benchFresh(l *bf.PodList) func(metav1.ListOptions) (*corev1.PodList, error) {
	return func(metav1.ListOptions) (*corev1.PodList, error) { return l.Fresh(), nil }
}

// benchPageSize is the page size of every list of the decoded fixtures:
// client-go's and our reflector ask for 500 at resource version "0", and
// the floor asks for the same.
const benchPageSize = 500

var (
	benchWiresMu sync.Mutex
	benchWires   = map[string]*bf.WirePods{}
)

// benchWire returns the realistic pods of benchPods served encoded in enc
// and decoded afresh by client-go's codecs on every list.
func benchWire(b *testing.B, count int, managedFields bool, enc bf.Encoding) *bf.WirePods {
	b.Helper()
	benchWiresMu.Lock()
	defer benchWiresMu.Unlock()
	key := fmt.Sprint(count, managedFields, enc)
	if w := benchWires[key]; w != nil {
		return w
	}
	w, err := bf.NewWirePods(benchPods(count, managedFields), enc, benchPageSize)
	if err != nil {
		b.Fatal(err)
	}
	benchWires[key] = w
	return w
}

// benchEvents returns two modified versions of every pod of l, events[v][i]
// for v in 0 and 1, so that a benchmark can alternate them and every event
// is a change.
func benchEvents(l *bf.PodList) [2][]*corev1.Pod {
	var ev [2][]*corev1.Pod
	for v := range ev {
		ev[v] = make([]*corev1.Pod, l.Len())
		for i := range ev[v] {
			ev[v][i] = bf.Modified(l.Pod(i), 1_000_000*(v+1)+i)
		}
	}
	return ev
}

// benchStart builds a cache of impl over src, adds handlers, starts it and
// waits until it has synced. The caller stops it.
func benchStart(b *testing.B, impl benchImpl, src benchSource, o benchCacheOptions, handlers ...benchHandler) benchCache {
	b.Helper()
	c, err := impl.New(src, o)
	if err != nil {
		b.Fatal(err)
	}
	for _, h := range handlers {
		if _, err := c.AddHandler(h); err != nil {
			b.Fatal(err)
		}
	}
	c.Start()
	benchWait(b, c.HasSynced)
	return c
}

// benchWait waits until cond holds, checking every 50µs: often enough to
// add nothing measurable to runs of a second, seldom enough to leave the
// CPU to what is measured.
func benchWait(b *testing.B, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("timed out waiting")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// benchCounter is a counter on a cache line of its own, one per handler.
type benchCounter struct {
	atomic.Int64
	_ [56]byte
}

// staticWatch returns a Source watch function that always returns w.
func staticWatch(w watch.Interface) func() watch.Interface {
	return func() watch.Interface { return w }
}

// idleWatch is a Source watch function for caches that are only read.
func idleWatch() watch.Interface { return watch.NewFakeWithChanSize(1, false) }

// BenchmarkUpdate measures the event pipeline: a pre-built update sent
// through a buffered fake watch, applied to the cache, delivered to every
// handler. One op is one event; the loop waits, timed, until every handler
// has seen every event, so ns/op is the pipeline's throughput and allocs/op
// and B/op are per event. fixture=json sends JSON watch events of a
// custom resource, decoded on the way (see bench_update_json_test.go).
func BenchmarkUpdate(b *testing.B) {
	const count = 10_000
	pods := benchPods(count, false)
	events := benchEvents(pods)
	for _, handlers := range []int{1, 8} {
		for _, impl := range benchUpdateImpls {
			b.Run(fmt.Sprintf("pods=%d/handlers=%d/impl=%s", count, handlers, impl.Name), func(b *testing.B) {
				benchUpdate(b, impl, pods, events, handlers)
			})
		}
	}
	list, lines, err := benchJSONUpdateFixture(benchJSONUpdateCount)
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range benchJSONUpdates {
		b.Run(fmt.Sprintf("objects=%d/handlers=1/fixture=json/impl=%s", benchJSONUpdateCount, impl.name), func(b *testing.B) {
			benchUpdateJSON(b, impl, list, lines)
		})
	}
}

// benchUpdateImpls are the implementations BenchmarkUpdate measures on pods.
var benchUpdateImpls = []benchImpl{benchClientGoImpl, benchInformersImpl, benchFloorImpl}

func benchUpdate(b *testing.B, impl benchImpl, pods *bf.PodList, events [2][]*corev1.Pod, handlers int) {
	w := watch.NewFakeWithChanSize(1024, false)
	adds := make([]benchCounter, handlers)
	updates := make([]benchCounter, handlers)
	hs := make([]benchHandler, handlers)
	for i := range hs {
		hs[i] = benchHandler{
			Add:    func(*corev1.Pod) { adds[i].Add(1) },
			Update: func(_, _ *corev1.Pod) { updates[i].Add(1) },
		}
	}
	c := benchStart(b, impl, benchSource{List: benchFresh(pods), Watch: staticWatch(w)}, benchCacheOptions{}, hs...)
	defer c.Stop()
	caughtUp := func(counters []benchCounter, n int64) func() bool {
		return func() bool {
			for i := range counters {
				if counters[i].Load() < n {
					return false
				}
			}
			return true
		}
	}
	benchWait(b, caughtUp(adds, int64(pods.Len())))

	rng := rand.New(rand.NewPCG(1, 2))
	version := make([]uint8, pods.Len())
	b.ReportAllocs()
	for b.Loop() {
		k := rng.IntN(len(version))
		w.Modify(events[version[k]][k])
		version[k] ^= 1
	}
	b.StartTimer() // the events still in flight are part of the work
	benchWait(b, caughtUp(updates, int64(b.N)))
	b.StopTimer()
}

// benchReader is one way of reading a namespace, for ReadWrite: an
// implementation and how its users list a namespace.
type benchReader struct {
	name string
	impl benchImpl
	// reader returns a function that lists a namespace and returns how
	// many objects it saw.
	reader func(benchCache) func(ns string) int
}

var benchReaders = []benchReader{
	{"clientgo", benchClientGoImpl, func(c benchCache) func(string) int {
		indexer := c.(*benchClientGo).Informer.GetIndexer()
		return func(ns string) int {
			n := 0
			if err := cache.ListAllByNamespace(indexer, ns, labels.Everything(), func(any) { n++ }); err != nil {
				panic(err)
			}
			return n
		}
	}},
	{"informers", benchInformersImpl, func(c benchCache) func(string) int {
		lister := c.(*benchInformers).Informer.Lister()
		return func(ns string) int {
			return len(lister.Namespace(ns).List(labels.Everything()))
		}
	}},
	{"informers-iter", benchInformersImpl, func(c benchCache) func(string) int {
		lister := c.(*benchInformers).Informer.Lister()
		return func(ns string) int {
			n := 0
			for range lister.Namespace(ns).All() {
				n++
			}
			return n
		}
	}},
	{"floor", benchFloorImpl, func(c benchCache) func(string) int {
		floor := c.(*benchFloorCache)
		return func(ns string) int {
			n := 0
			floor.EachInNamespace(ns, func(*corev1.Pod) { n++ })
			return n
		}
	}},
}

// BenchmarkReadWrite is client-go's BenchmarkSharedIndexInformer
// (tools/cache/shared_informer_bench_test.go), same grid shape and fixture:
// minimal pods all in one namespace, updates of a random pod copied and
// sent through a fake watch of buffer 1 with at most 10 in flight, while
// readers list the namespace in a loop. It reports writes/s and reads/s.
// The handler is added before Start rather than after sync, so that the
// floor can take it too; the measured loop is the same.
func BenchmarkReadWrite(b *testing.B) {
	const ns = "default"
	rng := rand.New(rand.NewPCG(3, 4))
	for _, count := range []int{10_000, 100_000} {
		pods := bf.MinimalPods(count, ns, rng)
		for _, readers := range []int{0, 1, 10} {
			for _, r := range benchReaders {
				b.Run(fmt.Sprintf("pods=%d/readers=%d/impl=%s", count, readers, r.name), func(b *testing.B) {
					benchReadWrite(b, r, pods, ns, readers)
				})
			}
		}
	}
}

func benchReadWrite(b *testing.B, r benchReader, pods []corev1.Pod, ns string, readers int) {
	const queuedEvents = 10
	w := watch.NewFakeWithChanSize(1, false)
	var writes atomic.Int64
	got := make(chan struct{}, queuedEvents)
	h := benchHandler{Update: func(_, _ *corev1.Pod) {
		writes.Add(1)
		select {
		case <-got:
		default:
		}
	}}
	src := benchSource{List: func(metav1.ListOptions) (*corev1.PodList, error) { return &corev1.PodList{Items: pods}, nil }, Watch: staticWatch(w)}
	c := benchStart(b, r.impl, src, benchCacheOptions{Resync: time.Minute}, h)
	defer c.Stop()
	pod := pods[k8srand.Intn(len(pods))]
	w.Modify(&pod)
	benchWait(b, func() bool { return writes.Load() > 0 })

	read := r.reader(c)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var reads atomic.Int64
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				read(ns)
				reads.Add(1)
			}
		})
	}
	writes.Store(0)
	reads.Store(0)
	for b.Loop() {
		pod := pods[k8srand.Intn(len(pods))]
		w.Modify(&pod)
		got <- struct{}{}
	}
	b.ReportMetric(float64(reads.Load())/b.Elapsed().Seconds(), "reads/s")
	b.ReportMetric(float64(writes.Load())/b.Elapsed().Seconds(), "writes/s")
	close(stop)
	wg.Wait()
}

// benchSyncVariant is an implementation with the options it syncs with.
type benchSyncVariant struct {
	name string
	impl benchImpl
	opts benchCacheOptions
}

// benchSyncVariants are the variants of InitialSync: ours as users get it,
// client-go, the floor, and, for pods with managedFields, client-go and
// ours stripping them.
func benchSyncVariants(managedFields bool) []benchSyncVariant {
	v := []benchSyncVariant{
		{"clientgo", benchClientGoImpl, benchCacheOptions{}},
		{"informers", benchInformersImpl, benchCacheOptions{}},
		{"floor", benchFloorImpl, benchCacheOptions{}},
	}
	if managedFields {
		v = append(v,
			benchSyncVariant{"clientgo-strip", benchClientGoImpl, benchCacheOptions{StripManagedFields: true}},
			benchSyncVariant{"informers-strip", benchInformersImpl, benchCacheOptions{StripManagedFields: true}},
		)
	}
	return v
}

// BenchmarkInitialSync measures one full initial sync of realistic pods:
// from creating the cache until it has synced and a handler has been
// delivered every object. The list function makes fresh objects every time
// (its cost is part of every implementation's figure). Besides ns/op it
// reports peak-MB, retained-MB and retained-B/obj.
//
// fixture=decoded serves the pods as an API server does: encoded as
// protobuf (decoded-json: JSON) in pages of 500, decoded by client-go's
// codecs on every list, so no two objects share memory. fixture=copied
// deep-copies one template per deployment, whose strings the pods of a
// deployment then share, and returns the whole list at once. fixture=wire
// serves the same pages as fixture=decoded as bytes, which each
// implementation decodes its own way: client-go and the floor with
// client-go's codecs, ours with the library's decoder (see
// benchWireSyncVariants). fixture=json is a custom resource instead of
// pods, served as JSON by an HTTP server (see benchInitialSyncJSON).
//
// fixture=server serves pods with managedFields over HTTP, in protobuf,
// from an API server in this process, which every implementation reads
// by its real client path as the bytes arrive: a watch-list stream, lists
// in pages of 500, or a list answered whole (path=watchlist, list,
// list-pages=1), for client-go's informer of the clientset, our factory
// and our views; B/op counts the allocations of the client and of the
// server, which are few (see bench_server_test.go). Its counts are 10k and
// 100k, and 1M too when INFORMERS_BENCH_1M is set: the encoded pods alone
// take 5.4 GB then, beside the cache under test.
func BenchmarkInitialSync(b *testing.B) {
	for _, count := range []int{10_000, 100_000} {
		for _, managedFields := range []bool{false, true} {
			for _, fixture := range []string{"copied", "decoded", "decoded-json", "wire"} {
				if managedFields && fixture == "copied" && count > 10_000 || fixture == "decoded-json" && count > 10_000 {
					continue // retained-B/obj tells the same at 10k, in a tenth of the time
				}
				variants := benchSyncVariants(managedFields)
				if fixture == "wire" {
					variants = benchWireSyncVariants(managedFields)
				}
				for _, v := range variants {
					b.Run(fmt.Sprintf("pods=%d/managedFields=%v/fixture=%s/impl=%s", count, managedFields, fixture, v.name), func(b *testing.B) {
						benchInitialSync(b, v, benchSyncSource(b, fixture, count, managedFields), count)
					})
				}
			}
			benchInitialSyncJSON(b, count, managedFields)
		}
		benchInitialSyncServer(b, count)
	}
	if benchMillion() {
		benchInitialSyncServer(b, 1_000_000)
	}
}

// benchSyncSource is the source of fixture of BenchmarkInitialSync, made
// when a sub-benchmark first needs it (so that -bench runs only the
// fixtures it selects) and kept for the others.
func benchSyncSource(b *testing.B, fixture string, count int, managedFields bool) benchSource {
	src := benchSource{List: benchFresh(benchPods(count, managedFields)), Watch: idleWatch}
	switch fixture {
	case "decoded":
		src.List = benchWire(b, count, managedFields, bf.Protobuf).List
	case "decoded-json":
		src.List = benchWire(b, count, managedFields, bf.JSON).List
	case "wire":
		wire := benchWire(b, count, managedFields, bf.Protobuf)
		src.List, src.ListBytes = wire.List, wire.ListBytes
	}
	return src
}

func benchInitialSync(b *testing.B, v benchSyncVariant, src benchSource, count int) {
	benchMeasureSync(b, count, func(onAdd func()) (stop func()) {
		return benchStart(b, v.impl, src, v.opts, benchHandler{Add: func(*corev1.Pod) { onAdd() }}).Stop
	})
}

// benchMeasureSync measures syncs of count objects: start builds and
// starts a cache whose handler calls onAdd for every object, and returns
// how to stop it; a sync ends when onAdd has been called count times, and
// fails after benchSyncTimeout. It reports peak-MB, peak-live-MB,
// retained-MB and retained-B/obj.
func benchMeasureSync(b *testing.B, count int, start func(onAdd func()) (stop func())) {
	n := int64(count)
	// syncOnce builds and syncs a cache, sampling the heap meanwhile.
	syncOnce := func() (stop func(), peak, livePeak uint64) {
		var adds atomic.Int64
		all := make(chan struct{})
		heap := bf.StartHeapPeak(time.Millisecond)
		stop = start(func() {
			if adds.Add(1) == n {
				close(all)
			}
		})
		select {
		case <-all:
		case <-time.After(benchSyncTimeout):
			b.Fatalf("sync not done after %v: %d of %d objects added", benchSyncTimeout, adds.Load(), n)
		}
		peak = heap.Stop()
		return stop, peak, heap.LivePeak()
	}

	var peakSum, livePeakSum, retainedSum float64
	base := bf.LiveHeap()
	for b.Loop() {
		stop, peak, livePeak := syncOnce()
		b.StopTimer()
		peakSum += float64(peak) - float64(base)
		retained := float64(bf.LiveHeap()) - float64(base)
		retainedSum += retained
		// A sync short enough to need no collection kept nothing more
		// than it retains.
		livePeakSum += max(float64(livePeak)-float64(base), retained)
		stop()
		base = bf.LiveHeap()
		b.StartTimer()
	}
	iters := float64(b.N)
	b.ReportMetric(bf.MB(peakSum/iters), "peak-MB")
	b.ReportMetric(bf.MB(livePeakSum/iters), "peak-live-MB")
	b.ReportMetric(bf.MB(retainedSum/iters), "retained-MB")
	b.ReportMetric(retainedSum/iters/float64(n), "retained-B/obj")
}

// BenchmarkSyncScale measures how an initial sync grows with the number
// of objects: 10k, 100k and 1M small pods (a name and a namespace, the
// fixture of ReadWrite), served encoded as protobuf in pages of 500 and
// decoded afresh on every list. ns/obj and retained-B/obj should not grow
// with the count.
func BenchmarkSyncScale(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, count := range []int{10_000, 100_000, 1_000_000} {
		wire, err := bf.NewWireMinimalPods(count, "default", rng, bf.Protobuf, benchPageSize)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []benchImpl{benchClientGoImpl, benchInformersImpl, benchFloorImpl} {
			v := benchSyncVariant{impl.Name, impl, benchCacheOptions{}}
			b.Run(fmt.Sprintf("pods=%d/impl=%s", count, impl.Name), func(b *testing.B) {
				benchInitialSync(b, v, benchSource{List: wire.List, Watch: idleWatch}, count)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(count), "ns/obj")
			})
		}
	}
}

// BenchmarkQuery measures reads of a synced cache of 100k realistic pods in
// 50 namespaces on 500 nodes, with no writes: Get by key, List of one
// namespace (2 000 pods), lookup in an index by spec.nodeName (200 pods),
// and a label selector over all pods (matching 3 300). With
// INFORMERS_BENCH_1M set it measures a cache of 1M pods too (10 times as
// many per namespace and node; each cache takes about 11 GB then).
//
// Each cache is built when the first of its sub-benchmarks runs (a cache
// whose sub-benchmarks -bench leaves out is never built), read by its
// users' ways and stopped before the next, so that no two are alive at
// once. ns/op is the mean over random pods among 4 096; op=get also
// reports p50-ns and p99-ns, the latency of 100 000 single Gets of random
// pods among all, each timed on its own (the clock read it includes is
// benchGetLatency's clock-ns).
func BenchmarkQuery(b *testing.B) {
	counts := []int{100_000}
	if benchMillion() {
		counts = append(counts, 1_000_000)
	}
	for _, count := range counts {
		benchQueryCount(b, count)
	}
}

// benchQueryCache is a cache Query reads, the ways it is read and the ops
// each way has (known before the cache is built, and checked once it is),
// and how to read it.
type benchQueryCache struct {
	impl    benchImpl
	ways    map[string][]string
	queries func(pods *bf.PodList, sel labels.Selector, c benchCache) []benchQuery
}

// benchQueryCaches are the caches Query reads.
var benchQueryCaches = []benchQueryCache{
	{benchClientGoImpl, map[string][]string{
		"clientgo": {"get", "list-namespace", "index-node", "select-labels"},
	}, func(pods *bf.PodList, sel labels.Selector, c benchCache) []benchQuery {
		return benchClientGoQueries(pods, sel, c.(*benchClientGo))
	}},
	{benchInformersImpl, map[string][]string{
		"informers":      {"get", "list-namespace", "index-node", "select-labels"},
		"informers-iter": {"list-namespace", "index-node", "select-labels"},
	}, func(pods *bf.PodList, sel labels.Selector, c benchCache) []benchQuery {
		return benchInformersQueries(pods, sel, c.(*benchInformers))
	}},
	{benchFloorImpl, map[string][]string{
		"floor": {"get", "list-namespace", "index-node", "select-labels"},
	}, func(pods *bf.PodList, sel labels.Selector, c benchCache) []benchQuery {
		return benchFloorQueries(pods, sel, c.(*benchFloorCache))
	}},
}

// benchQueryCount runs Query on a cache of count pods.
func benchQueryCount(b *testing.B, count int) {
	var pods *bf.PodList
	if count <= 100_000 {
		pods = benchPods(count, false)
	} else {
		pods = bf.NewPodList(count, benchSpread) // shared with no one: not kept
	}
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/component": "api", "team": "team-3"})
	rng := rand.New(rand.NewPCG(5, 6))
	picks := make([]int, 4096)
	for i := range picks {
		picks[i] = rng.IntN(count)
	}
	src := benchSource{List: benchFresh(pods), Watch: idleWatch}
	for _, qc := range benchQueryCaches {
		var c benchCache
		var queries map[string]map[string]func(int) int // by way, then op
		for _, op := range []string{"get", "list-namespace", "index-node", "select-labels"} {
			for _, way := range slices.Sorted(maps.Keys(qc.ways)) {
				if !slices.Contains(qc.ways[way], op) {
					continue
				}
				b.Run(fmt.Sprintf("pods=%d/op=%s/impl=%s", count, op, way), func(b *testing.B) {
					if c == nil {
						c = benchStart(b, qc.impl, src, benchCacheOptions{NodeIndex: true})
						queries = map[string]map[string]func(int) int{}
						for _, q := range qc.queries(pods, sel, c) {
							got, want := slices.Sorted(maps.Keys(q.ops)), slices.Sorted(slices.Values(qc.ways[q.name]))
							if !slices.Equal(got, want) {
								b.Fatalf("%s has ops %v, described as %v", q.name, got, want)
							}
							queries[q.name] = q.ops
						}
					}
					query := queries[way][op]
					if query == nil {
						b.Fatalf("%s has no %s", way, op)
					}
					if query(picks[0]) == 0 {
						b.Fatalf("%s found nothing", op)
					}
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						query(picks[i&(len(picks)-1)])
						i++
					}
					if op == "get" {
						benchGetLatency(b, query, pods)
					}
				})
			}
		}
		if c != nil {
			c.Stop()
			// The next cache is built in the memory this one held, not
			// beside it.
			debug.FreeOSMemory()
		}
	}
}

// benchGetLatency reports the p50 and p99 of 100 000 single calls of get,
// each given a random pod of pods and timed on its own, as p50-ns and
// p99-ns, and what the timing itself takes, the median of timing nothing,
// as clock-ns. The pod's key is read before the clock starts, as a
// controller has the key it gets in hand: what is timed is the cache's
// lookup, not the fixture's.
func benchGetLatency(b *testing.B, get func(i int) int, pods *bf.PodList) {
	const samples = 100_000
	rng := rand.New(rand.NewPCG(7, 8))
	keys := make([]int, samples)
	for i := range keys {
		keys[i] = rng.IntN(pods.Len())
	}
	took := make([]time.Duration, samples)
	var touched int
	for i, k := range keys {
		ns, name := pods.Key(k)
		touched += int(ns[len(ns)-1]) + int(name[len(name)-1])
		start := time.Now()
		get(k)
		took[i] = time.Since(start)
	}
	if touched == 0 {
		b.Fatal("no key was read") // keeps the reads of the keys
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[samples/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[samples*99/100].Nanoseconds()), "p99-ns")
	for i := range took {
		start := time.Now()
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[samples/2].Nanoseconds()), "clock-ns")
}

// benchQuery is an implementation's way of doing each query: given the
// index of a random pod, a query reads what concerns that pod (itself, its
// namespace, its node) and returns how many objects it saw.
type benchQuery struct {
	name string
	ops  map[string]func(i int) int
}

// benchMust panics if err is not nil: the queries cannot fail.
func benchMust(err error) {
	if err != nil {
		panic(err)
	}
}

// benchOne counts the object of a Get.
func benchOne(_ *corev1.Pod, err error) int {
	benchMust(err)
	return 1
}

// benchLen counts the objects of a List.
func benchLen(objs []*corev1.Pod, err error) int {
	benchMust(err)
	return len(objs)
}

// benchSeqLen counts the objects of an iterator.
func benchSeqLen(seq func(func(*corev1.Pod) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// benchClientGoQueries are client-go users' ways of reading cg, untyped;
// the typed ones are in bench_clientgo_typed_test.go.
func benchClientGoQueries(pods *bf.PodList, sel labels.Selector, cg *benchClientGo) []benchQuery {
	indexer := cg.Informer.GetIndexer()
	// asserted is what client-go users do with []interface{}.
	asserted := func(objs []any, err error) int {
		benchMust(err)
		for _, o := range objs {
			_ = o.(*corev1.Pod)
		}
		return len(objs)
	}
	return []benchQuery{
		{"clientgo", map[string]func(int) int{
			"get": func(i int) int {
				ns, name := pods.Key(i)
				obj, _, err := indexer.GetByKey(ns + "/" + name)
				benchMust(err)
				return benchOne(obj.(*corev1.Pod), nil)
			},
			"list-namespace": func(i int) int {
				ns, _ := pods.Key(i)
				n := 0
				benchMust(cache.ListAllByNamespace(indexer, ns, labels.Everything(), func(o any) { _ = o.(*corev1.Pod); n++ }))
				return n
			},
			"index-node": func(i int) int { return asserted(indexer.ByIndex(benchNodeIndex, pods.Node(i))) },
			"select-labels": func(int) int {
				n := 0
				benchMust(cache.ListAll(indexer, sel, func(o any) { _ = o.(*corev1.Pod); n++ }))
				return n
			},
		}},
	}
}

// benchInformersQueries are our users' ways of reading ours: slices, and
// iterators.
func benchInformersQueries(pods *bf.PodList, sel labels.Selector, ours *benchInformers) []benchQuery {
	lister := ours.Informer.Lister()
	return []benchQuery{
		{"informers", map[string]func(int) int{
			"get": func(i int) int {
				ns, name := pods.Key(i)
				return benchOne(lister.Namespace(ns).Get(name))
			},
			"list-namespace": func(i int) int {
				ns, _ := pods.Key(i)
				return len(lister.Namespace(ns).List(labels.Everything()))
			},
			"index-node":    func(i int) int { return len(ours.Nodes.List(pods.Node(i))) },
			"select-labels": func(int) int { return len(lister.List(sel)) },
		}},
		{"informers-iter", map[string]func(int) int{
			"list-namespace": func(i int) int {
				ns, _ := pods.Key(i)
				return benchSeqLen(lister.Namespace(ns).All())
			},
			"index-node":    func(i int) int { return benchSeqLen(ours.Nodes.All(pods.Node(i))) },
			"select-labels": func(int) int { return benchSeqLen(lister.Select(sel)) },
		}},
	}
}

// benchFloorQueries read the floor.
func benchFloorQueries(pods *bf.PodList, sel labels.Selector, floor *benchFloorCache) []benchQuery {
	return []benchQuery{
		{"floor", map[string]func(int) int{
			"get": func(i int) int {
				p, _ := floor.Get(pods.Key(i))
				return benchOne(p, nil)
			},
			"list-namespace": func(i int) int {
				ns, _ := pods.Key(i)
				return len(floor.ListNamespace(ns))
			},
			"index-node": func(i int) int { return len(floor.ListNode(pods.Node(i))) },
			"select-labels": func(int) int {
				return len(floor.Select(func(p *corev1.Pod) bool { return sel.Matches(labels.Set(p.Labels)) }))
			},
		}},
	}
}

// BenchmarkRelist measures a relist of 100k synced pods after the watch
// fails with 410 Expired, when the new list holds the same objects (fresh
// copies, same resource versions) except for changed of them. ns/op is the
// informer's share: from the moment the list function returns to the
// moment a handler has been delivered everything up to an event sent on
// the new watch. Left out are the backoff before the relist (the same for
// both) and making the fresh list, whose time varies fivefold with the
// garbage collector's state and would drown the rest. notifications/op
// counts the handler calls the relist caused; peak-MB is the highest heap
// above the synced steady state during the relist, fresh list included,
// and retained-MB the heap after the relists above the steady state.
func BenchmarkRelist(b *testing.B) {
	const count = 100_000
	pods := benchPods(count, false)
	for _, changed := range []int{0, 1} {
		for _, impl := range []benchImpl{benchClientGoImpl, benchInformersImpl} {
			b.Run(fmt.Sprintf("pods=%d/changed=%d/impl=%s", count, changed, impl.Name), func(b *testing.B) {
				benchRelist(b, impl, pods, changed)
			})
		}
	}
}

// benchSentinelNS is the namespace of the objects that mark where a
// benchmark's events end; handlers do not count them.
const benchSentinelNS = "bench-sentinel"

func benchSentinel(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: benchSentinelNS, Name: fmt.Sprintf("sentinel-%d", i),
		UID: "sentinel", ResourceVersion: fmt.Sprint(10_000_000 + i),
	}}
}

func benchRelist(b *testing.B, impl benchImpl, pods *bf.PodList, changed int) {
	lists := make(chan time.Time, 4)
	watchers := make(chan *watch.FakeWatcher, 4)
	listed := 0
	src := benchSource{
		List: func(metav1.ListOptions) (*corev1.PodList, error) {
			l := pods.Fresh()
			listed++
			for i := range changed {
				l.Items[i].ResourceVersion = fmt.Sprint(20_000_000 + listed)
			}
			lists <- time.Now()
			return l, nil
		},
		Watch: func() watch.Interface {
			w := watch.NewFakeWithChanSize(16, false)
			watchers <- w
			return w
		},
	}
	var adds, notifications atomic.Int64
	sentinel := make(chan struct{}, 1)
	count := func(p *corev1.Pod) {
		if p.Namespace == benchSentinelNS {
			return
		}
		notifications.Add(1)
	}
	h := benchHandler{
		Add: func(p *corev1.Pod) {
			if p.Namespace == benchSentinelNS {
				sentinel <- struct{}{}
				return
			}
			adds.Add(1)
			count(p)
		},
		Update: func(_, p *corev1.Pod) { count(p) },
		Delete: count,
	}
	c := benchStart(b, impl, src, benchCacheOptions{}, h)
	defer c.Stop()
	benchWait(b, func() bool { return adds.Load() == int64(pods.Len()) })
	<-lists
	w := <-watchers

	expired := apierrors.NewResourceExpired("benchmark: resource version too old")
	steady := bf.LiveHeap()
	notifications.Store(0)
	var resync time.Duration
	var peakSum float64
	i := 0
	for b.Loop() {
		peak := bf.StartHeapPeak(time.Millisecond)
		w.Error(&expired.ErrStatus)
		listed := <-lists
		w = <-watchers
		i++
		w.Add(benchSentinel(i))
		<-sentinel
		resync += time.Since(listed)
		peakSum += float64(peak.Stop()) - float64(steady)
	}
	iters := float64(b.N)
	b.ReportMetric(float64(resync.Nanoseconds())/iters, "ns/op")
	b.ReportMetric(float64(notifications.Load())/iters, "notifications/op")
	b.ReportMetric(bf.MB(peakSum/iters), "peak-MB")
	b.ReportMetric(bf.MB(float64(bf.LiveHeap())-float64(steady)), "retained-MB")
}

// BenchmarkRetention measures what a cache holds after half of its 100k
// pods have been updated once through the watch, each with a new object:
// retained-MB is the heap after collection above the heap before the cache
// existed. An informer that keeps pointers into the items of a list keeps
// the whole list reachable while one of its items is cached, so the
// replaced versions stay in memory too (kubernetes#113305). ns/op is not
// reported: an op is a sync plus 50k updates, and its time is mostly the
// fixture's.
func BenchmarkRetention(b *testing.B) {
	const count, updated = 100_000, 50_000
	pods := benchPods(count, false)
	for _, fixture := range []string{"copied", "decoded"} {
		list, event := benchFresh(pods), func(i, rv int) (*corev1.Pod, error) { return bf.Modified(pods.Pod(i), rv), nil }
		if fixture == "decoded" {
			wire := benchWire(b, count, false, bf.Protobuf)
			list, event = wire.List, wire.Pod
		}
		for _, impl := range []benchImpl{benchClientGoImpl, benchInformersImpl} {
			b.Run(fmt.Sprintf("pods=%d/updated=%d/fixture=%s/impl=%s", count, updated, fixture, impl.Name), func(b *testing.B) {
				benchRetention(b, impl, list, event, updated)
			})
		}
	}
}

// benchRetention syncs from list, then sends event(2i, rv) as an update
// of pod 2i for i below updated.
func benchRetention(b *testing.B, impl benchImpl, list func(metav1.ListOptions) (*corev1.PodList, error),
	event func(i, rv int) (*corev1.Pod, error), updated int) {
	var retainedSum float64
	base := bf.LiveHeap()
	for b.Loop() {
		w := watch.NewFakeWithChanSize(1024, false)
		var updates atomic.Int64
		c := benchStart(b, impl, benchSource{List: list, Watch: staticWatch(w)}, benchCacheOptions{},
			benchHandler{Update: func(_, _ *corev1.Pod) { updates.Add(1) }})
		for i := range updated {
			p, err := event(2*i, 30_000_000+i)
			if err != nil {
				b.Fatal(err)
			}
			w.Modify(p)
		}
		benchWait(b, func() bool { return updates.Load() == int64(updated) })
		b.StopTimer()
		retainedSum += float64(bf.LiveHeap()) - float64(base)
		c.Stop()
		base = bf.LiveHeap()
		b.StartTimer()
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bf.MB(retainedSum/float64(b.N)), "retained-MB")
}

// BenchmarkSlowHandler runs a handler that takes 1 ms per event beside a
// fast one. One op is one update, sent when the fast handler has seen the
// previous one: p50-ns and p99-ns are the fast handler's delivery latency,
// from the send on the watch to the handler call, while the slow handler's
// backlog grows. backlog-B/event is the heap that backlog holds per event.
func BenchmarkSlowHandler(b *testing.B) {
	const count = 1000
	pods := benchPods(count, false)
	events := benchEvents(pods)
	for _, impl := range []benchImpl{benchClientGoImpl, benchInformersImpl} {
		b.Run(fmt.Sprintf("pods=%d/slow=1ms/impl=%s", count, impl.Name), func(b *testing.B) {
			benchSlowHandler(b, impl, pods, events)
		})
	}
}

func benchSlowHandler(b *testing.B, impl benchImpl, pods *bf.PodList, events [2][]*corev1.Pod) {
	w := watch.NewFakeWithChanSize(16, false)
	var sentAt atomic.Int64 // when the event in flight was sent, in ns since start
	start := time.Now()
	latency := bf.NewHistogram(100*time.Nanosecond, 100*time.Millisecond)
	seen := make(chan struct{}, 1)
	var fastAdds, slowAdds, slowUpdates atomic.Int64
	fast := benchHandler{
		Add: func(*corev1.Pod) { fastAdds.Add(1) },
		Update: func(_, _ *corev1.Pod) {
			latency.Record(time.Since(start) - time.Duration(sentAt.Load()))
			seen <- struct{}{}
		},
	}
	slow := benchHandler{
		Add: func(*corev1.Pod) { slowAdds.Add(1) },
		Update: func(_, _ *corev1.Pod) {
			time.Sleep(time.Millisecond)
			slowUpdates.Add(1)
		},
	}
	c, err := impl.New(benchSource{List: benchFresh(pods), Watch: staticWatch(w)}, benchCacheOptions{})
	if err != nil {
		b.Fatal(err)
	}
	removeSlow, err := c.AddHandler(slow)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.AddHandler(fast); err != nil {
		b.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	n := int64(pods.Len())
	benchWait(b, func() bool { return c.HasSynced() && fastAdds.Load() == n && slowAdds.Load() == n })

	base := bf.LiveHeap()
	for i := 0; b.Loop(); i++ {
		k := i % pods.Len()
		ev := events[(i/pods.Len())&1][k]
		sentAt.Store(int64(time.Since(start)))
		w.Modify(ev)
		<-seen
	}
	backlog := int64(b.N) - slowUpdates.Load()
	grown := float64(bf.LiveHeap()) - float64(base)
	removeSlow()
	b.ReportMetric(float64(latency.Percentile(50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(latency.Percentile(99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(backlog), "backlog")
	if backlog > 0 {
		b.ReportMetric(grown/float64(backlog), "backlog-B/event")
	}
}

// BenchmarkEndToEnd syncs objects from a real kube-apiserver and etcd
// (internal/testenv): 10k config maps and 10k realistic pods (100k more
// with INFORMERS_E2E_BENCH=large), with our factory informer beside
// client-go's generated SharedInformerFactory, all over protobuf; and 10k
// applications (100k more with large), a custom resource served as JSON
// only, typed and unstructured (benchE2EApplicationSyncs). It runs
// only when INFORMERS_E2E_BENCH is set: the first run builds the control
// plane binaries (minutes), and creating the objects takes a while.
//
//	impl=clientgo            client-go's factory; list and watch
//	impl=clientgo-watchlist  the same with client-go's WatchListClient
//	                         feature gate on: watch-list streaming
//	impl=informers           our factory as users get it: watch-list
//	                         streaming when the server serves it
//	                         (kube-apiserver 1.37 does), objects decoded
//	                         by the library's decoder, which shares as it
//	                         decodes
//	impl=informers-nodecoder the same with FactoryOptions.DisableDecoder:
//	                         lists decoded by client-go's codecs, watches
//	                         by the generated code
//	impl=informers-list      our informer over the same typed client with
//	                         watch-list off: the same protocol as clientgo
//	impl=wire-floor          no informer: the same watch-list request as
//	                         ours, its stream read and framed, no object
//	                         decoded (benchWireFloor); what the server and
//	                         the transport take, for any client
//
// Each sync starts with the client's and kube-apiserver's heaps just
// collected, so that none pays for the garbage of the one before.
//
// ns/op is the time from creating the factory to synced; B/op and
// allocs/op count every goroutine's allocations meanwhile; retained-B/obj
// is the heap the synced cache holds per object (after two collections,
// above the heap before the factory).
func BenchmarkEndToEnd(b *testing.B) {
	mode := os.Getenv("INFORMERS_E2E_BENCH")
	if mode == "" {
		b.Skip("set INFORMERS_E2E_BENCH=1 (or large) to sync from a real kube-apiserver and etcd")
	}
	if err := benchCheckClientGoListWatch(); err != nil {
		b.Fatal(err)
	}
	env := testenv.New(b, testenv.Options{})
	cfg := env.Config()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS = -1 // no client-side rate limit
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	type resource struct {
		name   string
		count  int
		create func(ns string, count int) error
		syncs  func(ns string) []benchE2ESync
	}
	resources := []resource{
		{"configmaps", 10_000, func(ns string, n int) error { return benchCreateConfigMaps(ctx, cs, ns, n) },
			func(ns string) []benchE2ESync {
				return benchE2ESyncs[*corev1.ConfigMap](cs, ns, corev1.SchemeGroupVersion.WithResource("configmaps"), cs.CoreV1().ConfigMaps(ns))
			}},
		{"pods", 10_000, func(ns string, n int) error { return benchCreatePods(ctx, cs, ns, n) },
			func(ns string) []benchE2ESync {
				return benchE2ESyncs[*corev1.Pod](cs, ns, corev1.SchemeGroupVersion.WithResource("pods"), cs.CoreV1().Pods(ns))
			}},
		{"applications", 10_000, func(ns string, n int) error { return benchCreateApplications(ctx, cfg, cs, ns, n) },
			func(ns string) []benchE2ESync { return benchE2EApplicationSyncs(cfg, ns) }},
	}
	if mode == "large" {
		resources = append(resources, resource{"pods", 100_000, resources[1].create, resources[1].syncs})
		resources = append(resources, resource{"applications", 100_000, resources[2].create, resources[2].syncs})
	}
	for _, r := range resources {
		ns := fmt.Sprintf("bench-%s-%d", r.name, r.count)
		// Created once, on first use: -count runs the parent again, and
		// -bench may leave the resource out.
		created := sync.OnceValue(func() error { return r.create(ns, r.count) })
		b.Run(fmt.Sprintf("%s=%d", r.name, r.count), func(b *testing.B) {
			if err := created(); err != nil {
				b.Fatal(err)
			}
			for _, s := range r.syncs(ns) {
				b.Run("impl="+s.name, func(b *testing.B) {
					benchEndToEnd(b, env, s, r.count)
				})
			}
		})
	}
}

// benchEndToEnd measures s, a sync of count objects from env. Beside the
// time, it reports the CPU time the client process (client-ms/op) and the
// server's processes (server-ms/op) spent, since both run on the same
// cores.
func benchEndToEnd(b *testing.B, env *testenv.Env, s benchE2ESync, count int) {
	benchClientGoWatchListFor(b, s.clientGoWatchList)
	var retained float64
	var client, server time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if err := env.CollectAPIServerGarbage(b.Context()); err != nil {
			b.Fatal(err)
		}
		base := bf.LiveHeap()
		clientBefore, serverBefore := benchCPU(b, env)
		b.StartTimer()
		// Our informers log the progress of long syncs, which go test
		// would print between a benchmark's name and its figures.
		stop, err := s.start(klog.NewContext(b.Context(), klog.FromContext(b.Context()).V(1)))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		clientAfter, serverAfter := benchCPU(b, env)
		client += clientAfter - clientBefore
		server += serverAfter - serverBefore
		retained += float64(bf.LiveHeap()) - float64(base)
		stop()
		b.StartTimer()
	}
	b.ReportMetric(retained/float64(b.N)/float64(count), "retained-B/obj")
	b.ReportMetric(float64(client.Milliseconds())/float64(b.N), "client-ms/op")
	b.ReportMetric(float64(server.Milliseconds())/float64(b.N), "server-ms/op")
}

// benchCPU returns the CPU time this process and env's server have used.
func benchCPU(b *testing.B, env *testenv.Env) (client, server time.Duration) {
	server, err := env.ServerCPU()
	if err != nil {
		b.Fatal(err)
	}
	return benchProcessCPU(b), server
}

// benchProcessCPU returns the CPU time this process has used.
func benchProcessCPU(b *testing.B) time.Duration {
	cpu, err := processCPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// processCPU returns the CPU time this process has used, user and system
// (getrusage).
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// benchE2ESync is one way to sync a resource in BenchmarkEndToEnd.
type benchE2ESync struct {
	name string
	// clientGoWatchList is the setting of client-go's WatchListClient
	// gate that the sync needs.
	clientGoWatchList bool
	// start creates an informer, starts it and waits until it has synced;
	// stop stops it and waits for its goroutines.
	start func(context.Context) (stop func(), err error)
}

// benchE2ESyncs returns the ways to sync resource gvr of Go type T in
// namespace ns, client being its typed client.
func benchE2ESyncs[T informers.Object, L informers.List](cs kubernetes.Interface, ns string, gvr schema.GroupVersionResource, client informers.Client[L]) []benchE2ESync {
	clientGo := func(ctx context.Context) (func(), error) {
		f := kinformers.NewSharedInformerFactoryWithOptions(cs, 0, kinformers.WithNamespace(ns))
		gi, err := f.ForResource(gvr)
		if err != nil {
			return nil, err
		}
		inf := gi.Informer()
		stopCh := make(chan struct{})
		f.Start(stopCh)
		stop := func() { close(stopCh); f.Shutdown() }
		if err := bf.PollUntil(ctx, inf.HasSynced); err != nil {
			stop()
			return nil, err
		}
		return stop, nil
	}
	ours := func(opts informers.FactoryOptions) func(context.Context) (func(), error) {
		return func(ctx context.Context) (func(), error) {
			f := informers.NewFactoryWith(cs, opts)
			informers.Informer[T](f)
			return benchRunFactory(ctx, f)
		}
	}
	return []benchE2ESync{
		{"clientgo", false, clientGo},
		{"clientgo-watchlist", true, clientGo},
		{"informers", true, ours(informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})},
		{"informers-nodecoder", true, ours(informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), DisableDecoder: informers.Set(true)}})},
		{"wire-floor", false, benchWireFloor(cs, ns, gvr, reflect.TypeFor[T]().Elem().Name())},
		{"informers-list", false, func(ctx context.Context) (func(), error) {
			lw := informers.FromClient[T](client)
			lw.DisableWatchList = true
			inf, err := informers.NewInformer(lw, informers.Options[T]{})
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			stop := func() { cancel(); <-done }
			if err := informers.WaitForSync(ctx, inf); err != nil {
				stop()
				return nil, err
			}
			return stop, nil
		}},
	}
}

// benchCreateConfigMaps creates count config maps of about 1 KB in a new
// namespace ns. Their values differ from one config map to the next, as
// real ones mostly do.
func benchCreateConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string, count int) error {
	if err := bf.CreateNamespace(ctx, cs, ns); err != nil {
		return err
	}
	return bf.CreateAll(count, func(i int) error {
		value := func(key string) string { return fmt.Sprintf("%s-%05d-", key, i) + strings.Repeat("x", 248) }
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%100)}},
			Data:       map[string]string{"a": value("a"), "b": value("b"), "c": value("c")},
		}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}

// benchCreatePods creates count realistic pods (benchfixtures.NewPodList,
// from 100 deployments on 500 nodes) in a new namespace ns, as a
// ReplicaSet controller and a kubelet would (benchfixtures.CreatePods).
func benchCreatePods(ctx context.Context, cs kubernetes.Interface, ns string, count int) error {
	pods := bf.NewPodList(count, bf.PodOptions{Namespaces: 1, Nodes: 500, Seed: 1})
	return bf.CreatePods(ctx, cs, pods, func(string) string { return ns })
}

// BenchmarkStuckHandler measures what a stuck handler's queue holds: 1 000
// realistic pods, then 100k updates, each a freshly allocated version as a
// decoded watch event is, while the handler is blocked. It reports the live
// heap the queue keeps (retained-MB, after the informer has applied every
// update) and the backlog, without and with MergeByKey; then it releases
// the handler and checks that it ends in the cache's state. One op is the
// whole scenario.
func BenchmarkStuckHandler(b *testing.B) {
	const count, updates = 1000, 100_000
	pods := benchPods(count, false)
	for _, merge := range []bool{false, true} {
		b.Run(fmt.Sprintf("pods=%d/updates=%d/merge=%v", count, updates, merge), func(b *testing.B) {
			for b.Loop() {
				benchStuckHandler(b, pods, updates, merge)
			}
		})
	}
}

func benchStuckHandler(b *testing.B, pods *bf.PodList, updates int, merge bool) {
	w := watch.NewFakeWithChanSize(1024, false)
	lw := &informers.ListWatch[*corev1.Pod, *corev1.PodList]{
		ListFunc:         func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return pods.Fresh(), nil },
		WatchFunc:        func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
		DisableWatchList: true,
	}
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{})
	if err != nil {
		b.Fatal(err)
	}
	stuck := make(chan struct{})
	var mu sync.Mutex
	seen := map[string]string{} // key -> resource version the handler has
	note := func(p *corev1.Pod) {
		mu.Lock()
		seen[p.Namespace+"/"+p.Name] = p.ResourceVersion
		mu.Unlock()
	}
	reg, err := inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod, initial bool) { note(p) },
		OnUpdate: func(_, p *corev1.Pod) { <-stuck; note(p) },
	}, informers.HandlerOptions{MergeByKey: merge})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	benchWait(b, func() bool { return reg.HasSynced() && reg.Backlog() == 0 })
	before := bf.LiveHeap()

	rng := rand.New(rand.NewPCG(3, 4))
	last := ""
	for n := range updates {
		last = strconv.Itoa(2_000_000 + n)
		p := bf.Modified(pods.Pod(rng.IntN(pods.Len())), 2_000_000+n)
		w.Modify(p)
	}
	benchWait(b, func() bool { return inf.LastSyncResourceVersion() == last })
	retained := float64(bf.LiveHeap()) - float64(before)
	backlog := reg.Backlog()
	close(stuck)
	benchWait(b, func() bool { return reg.Backlog() == 0 })
	mu.Lock()
	for p := range inf.Lister().All() {
		if seen[p.Namespace+"/"+p.Name] != p.ResourceVersion {
			b.Fatalf("handler has %s at %q, the cache at %q", p.Name, seen[p.Namespace+"/"+p.Name], p.ResourceVersion)
		}
	}
	mu.Unlock()
	b.ReportMetric(bf.MB(retained), "retained-MB")
	b.ReportMetric(float64(backlog), "backlog")
}
