package informers

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/shard"
)

// shardKey tells informers of different shards apart in a Factory.
func shardKey(s *shard.Shard) string {
	if s == nil {
		return ""
	}
	c := s.Canonical()
	return string(c.Field) + "|" + c.Selector()
}

// shardState is the shard of a sharded informer and what it has learned
// of the server's filtering. Its methods that a plain informer calls too
// take a nil *shardState as "not sharded".
type shardState struct {
	// wire is the selector the running reflector sends; it changes only
	// between reflectors, so that requests and the client filter agree.
	wire              atomic.Pointer[string]
	received, dropped atomic.Uint64
	changed           chan struct{} // signalled when the shard is set

	mu        sync.Mutex
	shard     shard.Shard // canonical
	gen       uint64
	syncedGen uint64        // the generation whose shard has synced; 0 if none
	syncCh    chan struct{} // closed once generation gen syncs
	filter    shard.Filter
	resume    string // the version the next reflector resumes from
	log       klog.Logger
}

func newShardState(s shard.Shard) *shardState {
	return &shardState{
		changed: make(chan struct{}, 1),
		shard:   s.Canonical(),
		gen:     1,
		syncCh:  make(chan struct{}),
		filter:  shard.FilterUnknown,
		log:     klog.Background(),
	}
}

// current returns the shard and its generation.
func (st *shardState) current() (shard.Shard, uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.shard, st.gen
}

// set makes s, canonical, the shard and returns a channel closed once it
// has synced.
func (st *shardState) set(s shard.Shard) <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	if slices.Equal(s.Ranges, st.shard.Ranges) {
		return st.syncCh
	}
	st.shard = s
	st.gen++
	st.syncCh = make(chan struct{})
	select {
	case st.changed <- struct{}{}:
	default: // a change is pending already; the run loop reads the latest
	}
	return st.syncCh
}

// syncedChan returns the channel closed once the current shard has synced.
func (st *shardState) syncedChan() <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.syncCh
}

// scopeSynced records that generation gen's shard has synced.
func (st *shardState) scopeSynced(gen uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if gen != st.gen || st.syncedGen == gen {
		return
	}
	st.syncedGen = gen
	close(st.syncCh)
	st.log.V(1).Info("Shard synced", "shard", st.shard.String(), "filter", st.filter)
}

// observe records where the shard is filtered, and logs when that changes.
func (st *shardState) observe(f shard.Filter, why string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.filter == f {
		return
	}
	st.filter = f
	st.log.Info("Shard filtered on the "+f.String(), "shard", st.shard.String(), "reason", why)
}

