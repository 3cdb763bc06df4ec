package informers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// The settings of BenchmarkSteadyStateGC, which its children read too.
var (
	steadyPods     = flag.Int("steady.pods", 100_000, "BenchmarkSteadyStateGC: pods in the cache (1000000 for the product's figure)")
	steadyRate     = flag.Int("steady.rate", 1000, "BenchmarkSteadyStateGC: updates per second")
	steadyDuration = flag.Duration("steady.duration", 30*time.Second, "BenchmarkSteadyStateGC: how long updates are sent")
	steadyFixture  = flag.String("steady.fixture", "", "BenchmarkSteadyStateGC: the fixture to run, objects or server (both when empty)")
)

// steadyFixtures are BenchmarkSteadyStateGC's fixtures, by name.
var steadyFixtures = []string{"objects", "server"}

// steadyChildEnv names, in a child of BenchmarkSteadyStateGC, the
// implementation TestSteadyStateChild runs; unset, that test skips.
const steadyChildEnv = "INFORMERS_STEADY_STATE_CHILD"

// steadyResultPrefix starts the line a child prints its figures on, so
// that the parent can tell it from what the test framework prints.
const steadyResultPrefix = "steady-state-gc: "

// steadyBatchInterval is how often a child sends a batch of updates:
// rate/10 every 100 ms.
const steadyBatchInterval = 100 * time.Millisecond

// steadyImpls are the implementations BenchmarkSteadyStateGC compares, by
// name.
var steadyImpls = []benchImpl{benchClientGoImpl, benchInformersImpl}

// steadyResult is what a child measured over its window, from the end of
// its sync (and two collections) to the last update handled.
type steadyResult struct {
	Impl    string `json:"impl"`
	Fixture string `json:"fixture"`
	Pods    int    `json:"pods"`
	// Updates is how many updates were sent and handled in Seconds.
	Updates int     `json:"updates"`
	Seconds float64 `json:"seconds"`
	// GCCPUSeconds is the growth of /cpu/classes/gc/total:cpu-seconds and
	// GCCycles of /gc/cycles/total:gc-cycles.
	GCCPUSeconds float64 `json:"gcCPUSeconds"`
	GCCycles     uint64  `json:"gcCycles"`
	// CPUSeconds is the CPU time the process used (getrusage, user and
	// system).
	CPUSeconds float64 `json:"cpuSeconds"`
	// AllocBytes is the growth of /gc/heap/allocs:bytes: what the window
	// allocated, which sets how soon a cycle starts.
	AllocBytes uint64 `json:"allocBytes"`
	// CycleCPUSeconds is the CPU time (getrusage) of one collection of
	// the heap the window left, forced after it, and CycleGCCPUSeconds
	// the same collection's /cpu/classes/gc/total:cpu-seconds, which
	// counts the time its workers held a processor, whether the system
	// ran them or not.
	CycleCPUSeconds   float64 `json:"cycleCPUSeconds"`
	CycleGCCPUSeconds float64 `json:"cycleGCCPUSeconds"`
	// LiveHeapStart is /gc/heap/live:bytes at the start of the window
	// (the cache, the fixture and the updates to send), LiveHeapEnd at
	// its end, once collected (the cache and the fixture).
	LiveHeapStart uint64 `json:"liveHeapStart"`
	LiveHeapEnd   uint64 `json:"liveHeapEnd"`
	// SyncSeconds is how long the initial sync took, before the window.
	SyncSeconds float64 `json:"syncSeconds"`
	// PeakRSSBytes is the child's peak resident set, which its parent
	// reads when it has exited: the sync's peak, as a rule.
	PeakRSSBytes uint64 `json:"-"`
}

