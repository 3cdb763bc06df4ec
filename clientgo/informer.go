package clientgo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
)

// View is a read-only cache.SharedIndexInformer over a SharedInformer: its
// store and indexer read the informer's cache (the objects are shared with
// it, as client-go's are), HasSynced, LastSyncResourceVersion and
// IsStopped report the informer's state, and handlers added through it are
// the informer's handlers. Methods that would change how the informer is
// fed (SetTransform, SetWatchErrorHandler, the store's writes) return an
// error: set those through informers.Options. Get one with
// SharedIndexInformer; share one View per informer, since indexes added
// through a View are known, with their functions, to that View only.
type View[T informers.Object] struct {
	inf *informers.SharedInformer[T]

	mu       sync.Mutex
	indexers cache.Indexers // added through the View, and the namespace index
}

var _ cache.SharedIndexInformer = (*View[informers.Object])(nil)

// SharedIndexInformer returns a read-only cache.SharedIndexInformer view of
// inf, for client-go code that takes an informer:
//
//	podInformer := clientgo.SharedIndexInformer(informers.Informer[*corev1.Pod](factory))
//	podLister := corelisters.NewPodLister(podInformer.GetIndexer())
//	cache.WaitForCacheSync(stop, podInformer.HasSynced)
func SharedIndexInformer[T informers.Object](inf *informers.SharedInformer[T]) *View[T] {
	return &View[T]{inf: inf, indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}
}

// Informer returns the informer the View shows.
func (v *View[T]) Informer() *informers.SharedInformer[T] { return v.inf }

// AddEventHandler adds h with the informer's default resync period.
func (v *View[T]) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return v.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds h, replaying the cache to it as
// updates every resync (0: never).
func (v *View[T]) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return v.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resync})
}

// AddEventHandlerWithOptions adds h with the resync period of opts, if
// set. opts.Logger is not used: the informer logs through the logger of the
// context it runs with.
func (v *View[T]) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, fmt.Errorf("clientgo: %s: AddEventHandler with a nil handler", v.inf)
	}
	var hopts informers.HandlerOptions
	if opts.ResyncPeriod != nil {
		hopts.ResyncPeriod = informers.Set(*opts.ResyncPeriod)
	}
	reg, err := v.inf.AddHandlerWith(Handler[T](h), hopts)
	if err != nil {
		return nil, err
	}
	return Registration[T]{reg}, nil
}

// RemoveEventHandler removes a handler added through a View of the same
// informer. Removing it twice is not an error.
func (v *View[T]) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(Registration[T])
	if !ok {
		return fmt.Errorf("clientgo: %s: RemoveEventHandler: %T is not a registration of this informer", v.inf, handle)
	}
	reg.Remove()
	return nil
}

// GetStore returns the read-only store over the informer's cache.
func (v *View[T]) GetStore() cache.Store { return indexer[T]{v} }

// GetIndexer returns the read-only indexer over the informer's cache.
func (v *View[T]) GetIndexer() cache.Indexer { return indexer[T]{v} }

// GetController returns a cache.Controller that runs, and reports on, the
// informer, as Run and HasSynced do.
func (v *View[T]) GetController() cache.Controller { return controller[T]{v} }

// Run runs the informer until stopCh is closed; see RunWithContext.
func (v *View[T]) Run(stopCh <-chan struct{}) {
	v.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs the informer until ctx ends. An informer runs once:
// if it runs already (a Factory started it) or has stopped, RunWithContext
// logs the error and returns at once, as client-go's informers do when run
// twice.
func (v *View[T]) RunWithContext(ctx context.Context) {
	if err := v.inf.Run(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Informer not run", "informer", v.inf.String())
	}
}

// HasSynced reports whether the informer's cache has synced.
func (v *View[T]) HasSynced() bool { return v.inf.HasSynced() }

// HasSyncedChecker returns a checker done once the cache has synced.
func (v *View[T]) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: v.inf.String(), done: v.inf.Synced()}
}

// LastSyncResourceVersion returns the resource version the cache is at.
func (v *View[T]) LastSyncResourceVersion() string { return v.inf.LastSyncResourceVersion() }