func (st *shardState) status() shard.Status {
	if st == nil {
		return shard.Status{}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return shard.Status{
		Shard:    shard.Shard{Field: st.shard.Field, Ranges: slices.Clone(st.shard.Ranges)},
		Filter:   st.filter,
		Synced:   st.syncedGen == st.gen,
		Received: st.received.Load(),
		Dropped:  st.dropped.Load(),
	}
}

// narrow returns a tweak that sets the shard selector of the running
// reflector, then applies tweak, if any.
func (st *shardState) narrow(tweak func(*metav1.ListOptions)) func(*metav1.ListOptions) {
	if st == nil {
		return tweak
	}
	return func(o *metav1.ListOptions) {
		if sel := st.wire.Load(); sel != nil {
			o.ShardSelector = *sel
		}
		if tweak != nil {
			tweak(o)
		}
	}
}

// resumeVersion is the version a new reflector resumes from: "" for the
// first, the last one's after that.
func (st *shardState) resumeVersion() string {
	if st == nil {
		return ""
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.resume
}

// observeShardLists wraps list to learn from each response whether the
// server filtered it: a server that applies a shard selector echoes it in
// the list's shardInfo. Lists without that field (unstructured ones) tell
// nothing.
func observeShardLists[L List](st *shardState, list func(context.Context, metav1.ListOptions) (L, error)) func(context.Context, metav1.ListOptions) (L, error) {
	if st == nil {
		return list
	}
	return func(ctx context.Context, opts metav1.ListOptions) (L, error) {
		l, err := list(ctx, opts)
		if err != nil {
			return l, err
		}
		if sl, ok := any(l).(metav1.ShardedListInterface); ok {
			if sl.GetShardInfo() != nil {
				st.observe(shard.FilterServer, "the list response echoes the shard selector")
			} else {
				st.observe(shard.FilterClient, "the list response has no shardInfo: the server ignores shard selectors")
			}
		}
		return l, nil
	}
}

// runShards runs one reflector per shard st is given, in turn, feeding w:
// when the shard changes, the running reflector stops and the next one
// resumes from its version with the new shard's selector. start makes and
// publishes the reflector of a sink.
func runShards[T Object](ctx context.Context, st *shardState, w *writer[T], start func(reflector.Sink[T]) runner) {
	st.mu.Lock()
	st.log = klog.FromContext(ctx)
	st.mu.Unlock()
	for ctx.Err() == nil {
		select {
		case <-st.changed: // a change made before the start: read below
		default:
		}
		s, gen := st.current()
		sink := newShardSink(w, st, s, gen, true)
		if len(s.Ranges) == 0 {
			// No request selects nothing: an empty selector is "all".
			sink.StartList()
			sink.FinishList()
			sink.Watching()
			select {
			case <-ctx.Done():
			case <-st.changed:
			}
			continue
		}
		sel := s.Selector()
		st.wire.Store(&sel)
		resume := runUntil(ctx, start(sink), func() {
			select {
			case <-ctx.Done():
			case <-st.changed:
			}
		})
		st.mu.Lock()
		st.resume = resume
		st.mu.Unlock()
	}
}

// filterSink sits between a reflector and the informer's writer, and
// passes on the objects for which accepts reports true, and only those:
// what shardSink and namespaceSink, which embed it with their keep, do
// alike.
type filterSink[T Object] struct {
	w       *writer[T]
	accepts func(T) bool
}

func (s *filterSink[T]) StartList() { s.w.StartList() }

func (s *filterSink[T]) Put(obj T, from reflector.Origin) {
	if s.accepts(obj) {
		s.w.Put(obj, from)
	}
}

func (s *filterSink[T]) Delete(obj T) {
	if s.accepts(obj) {
		s.w.Delete(obj)
	}
}

func (s *filterSink[T]) Flush() { s.w.Flush() }

// shardSink drops objects outside its shard, and, at the end of the
// shard's first list, evicts the cached objects outside it.
type shardSink[T Object] struct {
	filterSink[T]
	st    *shardState
	shard shard.Shard
	gen   uint64
	evict bool // the next FinishList evicts what is outside the shard
}

// newShardSink returns the sink of shard s, of generation gen, that
// writes to w; evict says whether its first list evicts what is outside
// the shard.
func newShardSink[T Object](w *writer[T], st *shardState, s shard.Shard, gen uint64, evict bool) *shardSink[T] {
	sink := &shardSink[T]{st: st, shard: s, gen: gen, evict: evict}
	sink.filterSink = filterSink[T]{w: w, accepts: sink.keep}
	return sink
}

func (s *shardSink[T]) FinishList() {
	if s.evict {
		s.evict = false
		s.w.evictOutside(s.shard)
	}
	s.w.FinishList()
}

// Watching marks the shard synced first, so that an informer that has
// synced reports its shard synced too.
func (s *shardSink[T]) Watching() {
	s.st.scopeSynced(s.gen)
	s.w.Watching()
}

// keep counts obj and reports whether it is in the shard.
func (s *shardSink[T]) keep(obj T) bool {
	s.st.received.Add(1)
	if s.shard.Contains(obj) {
		return true
	}
	s.st.dropped.Add(1)
	s.st.observe(shard.FilterClient, "an object outside the shard arrived: the server ignores shard selectors")
	return false
}

// runUntil runs refl until wait returns, or ctx ends, then stops it and
// returns the version it reached.
func runUntil(ctx context.Context, refl runner, wait func()) string {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		refl.Run(rctx)
	}()
	wait()
	cancel()
	<-done
	return refl.LastSyncResourceVersion()
}