// BenchmarkSteadyStateGC measures the garbage collector's CPU in a steady
// state: a synced cache of realistic pods with one handler, updated at a
// steady rate. Each implementation runs in a process of its own (the test
// binary again, running TestSteadyStateChild), so that its collector, its
// heap and its CPU are its own, and one child runs per implementation per
// iteration. Updates are modified versions of random pods, each made with
// bf.Modified and a resource version above the list's and the previous
// update's. Two fixtures:
//
//   - fixture=server, the steady state of a controller: each child syncs
//     by watch-list from a bf.PodServer of pods with managedFields (as
//     InitialSync's fixture=server), and the updates come as MODIFIED
//     frames on the same stream, so each implementation keeps the objects
//     its own decoder makes and decodes every update. The encodings are
//     kept off the Go heap; they count in the child's resident set.
//   - fixture=objects: pods without managedFields (benchPods, as
//     BenchmarkUpdate) listed and sent through a fake watch as decoded
//     objects, the same for both: the cost of the store and dispatch
//     alone, on client-go's objects.
//
// A child syncs, builds the updates it will send (fixture=objects; the
// server's are encoded before the sync), collects garbage twice, then
// sends rate/10 updates every 100 ms for the duration, waits until the
// handler has seen them all, and reports what runtime/metrics and
// getrusage counted over that window:
//
//   - gc-cpu-s: /cpu/classes/gc/total:cpu-seconds, the GC's CPU,
//     including its assists and the marking it does on idle processors.
//     The runtime updates its CPU classes when a cycle ends, so this is
//     the CPU of the cycles that ended within the window.
//   - gc-cycles: /gc/cycles/total:gc-cycles.
//   - cpu-s: the process's CPU time, user and system (getrusage).
//   - live-heap-MB: /gc/heap/live:bytes at the end of the window, once
//     collected: the cache, and with fixture=objects the fixture's
//     description of every pod (about 400 bytes a pod), the same for both.
//
// and, since a window may see no cycle at all, what decides how many
// cycles run and what each costs:
//
//   - alloc-MB: /gc/heap/allocs:bytes over the window. With GOGC=100 a
//     cycle starts once the heap has grown by as much as the live heap;
//     besides, the runtime forces a cycle after two minutes without one.
//   - gc-cpu-ms/cycle: the CPU time (getrusage) of one collection of the
//     heap the window left, forced after it, the process otherwise idle:
//     what every cycle costs, whatever starts it. The runtime's own count
//     of the same collection is logged beside it; it counts the time
//     its workers held a processor, which on a loaded machine includes
//     time the system gave to other processes.
//   - peak-rss-MB: the child's peak resident set (the largest of b.N
//     children), which its sync sets.
//
// With fixture=objects the updates are built before the window, as
// BenchmarkUpdate's are, so that what the window allocates is the store's
// and the dispatch's alone. They are part of the live heap at the start of
// the window (about 9 KB each), which the log shows.
//
// GOGC, GOMEMLIMIT and GODEBUG in the environment apply to the children
// as to any process. Defaults: 100 000 pods, 1 000 updates/s, 30 s, both
// fixtures; -steady.pods, -steady.rate, -steady.duration and
// -steady.fixture change them. At 100 000 pods neither implementation
// allocates enough in 30 s to start a cycle: a window of 120 s shows
// cycles. ns/op is a child's whole life, sync included; it measures
// nothing. The product's figure is at a million pods; client-go's child
// peaked at 1.6 GB of resident memory with 100 000 pods and 4.1 GB with
// 300 000 (fixture=objects), so a million needs about 14 GB free, and
// fixture=server 9 GB more for the encoded pods:
//
//	go test -run '^$' -bench SteadyStateGC -benchtime 1x -count 3 -timeout 60m . -steady.pods=1000000
func BenchmarkSteadyStateGC(b *testing.B) {
	if *steadyPods <= 0 || *steadyRate <= 0 || *steadyDuration < steadyBatchInterval {
		b.Fatalf("-steady.pods=%d -steady.rate=%d -steady.duration=%s: want pods and rate above 0 and a duration of at least %s",
			*steadyPods, *steadyRate, *steadyDuration, steadyBatchInterval)
	}
	fixtures := steadyFixtures
	if *steadyFixture != "" {
		if !slices.Contains(steadyFixtures, *steadyFixture) {
			b.Fatalf("-steady.fixture=%s: want one of %v", *steadyFixture, steadyFixtures)
		}
		fixtures = []string{*steadyFixture}
	}
	for _, fixture := range fixtures {
		for _, impl := range steadyImpls {
			benchSteadyStateGC(b, fixture, impl)
		}
	}
}

