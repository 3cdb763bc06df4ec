package informers

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/dispatch"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/store"
)

// namespaceScope is the namespace selection of an informer made with
// Options.NamespaceSelector: the factory's Namespace informer it follows,
// and the namespaces whose objects the cache holds.
type namespaceScope struct {
	selector labels.Selector
	only     string // the informer's namespace, if it has one: nothing else is selected
	source   *SharedInformer[*corev1.Namespace]
	changed  chan struct{} // signalled when a Namespace object changes
	refused  chan struct{} // signalled when a cluster-wide list is refused (403)
	mode     atomic.Int32  // the NamespaceMode in use; Auto until chosen

	mu sync.Mutex
	// applied is the set of namespaces whose objects the cache holds, as
	// far as the running reflector has listed them; nil before the first
	// list (nothing is excluded then).
	applied map[string]bool
	resume  string // the version the next reflector resumes from
}

func newNamespaceScope(selector labels.Selector, only string, source *SharedInformer[*corev1.Namespace]) *namespaceScope {
	return &namespaceScope{selector: selector, only: only, source: source, changed: make(chan struct{}, 1), refused: make(chan struct{}, 1)}
}

// wanted returns the namespaces the selector selects now, as the
// Namespace informer shows them.
func (ns *namespaceScope) wanted() map[string]bool {
	want := map[string]bool{}
	for n := range ns.source.Lister().Select(ns.selector) {
		if ns.only == "" || n.Name == ns.only {
			want[n.Name] = true
		}
	}
	return want
}

// exists reports whether the server still has namespace name, as the
// Namespace informer shows it.
func (ns *namespaceScope) exists(name string) bool {
	_, err := ns.source.Lister().Get(name)
	return err == nil
}

