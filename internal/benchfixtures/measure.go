package benchfixtures

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// heapObjects is the runtime metric of the memory that heap objects
// occupy, live or not yet collected: what a heap profile's inuse space
// would show between two collections.
const heapObjects = "/memory/classes/heap/objects:bytes"

// heapLive is the runtime metric of the heap that the last collection
// found reachable, and gcCycles the number of collections so far.
const (
	heapLive = "/gc/heap/live:bytes"
	gcCycles = "/gc/cycles/total:gc-cycles"
)

// HeapBytes returns the bytes of heap objects now, without collecting.
func HeapBytes() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// LiveHeap collects garbage twice (so that finalizers and the objects they
// hold go too) and returns the bytes of heap objects left.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return HeapBytes()
}

// HeapPeak samples HeapBytes every interval on its own goroutine and
// remembers the largest value, so that a benchmark can tell how high the
// heap went while it ran. Reading the metric costs about a microsecond,
// too little to disturb what is measured.
//
// It also remembers the largest heap that a collection found reachable
// meanwhile (LivePeak): the heap's peak includes garbage not collected
// yet, which the collector lets grow to as much as the live heap (GOGC=100)
// whatever the code does, while the reachable peak shows what the code
// keeps, such as a list page held after its objects were cached.
type HeapPeak struct {
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	peak   uint64
	live   uint64
	cycles uint64 // collections before sampling started
}

// StartHeapPeak starts sampling every interval.
func StartHeapPeak(interval time.Duration) *HeapPeak {
	s := []metrics.Sample{{Name: heapObjects}, {Name: gcCycles}}
	metrics.Read(s)
	h := &HeapPeak{stop: make(chan struct{}), done: make(chan struct{}), peak: s[0].Value.Uint64(), cycles: s[1].Value.Uint64()}
	go h.run(interval)
	return h
}

func (h *HeapPeak) run(interval time.Duration) {
	defer close(h.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	s := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}, {Name: gcCycles}}
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		metrics.Read(s)
		h.mu.Lock()
		h.peak = max(h.peak, s[0].Value.Uint64())
		if s[2].Value.Uint64() > h.cycles { // a collection ran since the start
			h.live = max(h.live, s[1].Value.Uint64())
		}
		h.mu.Unlock()
	}
}

// Stop ends sampling and returns the peak, including one last sample.
func (h *HeapPeak) Stop() uint64 {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(h.peak, HeapBytes())
}

// LivePeak returns, after Stop, the largest heap that a collection found
// reachable while sampling ran, or 0 if none ran.
func (h *HeapPeak) LivePeak() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

// MB converts bytes to megabytes (10^6), the unit of the memory metrics.
func MB(b float64) float64 { return b / 1e6 }

// Histogram counts durations in buckets of equal width, so that recording
// allocates nothing: a benchmark can record every event without the
// recording showing in its memory figures. Record and Percentile must not
// run concurrently.
type Histogram struct {
	width   time.Duration
	buckets []uint32 // the last one counts everything above the range
	n       uint64
}

// NewHistogram returns a histogram of buckets of the given width up to max.
func NewHistogram(width, max time.Duration) *Histogram {
	return &Histogram{width: width, buckets: make([]uint32, max/width+1)}
}

// Record counts d.
func (h *Histogram) Record(d time.Duration) {
	i := min(max(int(d/h.width), 0), len(h.buckets)-1)
	h.buckets[i]++
	h.n++
}

// Percentile returns the upper bound of the bucket holding the p-th
// percentile (0 < p <= 100) by the nearest-rank method, or 0 if empty.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(float64(h.n)*p/100 + 0.999999)
	var seen uint64
	for i, c := range h.buckets {
		seen += uint64(c)
		if seen >= rank {
			return time.Duration(i+1) * h.width
		}
	}
	return time.Duration(len(h.buckets)) * h.width
}

// PollUntil calls cond every millisecond until it holds, as client-go's own
// benchmarks poll HasSynced (cache.WaitForCacheSync polls every 100ms,
// which would show in a sync's time), or ctx ends.
func PollUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}