// benchSteadyStateGC runs BenchmarkSteadyStateGC's children of impl on
// fixture.
func benchSteadyStateGC(b *testing.B, fixture string, impl benchImpl) {
	b.Run(fmt.Sprintf("pods=%d/rate=%d/fixture=%s/impl=%s", *steadyPods, *steadyRate, fixture, impl.Name), func(b *testing.B) {
		var sum steadyResult
		for b.Loop() {
			r, err := steadyRunChild(b.Context(), fixture, impl.Name)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: sync %.1fs; %d updates in %.1fs; live heap %.0f MB, %.0f MB once they were handled; allocated %.1f MB; GC %.3f CPU-s in %d cycles; CPU %.2fs; a cycle forced after: %.3f CPU-s (runtime's count %.3f)",
				r.Impl, r.SyncSeconds, r.Updates, r.Seconds, bf.MB(float64(r.LiveHeapStart)), bf.MB(float64(r.LiveHeapEnd)),
				bf.MB(float64(r.AllocBytes)), r.GCCPUSeconds, r.GCCycles, r.CPUSeconds, r.CycleCPUSeconds, r.CycleGCCPUSeconds)
			sum.GCCPUSeconds += r.GCCPUSeconds
			sum.GCCycles += r.GCCycles
			sum.CPUSeconds += r.CPUSeconds
			sum.LiveHeapEnd += r.LiveHeapEnd
			sum.AllocBytes += r.AllocBytes
			sum.CycleCPUSeconds += r.CycleCPUSeconds
			sum.PeakRSSBytes = max(sum.PeakRSSBytes, r.PeakRSSBytes)
		}
		n := float64(b.N)
		b.ReportMetric(sum.GCCPUSeconds/n, "gc-cpu-s")
		b.ReportMetric(float64(sum.GCCycles)/n, "gc-cycles")
		b.ReportMetric(sum.CPUSeconds/n, "cpu-s")
		b.ReportMetric(bf.MB(float64(sum.LiveHeapEnd))/n, "live-heap-MB")
		b.ReportMetric(bf.MB(float64(sum.AllocBytes))/n, "alloc-MB")
		b.ReportMetric(sum.CycleCPUSeconds*1e3/n, "gc-cpu-ms/cycle")
		b.ReportMetric(bf.MB(float64(sum.PeakRSSBytes)), "peak-rss-MB")
	})
}

// steadyRunChild runs the test binary again as a child measuring impl
// with this run's settings, and returns what it measured. The child is
// killed when ctx ends; its -test.timeout bounds it if this process dies
// without killing it.
func steadyRunChild(ctx context.Context, fixture, impl string) (steadyResult, error) {
	timeout := *steadyDuration + 30*time.Minute // the sync of a million pods takes minutes
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run=^TestSteadyStateChild$",
		"-test.count=1",
		fmt.Sprintf("-test.timeout=%s", timeout),
		fmt.Sprintf("-steady.pods=%d", *steadyPods),
		fmt.Sprintf("-steady.rate=%d", *steadyRate),
		fmt.Sprintf("-steady.duration=%s", *steadyDuration),
		"-steady.fixture="+fixture,
	)
	cmd.Env = append(os.Environ(), steadyChildEnv+"="+impl)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return steadyResult{}, fmt.Errorf("steady-state child for %s: %w\nstdout:\n%s\nstderr:\n%s", impl, err, stdout.Bytes(), stderr.Bytes())
	}
	var peakRSS uint64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peakRSS = uint64(ru.Maxrss)
		if runtime.GOOS != "darwin" { // kilobytes, except on macOS
			peakRSS *= 1024
		}
	}
	for line := range strings.Lines(stdout.String()) {
		rest, ok := strings.CutPrefix(line, steadyResultPrefix)
		if !ok {
			continue
		}
		var r steadyResult
		if err := json.Unmarshal([]byte(rest), &r); err != nil {
			return steadyResult{}, fmt.Errorf("steady-state child for %s: parsing %q: %w", impl, rest, err)
		}
		if r.Impl != impl || r.Fixture != fixture {
			return steadyResult{}, fmt.Errorf("steady-state child for %s on %s: it measured %q on %q", impl, fixture, r.Impl, r.Fixture)
		}
		r.PeakRSSBytes = peakRSS
		return r, nil
	}
	return steadyResult{}, fmt.Errorf("steady-state child for %s: no line starting %q\nstdout:\n%s\nstderr:\n%s", impl, steadyResultPrefix, stdout.Bytes(), stderr.Bytes())
}

