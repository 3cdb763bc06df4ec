package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/apiclient"
)

// Factory creates informers on request and shares them: one informer per
// resource, namespace and selectors, whatever the caller. It replaces
// client-go's generated factories and listers with one generic accessor,
// Informer. The zero value is not usable; call NewFactory.
type Factory struct {
	err    error // a misuse of NewFactory, reported by every Informer
	opts   FactoryOptions
	scheme *runtime.Scheme
	api    *apiclient.Client
	lists  *semaphore.Weighted // bounds concurrent lists, if set

	mu      sync.Mutex
	entries map[informerKey]*factoryEntry
	failed  []error         // requests Informer could not serve
	ctx     context.Context // set by Start
	stopped bool
	running sync.WaitGroup
	// version counts the changes of entries; synced is Synced's channel
	// for the entries as of syncedAt, made once per version asked for.
	version  uint64
	synced   <-chan struct{}
	syncedAt uint64
}

// informerKey tells informers apart.
type informerKey struct {
	shape apiclient.Shape
	gvr   schema.GroupVersionResource
	selection
	namespaceMode NamespaceMode
	shard         string       // the shard's field and selector; "" if not sharded
	view          reflect.Type // a view's Go type: views of one resource differ
}

// factoryEntry holds one informer with its type erased.
//
// Invariant: inf is a *SharedInformer[T] whose T is goType; Informer reads
// it back with a checked type assertion.
type factoryEntry struct {
	inf      AnyInformer
	goType   reflect.Type
	hasXform bool    // the creating request gave a transform
	xformPtr uintptr // its code, to tell a repeated transform from another
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewFactory returns a factory over client, a real or a fake clientset,
// with default options.
func NewFactory(client kubernetes.Interface) *Factory {
	return NewFactoryWith(client, FactoryOptions{})
}

// NewFactoryWith returns a factory over client configured by opts. client
// may be nil when opts sets RESTConfig or Server.
func NewFactoryWith(client kubernetes.Interface, opts FactoryOptions) *Factory {
	f := &Factory{opts: opts, scheme: scheme.Scheme, entries: make(map[informerKey]*factoryEntry)}
	if opts.Scheme != nil {
		f.scheme = apiclient.WithBuiltIns(opts.Scheme)
	}
	f.api = apiclient.New(client, apiclient.Config{
		Server:     opts.Server,
		RESTConfig: opts.RESTConfig,
		Dynamic:    opts.Dynamic,
		Metadata:   opts.Metadata,
		Scheme:     f.scheme,
		Decoders:   opts.Decoders.apiDecoders(),
	})
	if opts.MaxConcurrentLists > 0 {
		// FIFO: informers list in the order they were requested.
		f.lists = semaphore.NewWeighted(int64(opts.MaxConcurrentLists))
	}
	if client == nil && opts.RESTConfig == nil && opts.Server == nil {
		f.err = errors.New("NewFactoryWith needs a clientset, FactoryOptions.RESTConfig or FactoryOptions.Server")
	}
	return f
}

// Informer returns the factory's shared informer for objects of type T with
// default options, creating it on first use:
//
//	pods := informers.Informer[*corev1.Pod](factory)
//
// T's resource comes from its kind in the factory's scheme. An informer
// requested after Start starts at once.
//
// Informer never panics and always returns an informer. When it cannot
// serve T (a type unknown to the scheme, a resource already served as
// another Go type, conflicting options), the informer it returns carries
// the reason: its LastError, AddHandler and Run return it, and so does
// WaitForSync, for the informer and for its factory.
func Informer[T Object](f *Factory) *SharedInformer[T] {
	return InformerWith(f, Options[T]{})
}

// InformerWith is Informer with options: a namespace, selectors, a
// resource for dynamic and metadata-only informers and views (see
// ViewMeta), indexes, a transform, and tuning that overrides the
// factory's:
//
//	web := informers.InformerWith(factory, informers.Options[*corev1.Pod]{LabelSelector: "app=web"})
func InformerWith[T Object](f *Factory, opts Options[T]) *SharedInformer[T] {
	if f == nil {
		return failedInformer[T](errorf("Informer[%v]: nil Factory", reflect.TypeFor[T]()))
	}
	inf, err := informer(f, opts)
	if err != nil {
		err = errorf("Informer[%v]: %w", reflect.TypeFor[T](), err)
		f.mu.Lock()
		f.failed = append(f.failed, err)
		f.mu.Unlock()
		return failedInformer[T](err)
	}
	return inf
}

// informer returns the informer that opts select, reusing the factory's
// or creating it.
func informer[T Object](f *Factory, o Options[T]) (*SharedInformer[T], error) {
	if f.err != nil {
		return nil, f.err
	}
	target, err := apiclient.Resolve[T](f.scheme, o.Resource)
	if err != nil {
		return nil, err
	}
	c, err := resolveConfig(o, f.opts, target.GVR)
	if err != nil {
		return nil, err
	}
	namespaces, err := namespacesFor(f, c) // before f.mu: it asks f for an informer
	if err != nil {
		return nil, err
	}
	key := informerKey{shape: target.Shape, gvr: target.GVR, selection: c.sel, shard: c.shardKey}
	if c.sel.namespaces != "" {
		key.namespaceMode = c.namespaceMode
	}
	if target.Shape == apiclient.View {
		key.view = reflect.TypeFor[T]()
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return nil, ErrStopped
	}
	if e := f.entries[key]; e != nil {
		return reuse(e, target, o, c)
	}
	c = c.viaFactory(f.lists)
	funcs, err := apiclient.ListWatch[T](f.api, target, c.sel.namespace, c.decoding)
	if err != nil {
		return nil, err
	}
	whole := listWatchOf[T](funcs)
	refls, err := newReflectors(c, func(ns string) (*ListWatch[T, apiclient.List], error) {
		if ns == "" {
			return whole, nil
		}
		funcs, err := apiclient.ListWatch[T](f.api, target, ns, c.decoding)
		if err != nil {
			return nil, err
		}
		return listWatchOf[T](funcs), nil
	})
	if err != nil {
		return nil, err
	}
	inf, err := newInformer(c, refls, newScope(c, namespaces))
	if err != nil {
		return nil, err
	}
	e := &factoryEntry{inf: inf, goType: reflect.TypeFor[T](), done: make(chan struct{})}
	if o.Transform != nil {
		e.hasXform, e.xformPtr = true, funcPtr(o.Transform)
	}
	f.entries[key] = e
	f.version++
	if f.ctx != nil {
		f.startLocked(e)
	}
	return inf, nil
}

// listWatchOf returns the ListWatch of a factory's list and watch
// functions.
func listWatchOf[T Object](funcs *apiclient.Funcs) *ListWatch[T, apiclient.List] {
	lw := NewListWatch[T](funcs.List, funcs.Watch)
	lw.DisableWatchList = funcs.DisableWatchList
	if funcs.Stream != nil {
		lw.StreamFunc = func(ctx context.Context, opts metav1.ListOptions, items ListItems[T]) (metav1.ListMeta, error) {
			return funcs.Stream(ctx, opts, streamTo(items))
		}
	}
	return lw
}

// reuse returns the informer of e for a request with options o, resolved
// to c, adding the indexes o asks for; it fails if o conflicts with how
// the informer was made.
func reuse[T Object](e *factoryEntry, target apiclient.Target, o Options[T], c config[T]) (*SharedInformer[T], error) {
	inf, ok := e.inf.(*SharedInformer[T])
	if !ok {
		return nil, fmt.Errorf("%s is already served as %v", apiclient.ResourceName(target.GVR), e.goType)
	}
	if o.Transform != nil && (!e.hasXform || e.xformPtr != funcPtr(o.Transform)) {
		return nil, fmt.Errorf("%s already exists with another transform", inf)
	}
	if v, ok := o.StripManagedFields.Get(); ok && v != inf.cfg.stripManaged {
		return nil, fmt.Errorf("%s already exists with StripManagedFields %v", inf, inf.cfg.stripManaged)
	}
	if v, ok := o.ResyncPeriod.Get(); ok && v != inf.cfg.resync {
		return nil, fmt.Errorf("%s already exists with resync period %v", inf, inf.cfg.resync)
	}
	if d, had := c.decoding, inf.cfg.decoding; o.SkipFields != nil && !slices.Equal(d.Skip, had.Skip) {
		return nil, fmt.Errorf("%s already exists with SkipFields %q", inf, had.Skip)
	}
	if v, ok := o.DisableDecoder.Get(); ok && v != inf.cfg.decoding.Disabled {
		return nil, fmt.Errorf("%s already exists with DisableDecoder %v", inf, inf.cfg.decoding.Disabled)
	}
	if v, ok := o.DisableWatchList.Get(); ok && v != inf.cfg.noWatchList {
		// An informer that does not stream (a sharded or namespace-selected
		// one) serves a request to list, then watch, as it is.
		if _, streams := inf.scope.(*wholeScope[T]); streams || !v {
			return nil, fmt.Errorf("%s already exists with DisableWatchList %v: set it on the first request, or in FactoryOptions", inf, inf.cfg.noWatchList)
		}
	}
	for name, fn := range o.Indexers {
		if inf.store.HasIndex(name) {
			continue
		}
		if _, err := inf.AddIndex(name, fn); err != nil {
			return nil, err
		}
	}
	return inf, nil
}

// funcPtr identifies a function's code, to tell a repeated transform from
// another one.
func funcPtr(fn any) uintptr { return reflect.ValueOf(fn).Pointer() }

// Start runs every informer requested so far, and every one requested
// later, until ctx ends or Shutdown. Calls after the first do nothing.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx != nil || f.stopped {
		return
	}
	f.ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("informers"))
	for _, e := range f.entries {
		f.startLocked(e)
	}
}