// holds reports whether the cache may hold objects of namespace name.
func (ns *namespaceScope) holds(name string) bool {
	if ns == nil || name == "" {
		return true
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.applied == nil || ns.applied[name]
}

func (ns *namespaceScope) setApplied(set map[string]bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.applied = set
}

// resumeVersion is the version a new reflector resumes from: "" for the
// first, the last one's after that.
func (ns *namespaceScope) resumeVersion() string {
	if ns == nil {
		return ""
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.resume
}

// poke signals that the selection may have changed.
func (ns *namespaceScope) poke() { signal(ns.changed) }

// signal sends on ch, a channel of one, unless a signal is pending
// already: the receiver reads the latest state.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// clusterWideFailed returns onErr, which, with NamespaceModeAuto, takes a
// list refused with 403 Forbidden as the signal to turn to a watch per
// namespace rather than as the informer's error.
func (ns *namespaceScope) clusterWideFailed(mode NamespaceMode, onErr func(reflector.Op, error)) func(reflector.Op, error) {
	if ns == nil || mode != NamespaceModeAuto {
		return onErr
	}
	return func(op reflector.Op, err error) {
		if op == reflector.OpList && apierrors.IsForbidden(err) {
			signal(ns.refused)
			return
		}
		onErr(op, err)
	}
}

// namespaceRetry is how long an informer waits before it looks again at a
// Namespace informer that could not sync (a 403 on namespaces).
const namespaceRetry = time.Second

// runNamespaceScoped runs one cluster-wide reflector per selection of
// namespaces, in turn, feeding the informer's writer only with objects of
// the selected namespaces (and of its shard, if it has one): when a
// Namespace's labels change the selection, or the shard changes, the
// running reflector stops and the next one lists from its version, as a
// sharded informer does. start makes and publishes the reflector of a
// sink.
//
// With NamespaceModePerNamespace, as forced or as NamespaceModeAuto
// chooses, it runs one reflector per selected namespace instead (see
// namespaceWatches), which newWatch makes.
func runNamespaceScoped[T Object](ctx context.Context, i *SharedInformer[T], start func(reflector.Sink[T]) runner, newWatch namespaceReflectorConfig) {
	ns, st := i.namespaces, i.shard
	reg, err := ns.source.AddHandler(HandlerFuncs[*corev1.Namespace]{
		OnAdd:    func(*corev1.Namespace, bool) { ns.poke() },
		OnUpdate: func(*corev1.Namespace, *corev1.Namespace) { ns.poke() },
		OnDelete: func(Deleted[*corev1.Namespace]) { ns.poke() },
	}, WithName("namespace selection of "+i.cfg.name))
	if err != nil {
		i.report(errorf("%s: following namespaces: %w", i.cfg.desc, err))
		return
	}
	defer reg.Remove()
	for {
		err := ns.source.WaitForSync(ctx)
		if err == nil {
			break
		}
		i.requestFailed(reflector.OpList, errorf("namespaces of NamespaceSelector %s: %w", ns.selector, err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(namespaceRetry):
		}
	}
	if st != nil {
		st.mu.Lock()
		st.log = klog.FromContext(ctx)
		st.mu.Unlock()
	}
	mode := i.cfg.namespaceMode
	if mode == NamespaceModeAuto {
		mode = autoMode(len(ns.wanted()), ns.source.Lister().Len(), ns.only != "", st != nil)
	}
	if mode == NamespaceModePerNamespace {
		runNamespaceWatches(ctx, i, newWatch)
		return
	}
	ns.mode.Store(int32(NamespaceModeClusterWide))
	var shardChanged chan struct{}
	if st != nil {
		shardChanged = st.changed
	}
	refused := false // a cluster-wide list was refused: watch each namespace instead
	for ctx.Err() == nil && !refused {
		select {
		case <-ns.changed: // read below
		default:
		}
		sink := &namespaceSink[T]{scope: ns, want: ns.wanted(), evict: true}
		sink.filterSink = filterSink[T]{w: i.writer, accepts: sink.keep}
		if st != nil {
			select {
			case <-st.changed: // read below
			default:
			}
			s, gen := st.current()
			sink.sharded = newShardSink(i.writer, st, s, gen, false)
			sel := s.Selector()
			st.wire.Store(&sel)
		}
		resume := runUntil(ctx, start(sink), func() {
			for restart := false; !restart; {
				select {
				case <-ctx.Done():
					restart = true
				case <-shardChanged:
					restart = true
				case <-ns.changed:
					restart = !maps.Equal(ns.wanted(), sink.want)
				case <-ns.refused:
					refused = i.cfg.namespaceMode == NamespaceModeAuto
					restart = refused
				}
			}
		})
		ns.mu.Lock()
		ns.resume = resume
		ns.mu.Unlock()
	}
	if refused {
		klog.FromContext(ctx).Info("Cluster-wide list refused (403); watching each selected namespace", "namespaceSelector", ns.selector.String())
		runNamespaceWatches(ctx, i, newWatch)
	}
}

// namespaceSink drops objects of namespaces outside its selection (and
// outside its shard), evicts the cached objects of namespaces that left
// before its first list, and those outside its shard after it.
type namespaceSink[T Object] struct {
	filterSink[T]
	scope   *namespaceScope
	want    map[string]bool
	sharded *shardSink[T] // keeps the shard; nil if not sharded
	evict   bool          // the next list evicts what is outside the selection
}

func (s *namespaceSink[T]) StartList() {
	if s.evict {
		// What left goes at once: the lister never shows it again. What
		// entered shows once it has been listed.
		if applied := s.scope.holdsNow(); applied != nil {
			maps.DeleteFunc(applied, func(n string, _ bool) bool { return !s.want[n] })
			s.scope.setApplied(applied)
		}
		s.w.evictNamespaces(s.want, s.scope.exists)
	}
	s.w.StartList()
}

func (s *namespaceSink[T]) FinishList() {
	if s.evict {
		s.evict = false
		if s.sharded != nil {
			s.w.evictOutside(s.sharded.shard)
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
func (s *namespaceSink[T]) keep(obj T) bool {
	if ns := obj.GetNamespace(); ns != "" && !s.want[ns] {
		return false // cluster-scoped objects have no namespace to select
	}
	return s.sharded == nil || s.sharded.keep(obj)
}

// holdsNow returns the namespaces the cache holds objects of, as the
// last list applied them.
func (ns *namespaceScope) holdsNow() map[string]bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return maps.Clone(ns.applied)
}

// evictNamespaces removes the cached objects of namespaces outside want.
// Handlers see them deleted with LeftNamespace set, or, if exists says
// their namespace is gone from the server, with their final state unknown.
func (w *writer[T]) evictNamespaces(want map[string]bool, exists func(string) bool) {
	w.store.Lock()
	for _, obj := range w.store.AppendAllLocked(nil) {
		ns := obj.GetNamespace()
		if ns == "" || want[ns] {
			continue
		}
		if old, existed := w.store.DeleteLocked(store.KeyOf(obj)); existed {
			if exists(ns) {
				w.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: old, LeftNamespace: true})
			} else {
				w.notifyGone(old)
			}
		}
	}
	w.store.Unlock()
	w.Flush()
}

// namespacesResource is the resource of Namespace objects.
var namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")

// NamespaceMode returns how an informer with a NamespaceSelector watches:
// NamespaceModePerNamespace or NamespaceModeClusterWide once it has
// started and chosen, and NamespaceModeAuto before (or without a
// NamespaceSelector).
func (i *SharedInformer[T]) NamespaceMode() NamespaceMode {
	if i.namespaces == nil {
		return NamespaceModeAuto
	}
	return NamespaceMode(i.namespaces.mode.Load())
}