// TestSteadyStateChild is a child of BenchmarkSteadyStateGC: it runs
// only when the benchmark starts it, with the implementation to measure
// in INFORMERS_STEADY_STATE_CHILD, and prints its figures as one line of
// JSON after steadyResultPrefix.
func TestSteadyStateChild(t *testing.T) {
	name := os.Getenv(steadyChildEnv)
	if name == "" {
		t.Skip("run by BenchmarkSteadyStateGC")
	}
	var impl benchImpl
	for _, i := range steadyImpls {
		if i.Name == name {
			impl = i
		}
	}
	require.NotEmpty(t, impl.Name, "unknown implementation %q", name)
	require.Positive(t, *steadyPods, "pods")
	require.Positive(t, *steadyRate, "rate")
	require.GreaterOrEqual(t, *steadyDuration, steadyBatchInterval, "duration")

	ctx, cancel := context.WithTimeout(t.Context(), *steadyDuration+20*time.Minute)
	defer cancel()
	ctx, orphaned := context.WithCancelCause(ctx)
	defer orphaned(nil)
	stopWatchdog := steadyOrphanWatchdog(orphaned)
	defer stopWatchdog()

	require.Contains(t, steadyFixtures, *steadyFixture, "fixture")
	r, err := steadyMeasure(ctx, *steadyFixture, impl, *steadyPods, *steadyRate, *steadyDuration)
	require.NoError(t, err)
	line, err := json.Marshal(r)
	require.NoError(t, err)
	fmt.Println(steadyResultPrefix + string(line))
}

// errSteadyOrphaned ends a child's work when the benchmark's process has
// gone.
var errSteadyOrphaned = errors.New("the benchmark's process has gone")

