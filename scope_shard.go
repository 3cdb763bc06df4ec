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

// shardState is the shard of a sharded informer and what it has learned
// of the server's filtering; its scope is a shardScope, or a
// namespaceScope that is sharded too.
type shardState struct {
	received, dropped atomic.Uint64
	changed           chan struct{} // signalled when the shard is set

	mu        sync.Mutex
	shard     shard.Shard // canonical
	gen       uint64
	syncedGen uint64        // the generation whose shard has synced; 0 if none
	syncCh    chan struct{} // closed once generation gen syncs
	filter    shard.Filter
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

// setLog makes the shard log to log.
func (st *shardState) setLog(log klog.Logger) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.log = log
}

// narrow returns what sets the selector of shard s on a request.
func narrowTo(s shard.Shard) func(*metav1.ListOptions) {
	sel := s.Selector()
	return func(o *metav1.ListOptions) { o.ShardSelector = sel }
}

// observeList learns from a list response whether the server filtered
// it: a server that applies a shard selector echoes it in the list's
// shardInfo. Lists without that field (unstructured ones, read whole)
// tell nothing; the metadata of a streamed list has it, whatever the
// shape of its objects.
func (st *shardState) observeList(l List) {
	if sl, ok := any(l).(metav1.ShardedListInterface); ok {
		if sl.GetShardInfo() != nil {
			st.observe(shard.FilterServer, "the list response echoes the shard selector")
		} else {
			st.observe(shard.FilterClient, "the list response has no shardInfo: the server ignores shard selectors")
		}
	}
}

// resharder is implemented by the scopes that can hold a shard: those of
// Options.Shard, with a NamespaceSelector or not. shards returns nil for
// one that does not.
type resharder interface{ shards() *shardState }

// shardsOf returns the shard that sc holds, or nil if it holds none.
func shardsOf[T Object](sc scope[T]) *shardState {
	if r, ok := sc.(resharder); ok {
		return r.shards()
	}
	return nil
}

// shardScope is the scope of a sharded informer: one reflector per shard
// it is given, in turn, feeding the writer through a shardSink.
type shardScope[T Object] struct {
	st      *shardState
	version reflector.Version
	current runningRef
}

func newShardScope[T Object](s shard.Shard) *shardScope[T] {
	return &shardScope[T]{st: newShardState(s)}
}

func (s *shardScope[T]) excludes(obj T) bool {
	sh, _ := s.st.current()
	return !sh.Contains(obj)
}

func (s *shardScope[T]) progress(string) string { return s.version.Get() }
func (s *shardScope[T]) moved() <-chan struct{} { return nextOf(&s.version) }
func (s *shardScope[T]) running() runner        { return s.current.get() }
func (s *shardScope[T]) report() scopeReport    { return scopeReport{shard: s.st.status()} }
func (s *shardScope[T]) shards() *shardState    { return s.st }

// request returns the request of the reflector of sink, which lists shard
// sh and resumes from rv. A sharded informer always lists: list responses
// tell whether the server filters the shard.
func shardRequest[T Object](env scopeEnv[T], st *shardState, sh shard.Shard, sink reflector.Sink[T], rv string, version *reflector.Version) reflectorRequest[T] {
	req := env.request(sink, rv, version)
	req.watchList = false
	req.narrow = narrowTo(sh)
	req.observeList = st.observeList
	return req
}

// run runs one reflector per shard the scope is given, in turn: when the
// shard changes, the running reflector stops and the next one resumes
// from its version with the new shard's selector.
func (s *shardScope[T]) run(ctx context.Context, env scopeEnv[T]) {
	st := s.st
	st.setLog(klog.FromContext(ctx))
	resume := ""
	for ctx.Err() == nil {
		select {
		case <-st.changed: // a change made before the start: read below
		default:
		}
		sh, gen := st.current()
		sink := newShardSink(env.w, st, sh, gen, true)
		if len(sh.Ranges) == 0 {
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
		refl, err := env.refls.make(shardRequest(env, st, sh, sink, resume, &s.version))
		if err != nil {
			env.report(err)
			return
		}
		s.current.set(refl)
		resume = runUntil(ctx, refl, func() {
			select {
			case <-ctx.Done():
			case <-st.changed:
			}
		})
	}
}

// filterSink sits between a reflector and the informer's writer, and
// passes on the objects for which accepts reports true, and only those:
// what shardSink and namespaceSink, which embed it with their keep, do
// alike.
type filterSink[T Object] struct {
	w       *writer[T]
	accepts func(metav1.Object) bool
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

func (s *filterSink[T]) Undecodable(u reflector.Undecodable, deleted bool) {
	if s.accepts(metaOf(u)) {
		s.w.Undecodable(u, deleted)
	}
}

// metaOf returns the metadata of an object that could not be decoded,
// for what selects objects by metadata.
func metaOf(u reflector.Undecodable) metav1.Object {
	ns, name, uid, rv := u.Identity()
	return &metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, ResourceVersion: rv}
}

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
		s.w.evict(leavesShard[T](s.shard))
	}
	s.w.FinishList()
}

// leavesShard returns what tells the objects outside shard sh as leaving
// it.
func leavesShard[T Object](sh shard.Shard) func(T) leaving {
	return func(obj T) leaving {
		if sh.Contains(obj) {
			return stays
		}
		return leftShard
	}
}

// Watching marks the shard synced first, so that an informer that has
// synced reports its shard synced too.
func (s *shardSink[T]) Watching() {
	s.st.scopeSynced(s.gen)
	s.w.Watching()
}

// keep counts obj and reports whether it is in the shard.
func (s *shardSink[T]) keep(obj metav1.Object) bool {
	s.st.received.Add(1)
	if s.shard.Contains(obj) {
		return true
	}
	s.st.dropped.Add(1)
	s.st.observe(shard.FilterClient, "an object outside the shard arrived: the server ignores shard selectors")
	return false
}