func (f *Factory) startLocked(e *factoryEntry) {
	ctx, cancel := context.WithCancel(f.ctx)
	e.cancel = cancel
	f.running.Add(1)
	go func() {
		defer f.running.Done()
		defer close(e.done)
		if err := e.inf.Run(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Informer did not run", "informer", e.inf.String())
		}
	}()
}

// Release stops the informer inf, which this factory created, and frees its
// cache: its watch ends, its handlers stop, its readers see an empty cache,
// and a later request for the same informer creates a fresh one. It waits
// until the informer's goroutines have ended, or until ctx ends; if ctx has
// already ended, it waits up to the factory's ShutdownGracePeriod. Its
// error then names the handlers still in a call.
func (f *Factory) Release(ctx context.Context, inf AnyInformer) error {
	f.mu.Lock()
	var found *factoryEntry
	for k, e := range f.entries {
		if any(e.inf) == any(inf) {
			found = e
			delete(f.entries, k)
			f.version++
			break
		}
	}
	f.mu.Unlock()
	if found == nil {
		return errorf("Release: %s is not an informer of this factory", inf)
	}
	if found.cancel == nil { // never started
		found.inf.stopUnstarted()
		found.inf.free()
		return nil
	}
	found.cancel()
	err := f.wait(ctx, "Release", []*factoryEntry{found})
	found.inf.free()
	return err
}

