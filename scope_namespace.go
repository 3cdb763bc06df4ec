package informers

import (
	"context"
	"maps"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/reflector"
)

// namespaceScope is the scope of an informer made with
// Options.NamespaceSelector: it follows the factory's Namespace informer
// and caches the objects of the namespaces selected, with one
// cluster-wide reflector whose objects it filters (and whose shard it
// keeps, if the informer is sharded too), or with one reflector per
// selected namespace (see namespaceWatches), as its NamespaceMode says.
type namespaceScope[T Object] struct {
	*namespaceSelection
	shard   *shardState   // nil if not sharded
	want    NamespaceMode // as configured
	refused chan struct{} // signalled when a cluster-wide list is refused (403)
	mode    atomic.Int32  // the NamespaceMode in use; Auto until chosen

	// version is the version the cache has reached: the cluster-wide
	// reflector's, or the lowest of the namespaces' (published at every
	// move of any of them, so that it wakes every waiter).
	version reflector.Version
	current runningRef
	// watches is set while a reflector per namespace runs.
	watches atomic.Pointer[namespaceWatches[T]]
}

func newNamespaceScope[T Object](c config[T], source namespaceSource) *namespaceScope[T] {
	s := &namespaceScope[T]{
		namespaceSelection: newNamespaceSelection(c.filter.namespaces, c.sel.namespace, source),
		want:               c.namespaceMode,
		refused:            make(chan struct{}, 1),
	}
	if c.shard != nil {
		s.shard = newShardState(*c.shard)
	}
	return s
}

func (s *namespaceScope[T]) excludes(obj T) bool {
	if !s.holds(obj.GetNamespace()) {
		return true
	}
	if s.shard != nil {
		sh, _ := s.shard.current()
		return !sh.Contains(obj)
	}
	return false
}

// progress returns, with a reflector per namespace, the version of
// namespace ns's, or the lowest of them all for ""; with one cluster-wide
// reflector, its version.
func (s *namespaceScope[T]) progress(ns string) string {
	if p := s.watches.Load(); p != nil && ns != "" {
		if v, ok := p.versionOf(ns); ok {
			return v
		}
	}
	return s.version.Get()
}

func (s *namespaceScope[T]) moved() <-chan struct{} { return nextOf(&s.version) }
func (s *namespaceScope[T]) running() runner        { return s.current.get() }
func (s *namespaceScope[T]) shards() *shardState    { return s.shard }

func (s *namespaceScope[T]) report() scopeReport {
	r := scopeReport{mode: NamespaceMode(s.mode.Load())}
	if s.shard != nil {
		r.shard = s.shard.status()
	}
	return r
}

// namespaceRetry is how long an informer waits before it looks again at a
// Namespace informer that could not sync (a 403 on namespaces).
const namespaceRetry = time.Second