// IsStopped reports whether the informer has stopped running.
func (v *View[T]) IsStopped() bool {
	select {
	case <-v.inf.Stopped():
		return true
	default:
		return false
	}
}

// SetWatchErrorHandler returns an error: set informers.Tuning.OnError, in
// informers.Options or FactoryOptions, which receives every failed request.
func (v *View[T]) SetWatchErrorHandler(cache.WatchErrorHandler) error {
	return v.unsupported("SetWatchErrorHandler", "set Tuning.OnError, in informers.Options or FactoryOptions")
}

// SetWatchErrorHandlerWithContext returns an error, as SetWatchErrorHandler.
func (v *View[T]) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return v.unsupported("SetWatchErrorHandlerWithContext", "set Tuning.OnError, in informers.Options or FactoryOptions")
}

// SetTransform returns an error: set informers.Options.Transform when the
// informer is made.
func (v *View[T]) SetTransform(cache.TransformFunc) error {
	return v.unsupported("SetTransform", "set Transform in informers.Options when the informer is made")
}

// AddIndexers adds indexes to the informer, before or after it starts. An
// index function's error is reported as an *informers.IndexError (to
// Tuning.OnError), and the object is left out of that index. The built-in
// namespace index is there already: adding it with
// cache.MetaNamespaceIndexFunc does nothing, with another function fails.
func (v *View[T]) AddIndexers(indexers cache.Indexers) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var errs []error
	for name, fn := range indexers {
		if name == cache.NamespaceIndex {
			if reflect.ValueOf(fn).Pointer() != reflect.ValueOf(cache.MetaNamespaceIndexFunc).Pointer() {
				errs = append(errs, fmt.Errorf("clientgo: %s: index %q is the built-in namespace index; its function is cache.MetaNamespaceIndexFunc", v.inf, name))
			}
			continue
		}
		if _, ok := v.indexers[name]; ok {
			errs = append(errs, fmt.Errorf("clientgo: %s: index %q exists already", v.inf, name))
			continue
		}
		if _, err := v.inf.AddIndex(name, indexFunc[T](name, fn)); err != nil {
			errs = append(errs, err)
			continue
		}
		v.indexers[name] = fn
	}
	return errors.Join(errs...)
}

// indexFunc adapts a client-go index function. An error cannot be
// returned to the cache, which recovers panics of index functions and
// reports them as *informers.IndexError: the error travels that way.
func indexFunc[T informers.Object](name string, fn cache.IndexFunc) informers.IndexFunc[T] {
	return func(obj T) []string {
		vals, err := fn(obj)
		if err != nil {
			panic(fmt.Errorf("index function %q: %w", name, err))
		}
		return vals
	}
}

func (v *View[T]) unsupported(method, instead string) error {
	return fmt.Errorf("clientgo: %s: %s is not supported on a view of the informer: %s", v.inf, method, instead)
}

func (v *View[T]) indexFuncs() cache.Indexers {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(cache.Indexers, len(v.indexers))
	for k, fn := range v.indexers {
		out[k] = fn
	}
	return out
}

// Registration is a handler added through a View: a
// cache.ResourceEventHandlerRegistration and the informer's registration.
type Registration[T informers.Object] struct {
	*informers.Registration[T]
}

// HasSyncedChecker returns a checker done once the handler has been
// delivered the informer's initial state.
func (r Registration[T]) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: r.String(), done: r.Synced()}
}

// doneChecker is a cache.DoneChecker over a channel.
type doneChecker struct {
	name string
	done <-chan struct{}
}

func (c doneChecker) Name() string          { return c.name }
func (c doneChecker) Done() <-chan struct{} { return c.done }

// controller is the cache.Controller of a View.
type controller[T informers.Object] struct{ v *View[T] }

func (c controller[T]) Run(stopCh <-chan struct{})          { c.v.Run(stopCh) }
func (c controller[T]) RunWithContext(ctx context.Context)  { c.v.RunWithContext(ctx) }
func (c controller[T]) HasSynced() bool                     { return c.v.HasSynced() }
func (c controller[T]) LastSyncResourceVersion() string     { return c.v.LastSyncResourceVersion() }
func (c controller[T]) HasSyncedChecker() cache.DoneChecker { return c.v.HasSyncedChecker() }