// Shutdown stops every informer and waits until all their goroutines have
// ended, or until ctx ends; if ctx has already ended when Shutdown is
// called, as the context given to Start usually has, it waits up to the
// factory's ShutdownGracePeriod. A handler that never returns keeps its
// informer's goroutine alive: Shutdown's error then names it. Informers
// cannot be requested after Shutdown.
func (f *Factory) Shutdown(ctx context.Context) error {
	f.mu.Lock()
	f.stopped = true
	entries := make([]*factoryEntry, 0, len(f.entries))
	for _, e := range f.entries {
		if e.cancel != nil {
			e.cancel()
			entries = append(entries, e)
		} else {
			e.inf.stopUnstarted()
		}
	}
	f.mu.Unlock()
	return f.wait(ctx, "Shutdown", entries)
}

// wait waits until the informers of entries have stopped, or ctx ends, or,
// if ctx has already ended, the grace period passes.
func (f *Factory) wait(ctx context.Context, op string, entries []*factoryEntry) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), f.grace())
		defer cancel()
	}
	var stuck []string
	for _, e := range entries {
		select {
		case <-e.done:
			continue
		case <-ctx.Done():
		}
		busy := e.inf.busyHandlers()
		for _, h := range busy {
			stuck = append(stuck, fmt.Sprintf("handler %s of %s", h, e.inf))
		}
		if len(busy) == 0 {
			stuck = append(stuck, e.inf.String())
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	return errorf("%s: %s still running: %w", op, strings.Join(stuck, ", "), ctx.Err())
}

// grace is how long Release and Shutdown wait when their context has
// already ended.
func (f *Factory) grace() time.Duration {
	if f.opts.ShutdownGracePeriod > 0 {
		return f.opts.ShutdownGracePeriod
	}
	return defaultShutdownGracePeriod
}

// defaultShutdownGracePeriod is the default of
// FactoryOptions.ShutdownGracePeriod.
const defaultShutdownGracePeriod = 30 * time.Second

// namespacesFor returns the factory's Namespace informer, which an
// informer configured by c follows, or nil if c selects no namespaces.
func namespacesFor[T Object](f *Factory, c config[T]) (*SharedInformer[*corev1.Namespace], error) {
	if c.filter.namespaces == nil {
		return nil, nil
	}
	if c.resource == namespacesResource {
		return nil, errorf("NamespaceSelector on an informer of namespaces: use LabelSelector")
	}
	source := Informer[*corev1.Namespace](f)
	if err := source.failed; err != nil {
		return nil, fmt.Errorf("NamespaceSelector %s needs the factory's Namespace informer: %w", c.sel.namespaces, err)
	}
	return source, nil
}