// run follows the Namespace informer and runs one cluster-wide reflector
// per selection of namespaces, in turn, feeding the writer only with
// objects of the selected namespaces (and of its shard, if it has one):
// when a Namespace's labels change the selection, or the shard changes,
// the running reflector stops and the next one lists from its version, as
// a sharded informer does.
//
// With NamespaceModePerNamespace, as configured or as NamespaceModeAuto
// chooses, or once a cluster-wide list is refused (403) under
// NamespaceModeAuto, it runs one reflector per selected namespace instead.
func (s *namespaceScope[T]) run(ctx context.Context, env scopeEnv[T]) {
	reg, err := s.source.AddHandlerWith(HandlerFuncs[*corev1.Namespace]{
		OnAdd:    func(*corev1.Namespace, bool) { s.poke() },
		OnUpdate: func(*corev1.Namespace, *corev1.Namespace) { s.poke() },
		OnDelete: func(Deleted[*corev1.Namespace]) { s.poke() },
	}, HandlerOptions{Name: "namespace selection of " + env.name})
	if err != nil {
		env.report(errorf("%s: following namespaces: %w", env.desc, err))
		return
	}
	defer reg.Remove()
	for {
		err := s.source.waitForSync(ctx)
		if err == nil {
			break
		}
		env.onErr(reflector.OpList, errorf("namespaces of NamespaceSelector %s: %w", s.selector, err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(namespaceRetry):
		}
	}
	if s.shard != nil {
		s.shard.setLog(klog.FromContext(ctx))
	}
	mode := s.want
	if mode == NamespaceModeAuto {
		mode = autoMode(len(s.wanted()), s.source.Lister().Len(), s.only != "", s.shard != nil)
	}
	if mode == NamespaceModePerNamespace || s.runClusterWide(ctx, env) {
		s.runPerNamespace(ctx, env)
	}
}

// runClusterWide runs the cluster-wide reflectors until ctx ends, or
// until a list is refused with 403 Forbidden under NamespaceModeAuto,
// which it reports true for: the informer turns to a watch per namespace.
func (s *namespaceScope[T]) runClusterWide(ctx context.Context, env scopeEnv[T]) (refused bool) {
	s.mode.Store(int32(NamespaceModeClusterWide))
	var shardChanged chan struct{}
	if s.shard != nil {
		shardChanged = s.shard.changed
	}
	onErr := env.onErr
	if s.want == NamespaceModeAuto {
		onErr = func(op reflector.Op, err error) {
			if op == reflector.OpList && apierrors.IsForbidden(err) {
				signal(s.refused)
				return
			}
			env.onErr(op, err)
		}
	}
	resume := ""
	for ctx.Err() == nil && !refused {
		select {
		case <-s.changed: // read below
		default:
		}
		sink := &namespaceSink[T]{scope: s, want: s.wanted(), evict: true}
		sink.filterSink = filterSink[T]{w: env.w, accepts: sink.keep}
		req := env.request(sink, resume, &s.version)
		if s.shard != nil {
			select {
			case <-shardChanged: // read below
			default:
			}
			sh, gen := s.shard.current()
			sink.sharded = newShardSink(env.w, s.shard, sh, gen, false)
			req = shardRequest(env, s.shard, sh, sink, resume, &s.version)
		}
		req.watchList = false // the selection changes between lists
		req.onErr = onErr
		refl, err := env.refls.make(req)
		if err != nil {
			env.report(err)
			return false
		}
		s.current.set(refl)
		resume = runUntil(ctx, refl, func() {
			for restart := false; !restart; {
				select {
				case <-ctx.Done():
					restart = true
				case <-shardChanged:
					restart = true
				case <-s.changed:
					restart = !maps.Equal(s.wanted(), sink.want)
				case <-s.refused:
					refused = s.want == NamespaceModeAuto
					restart = refused
				}
			}
		})
	}
	if refused {
		klog.FromContext(ctx).Info("Cluster-wide list refused (403); watching each selected namespace", "namespaceSelector", s.selector.String())
	}
	return refused
}

// runPerNamespace runs a reflector per selected namespace until ctx
// ends, starting and stopping them as namespaces enter and leave the
// selection: NamespaceModePerNamespace.
func (s *namespaceScope[T]) runPerNamespace(ctx context.Context, env scopeEnv[T]) {
	s.mode.Store(int32(NamespaceModePerNamespace))
	p := &namespaceWatches[T]{
		sel: s.namespaceSelection, env: env, version: &s.version, wake: make(chan struct{}, 1),
		watches: map[string]*namespaceWatch{},
		errs:    map[string]*ListWatchError{},
	}
	s.watches.Store(p)
	s.current.set(p)
	p.Run(ctx)
}

// namespaceSink drops objects of namespaces outside its selection (and
// outside its shard), evicts the cached objects of namespaces that left
// before its first list, and those outside its shard after it.
type namespaceSink[T Object] struct {
	filterSink[T]
	scope   *namespaceScope[T]
	want    map[string]bool
	sharded *shardSink[T] // keeps the shard; nil if not sharded
	evict   bool          // the next list evicts what is outside the selection
}

func (s *namespaceSink[T]) StartList() {
	if s.evict {
		// What left goes at once: the lister never shows it again. What
		// entered shows once it has been listed.
		s.scope.applyOnly(s.want)
		s.w.evict(leavesNamespaces[T](s.scope.namespaceSelection, s.want))
	}
	s.w.StartList()
}

func (s *namespaceSink[T]) FinishList() {
	if s.evict {
		s.evict = false
		if s.sharded != nil {
			s.w.evict(leavesShard[T](s.sharded.shard))
		}
		s.scope.setApplied(s.want)
	}
	s.w.FinishList()
}

func (s *namespaceSink[T]) Watching() {
	if s.sharded != nil {
		s.sharded.st.scopeSynced(s.sharded.gen)
	}
	s.w.Watching()
}

// keep reports whether obj is of a selected namespace and in the shard.
func (s *namespaceSink[T]) keep(obj metav1.Object) bool {
	if ns := obj.GetNamespace(); ns != "" && !s.want[ns] {
		return false // cluster-scoped objects have no namespace to select
	}
	return s.sharded == nil || s.sharded.keep(obj)
}