// steadyOrphanWatchdog cancels the child's work if the benchmark's
// process goes away without killing it (it timed out, or was killed
// itself): the child is then re-parented, so its parent's id changes. It
// checks every second, and returns a function that stops it and waits for
// it.
func steadyOrphanWatchdog(cancel context.CancelCauseFunc) (stop func()) {
	parent := os.Getppid()
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				if os.Getppid() != parent {
					cancel(errSteadyOrphaned)
					return
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// steadyCache is a cache of a BenchmarkSteadyStateGC child and how to
// drive it: start starts it; prepare, called once it has synced, builds
// what the window needs; send sends the next n updates.
type steadyCache struct {
	start   func() error
	synced  func() bool
	prepare func(ctx context.Context) error
	send    func(n int) error
	stop    func()
}

// steadyObjects is fixture=objects: impl's cache of count of benchPods's
// pods (no managedFields) behind a fake watch, sent total updates built
// after the sync, each a change of the pod's last version, as decoded
// objects handed to the cache, whose handler calls onAdd and onUpdate.
func steadyObjects(impl benchImpl, count, total int, onAdd, onUpdate func()) (*steadyCache, error) {
	pods := benchPods(count, false)
	w := watch.NewFakeWithChanSize(1024, false)
	c, err := impl.New(benchSource{List: benchFresh(pods), Watch: staticWatch(w)}, benchCacheOptions{})
	if err != nil {
		return nil, err
	}
	h := benchHandler{Add: func(*corev1.Pod) { onAdd() }, Update: func(_, _ *corev1.Pod) { onUpdate() }}
	if _, err := c.AddHandler(h); err != nil {
		return nil, fmt.Errorf("adding the handler: %w", err)
	}
	var events []*corev1.Pod
	sent := 0
	return &steadyCache{
		start:  func() error { c.Start(); return nil },
		synced: c.HasSynced,
		prepare: func(ctx context.Context) error {
			rng := rand.New(rand.NewPCG(1, 2))
			rv, err := strconv.Atoi(pods.ResourceVersion())
			if err != nil {
				return fmt.Errorf("the list's resource version: %w", err)
			}
			events = make([]*corev1.Pod, total)
			for i := range events {
				if i%1000 == 0 && ctx.Err() != nil {
					return fmt.Errorf("building the updates: %w", context.Cause(ctx))
				}
				rv++
				events[i] = bf.Modified(pods.Pod(rng.IntN(count)), rv)
			}
			return nil
		},
		send: func(n int) error {
			for range n {
				w.Modify(events[sent])
				events[sent] = nil // the cache's now, as if decoded from the watch
				sent++
			}
			return nil
		},
		stop: c.Stop,
	}, nil
}

// steadyServer is fixture=server: impl's cache synced by watch-list from
// a bf.PodServer of count realistic pods with managedFields, as
// InitialSync's fixture=server serves them, and sent total updates as
// MODIFIED frames on the same stream, which the cache decodes. The pods
// and the updates are encoded before the sync, off the Go heap; the
// description of the pods is dropped once they are.
func steadyServer(ctx context.Context, impl string, count, total int, onAdd, onUpdate func()) (*steadyCache, error) {
	var si benchServerImpl
	for _, i := range benchServerImpls {
		if i.name == impl {
			si = i
		}
	}
	if si.start == nil {
		return nil, fmt.Errorf("no fixture=server implementation named %q", impl)
	}
	if err := benchSetClientGoWatchList(true); err != nil {
		return nil, err
	}
	o := benchSpread
	o.ManagedFields = true
	pods := bf.NewPodList(count, o)
	enc, err := bf.EncodePods(pods)
	if err != nil {
		return nil, err
	}
	updates, err := bf.EncodeUpdates(pods, total, 1)
	if err != nil {
		return nil, errors.Join(err, enc.Close())
	}
	srv, err := bf.NewPodServer(enc, bf.PodServerOptions{Updates: updates})
	if err != nil {
		return nil, errors.Join(err, enc.Close(), updates.Close())
	}
	var c *benchServerCache
	return &steadyCache{
		start: func() error {
			c, err = si.start(ctx, srv.Config(), true, onAdd, onUpdate)
			return err
		},
		synced:  func() bool { return c.synced() },
		prepare: func(context.Context) error { return c.lastErr() },
		send:    srv.Release,
		stop: func() {
			if c != nil {
				_ = c.stop()
			}
			srv.Close()
			_ = enc.Close()
			_ = updates.Close()
		},
	}, nil
}

// steadyMeasure syncs a cache of impl over count pods of fixture, then
// sends it rate updates a second for d, and returns what the window cost.
func steadyMeasure(ctx context.Context, fixture string, impl benchImpl, count, rate int, d time.Duration) (steadyResult, error) {
	batch := max(1, rate*int(steadyBatchInterval)/int(time.Second))
	batches := max(1, int(d/steadyBatchInterval))
	total := batch * batches

	var adds, updates atomic.Int64
	synced, handled := make(chan struct{}), make(chan struct{})
	onAdd := func() {
		if adds.Add(1) == int64(count) {
			close(synced)
		}
	}
	onUpdate := func() {
		if updates.Add(1) == int64(total) {
			close(handled)
		}
	}
	var c *steadyCache
	var err error
	switch fixture {
	case "objects":
		c, err = steadyObjects(impl, count, total, onAdd, onUpdate)
	case "server":
		c, err = steadyServer(ctx, impl.Name, count, total, onAdd, onUpdate)
	default:
		err = fmt.Errorf("no fixture %q", fixture)
	}
	if err != nil {
		return steadyResult{}, fmt.Errorf("%s: %w", impl.Name, err)
	}
	defer c.stop()
	syncStart := time.Now()
	if err := c.start(); err != nil {
		return steadyResult{}, fmt.Errorf("%s: %w", impl.Name, err)
	}
	if err := steadyAwait(ctx, synced, "the initial adds"); err != nil {
		return steadyResult{}, fmt.Errorf("%s: %w", impl.Name, err)
	}
	for !c.synced() { // the handler has had every pod; the informer says so next
		if err := steadyAwait(ctx, time.After(time.Millisecond), ""); err != nil {
			return steadyResult{}, fmt.Errorf("%s: waiting for HasSynced: %w", impl.Name, err)
		}
	}
	syncTime := time.Since(syncStart)
	if err := c.prepare(ctx); err != nil {
		return steadyResult{}, fmt.Errorf("%s: %w", impl.Name, err)
	}

	runtime.GC()
	runtime.GC()
	start, err := steadyRead()
	if err != nil {
		return steadyResult{}, err
	}
	tick := time.NewTicker(steadyBatchInterval)
	defer tick.Stop()
	for sent := 0; sent < total; sent += batch {
		if err := steadyAwait(ctx, tick.C, "the next batch"); err != nil {
			return steadyResult{}, fmt.Errorf("%s: %d of %d updates sent: %w", impl.Name, sent, total, err)
		}
		if err := c.send(batch); err != nil {
			return steadyResult{}, fmt.Errorf("%s: %w", impl.Name, err)
		}
	}
	if err := steadyAwait(ctx, handled, "the updates"); err != nil {
		return steadyResult{}, fmt.Errorf("%s: %d of %d updates handled: %w", impl.Name, updates.Load(), total, err)
	}
	end, err := steadyRead()
	if err != nil {
		return steadyResult{}, err
	}
	// The first collection finishes any cycle the window left under way;
	// the second is the one measured.
	runtime.GC()
	before, err := steadyRead()
	if err != nil {
		return steadyResult{}, err
	}
	runtime.GC()
	after, err := steadyRead()
	if err != nil {
		return steadyResult{}, err
	}
	return steadyResult{
		Impl:              impl.Name,
		Fixture:           fixture,
		Pods:              count,
		Updates:           total,
		Seconds:           end.wall.Sub(start.wall).Seconds(),
		GCCPUSeconds:      end.gcCPU - start.gcCPU,
		GCCycles:          end.gcCycles - start.gcCycles,
		CPUSeconds:        (end.cpu - start.cpu).Seconds(),
		AllocBytes:        end.allocs - start.allocs,
		CycleCPUSeconds:   (after.cpu - before.cpu).Seconds(),
		CycleGCCPUSeconds: after.gcCPU - before.gcCPU,
		LiveHeapStart:     start.liveHeap,
		LiveHeapEnd:       before.liveHeap,
		SyncSeconds:       syncTime.Seconds(),
	}, nil
}

// steadyAwait waits for ch, or returns an error naming what it waited
// for when ctx ends first.
func steadyAwait[T any](ctx context.Context, ch <-chan T, what string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		if what == "" {
			return context.Cause(ctx)
		}
		return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
	}
}

// steadyReading is what a child reads at each end of its window.
type steadyReading struct {
	wall     time.Time
	cpu      time.Duration // getrusage, user and system
	gcCPU    float64
	gcCycles uint64
	liveHeap uint64
	allocs   uint64
}

// steadyMetrics are the runtime metrics a steadyReading takes, in the
// order steadyRead reads them.
var steadyMetrics = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/gc/heap/allocs:bytes",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/live:bytes",
}

// steadyRead reads the process's CPU time and runtime metrics.
func steadyRead() (steadyReading, error) {
	s := make([]metrics.Sample, len(steadyMetrics))
	for i, name := range steadyMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() == metrics.KindBad {
			return steadyReading{}, fmt.Errorf("runtime metric %s: not supported", m.Name)
		}
	}
	cpu, err := processCPU()
	if err != nil {
		return steadyReading{}, err
	}
	return steadyReading{
		wall:     time.Now(),
		cpu:      cpu,
		gcCPU:    s[0].Value.Float64(),
		allocs:   s[1].Value.Uint64(),
		gcCycles: s[2].Value.Uint64(),
		liveHeap: s[3].Value.Uint64(),
	}, nil
}
