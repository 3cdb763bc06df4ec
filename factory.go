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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// FactoryOptions configures a Factory. The zero value is valid.
type FactoryOptions struct {
	// Namespace limits every namespaced informer to one namespace; ""
	// means all. InformerOptions.Namespace overrides it per informer.
	Namespace string
	// ResyncPeriod is the default resync period of handlers; 0 means never.
	ResyncPeriod time.Duration
	// Tweak edits the options of every list and watch request.
	Tweak func(*metav1.ListOptions)
	// StripManagedFields drops metadata.managedFields from every cached
	// object, typically a fifth to two fifths of its memory.
	StripManagedFields bool
	// Scheme maps Go types to kinds, in addition to client-go's scheme of
	// built-in types, which serves every type Scheme does not register.
	// Types outside client-go's scheme (custom resources) need RESTConfig.
	Scheme *runtime.Scheme
	// RESTConfig, if set, is used to reach the server instead of the
	// clientset, for every typed informer, and to create the dynamic and
	// metadata clients that Dynamic and Metadata informers need.
	RESTConfig *rest.Config
	// Dynamic and Metadata override the clients made from RESTConfig, for
	// example with client-go's fakes.
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// OnError receives every informer's errors; nil means they are logged.
	OnError func(error)
	// Backoff sets the delays between retries; nil means client-go's.
	Backoff *wait.Backoff
	// MinWatchTimeout is the shortest server-side watch timeout, at least
	// 5 minutes (the default).
	MinWatchTimeout time.Duration
	// ShutdownGracePeriod bounds how long Shutdown and Release wait for
	// handlers to return when their context has already ended; 0 means 30
	// seconds.
	ShutdownGracePeriod time.Duration
}

// InformerOptions configures one informer requested from a Factory.
// Namespace, the selectors and Resource make informers distinct: asking
// twice with the same ones returns the same informer, asking with other
// ones returns another. The other fields apply when the informer is
// created; a later request may add indexes but may not set another
// transform or resync period.
type InformerOptions[T Object] struct {
	// Namespace overrides the factory's namespace; "" keeps it.
	Namespace string
	// LabelSelector and FieldSelector restrict what is cached.
	LabelSelector, FieldSelector string
	// Resource names the resource explicitly. It is required for
	// *unstructured.Unstructured (a dynamic informer) and
	// *metav1.PartialObjectMetadata (a metadata-only informer), and
	// overrides the resource derived from T's kind otherwise.
	Resource schema.GroupVersionResource
	// Transform changes each object before it is cached; it runs after the
	// factory's StripManagedFields.
	Transform TransformFunc[T]
	// Indexers are added to the informer.
	Indexers map[string]IndexFunc[T]
	// ResyncPeriod overrides the factory's default for this informer.
	ResyncPeriod time.Duration
}

// Factory creates informers on request and shares them: one informer per
// resource, namespace and selectors, whatever the caller. It replaces
// client-go's generated factories and listers with one generic accessor,
// Informer. The zero value is not usable; call NewFactory.
type Factory struct {
	err    error // a misuse of NewFactory, reported by every Informer
	opts   FactoryOptions
	scheme *runtime.Scheme
	api    *apiAccess

	mu      sync.Mutex
	entries map[informerKey]*factoryEntry
	failed  []error         // requests Informer could not serve
	ctx     context.Context // set by Start
	stopped bool
	running sync.WaitGroup
}

// informerKey tells informers apart.
type informerKey struct {
	shape                        shape
	gvr                          schema.GroupVersionResource
	namespace, labels, fieldSels string
}

// shape is how an informer's objects are represented.
type shape int

const (
	typedShape shape = iota
	dynamicShape
	metadataShape
)

// factoryEntry holds one informer with its type erased.
//
// Invariant: inf is a *SharedInformer[T] whose T is goType; Informer reads
// it back with a checked type assertion.
type factoryEntry struct {
	inf      managedInformer
	goType   reflect.Type
	hasXform bool    // the creating request gave a transform
	xformPtr uintptr // its code, to tell a repeated transform from another
	resync   time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
}

// managedInformer is what the factory needs of a *SharedInformer[T].
type managedInformer interface {
	AnyInformer
	Run(ctx context.Context) error
}

// NewFactory returns a factory over client, a real or a fake clientset;
// opts, at most one, configures it. client may be nil when opts sets
// RESTConfig.
func NewFactory(client kubernetes.Interface, opts ...FactoryOptions) *Factory {
	var o FactoryOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	f := &Factory{opts: o, scheme: scheme.Scheme, entries: make(map[informerKey]*factoryEntry)}
	if o.Scheme != nil {
		f.scheme = withBuiltIns(o.Scheme)
	}
	f.api = newAPIAccess(client, o, f.scheme)
	switch {
	case len(opts) > 1:
		f.err = errors.New("NewFactory takes at most one FactoryOptions")
	case client == nil && o.RESTConfig == nil:
		f.err = errors.New("NewFactory needs a clientset or FactoryOptions.RESTConfig")
	}
	return f
}

// Informer returns the factory's shared informer for objects of type T,
// creating it on first use. T's resource comes from its kind in the
// factory's scheme, or from opts.Resource:
//
//	pods := informers.Informer[*corev1.Pod](factory)
//	web := informers.Informer(factory, informers.InformerOptions[*corev1.Pod]{LabelSelector: "app=web"})
//
// An informer requested after Start starts at once.
//
// Informer never panics and always returns an informer. When it cannot
// serve T (a type unknown to the scheme, a resource already served as
// another Go type, conflicting options), the informer it returns carries
// the reason: its Err, WaitForSync, AddHandler and Run return it, and so
// does the factory's WaitForSync.
func Informer[T Object](f *Factory, opts ...InformerOptions[T]) *SharedInformer[T] {
	inf, err := informer(f, opts)
	if err != nil {
		err = fmt.Errorf("informers: Informer[%v]: %w", reflect.TypeFor[T](), err)
		f.mu.Lock()
		f.failed = append(f.failed, err)
		f.mu.Unlock()
		return newSharedInformer(Options[T]{}, err)
	}
	return inf
}

func informer[T Object](f *Factory, opts []InformerOptions[T]) (*SharedInformer[T], error) {
	if f.err != nil {
		return nil, f.err
	}
	if len(opts) > 1 {
		return nil, errors.New("pass at most one InformerOptions")
	}
	var o InformerOptions[T]
	if len(opts) == 1 {
		o = opts[0]
	}
	target, err := resolve[T](f, o.Resource)
	if err != nil {
		return nil, err
	}
	labelSel, fieldSel, err := canonicalSelectors(o.LabelSelector, o.FieldSelector)
	if err != nil {
		return nil, err
	}
	key := informerKey{shape: target.shape, gvr: target.gvr, namespace: f.opts.Namespace, labels: labelSel, fieldSels: fieldSel}
	if o.Namespace != "" {
		key.namespace = o.Namespace
	}
	resync := f.opts.ResyncPeriod
	if o.ResyncPeriod != 0 {
		resync = o.ResyncPeriod
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return nil, ErrStopped
	}
	if e := f.entries[key]; e != nil {
		inf, ok := e.inf.(*SharedInformer[T])
		if !ok {
			return nil, fmt.Errorf("%s is already served as %v", resourceName(target.gvr), e.goType)
		}
		if o.Transform != nil && (!e.hasXform || e.xformPtr != funcPtr(o.Transform)) {
			return nil, fmt.Errorf("%s already exists with another transform", inf.desc)
		}
		if o.ResyncPeriod != 0 && o.ResyncPeriod != e.resync {
			return nil, fmt.Errorf("%s already exists with resync period %v", inf.desc, e.resync)
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

	lw, err := listWatchFor[T](f.api, target, key, labelSel, fieldSel, f.opts.Tweak)
	if err != nil {
		return nil, err
	}
	transform := o.Transform
	if f.opts.StripManagedFields {
		transform = chainOptional(StripManagedFields[T](), o.Transform)
	}
	inf, err := NewInformer(lw, Options[T]{
		Resource:        target.gvr,
		ResyncPeriod:    resync,
		Indexers:        o.Indexers,
		Transform:       transform,
		OnError:         f.opts.OnError,
		Backoff:         f.opts.Backoff,
		MinWatchTimeout: f.opts.MinWatchTimeout,
	})
	if err != nil {
		return nil, err
	}
	e := &factoryEntry{inf: inf, goType: reflect.TypeFor[T](), resync: resync, done: make(chan struct{})}
	if o.Transform != nil {
		e.hasXform, e.xformPtr = true, funcPtr(o.Transform)
	}
	f.entries[key] = e
	if f.ctx != nil {
		f.startLocked(e)
	}
	return inf, nil
}

// funcPtr identifies a function's code, to tell a repeated transform from
// another one.
func funcPtr(fn any) uintptr { return reflect.ValueOf(fn).Pointer() }

func chainOptional[T Object](first, second TransformFunc[T]) TransformFunc[T] {
	if second == nil {
		return first
	}
	return Chain(first, second)
}

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

// WaitForSync waits until every started informer has synced. It returns
// nil once they have. Otherwise it returns, when ctx ends or as soon as
// every informer has either synced or failed in a way that needs a fix on
// the server (403 Forbidden, a missing CRD...), an error that joins one
// *NotSyncedError per informer not synced, each with its last list or
// watch error, and the error of every request Informer could not serve.
func (f *Factory) WaitForSync(ctx context.Context) error {
	f.mu.Lock()
	infs := make([]managedInformer, 0, len(f.entries))
	for _, e := range f.entries {
		infs = append(infs, e.inf)
	}
	started := f.ctx != nil
	errs := slices.Clone(f.failed)
	f.mu.Unlock()
	if !started && len(infs) > 0 {
		return errors.New("informers: WaitForSync before Start")
	}
	waits := make([]error, len(infs))
	var wg sync.WaitGroup
	for n, inf := range infs {
		wg.Go(func() { waits[n] = inf.WaitForSync(ctx) })
	}
	wg.Wait()
	return errors.Join(append(errs, waits...)...)
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
			break
		}
	}
	f.mu.Unlock()
	if found == nil {
		return fmt.Errorf("informers: Release: %s is not an informer of this factory", inf)
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
	return fmt.Errorf("informers: %s: %s still running: %w", op, strings.Join(stuck, ", "), ctx.Err())
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

// target is what a Go type resolves to.
type target struct {
	shape shape
	gvk   schema.GroupVersionKind // empty for dynamic and metadata informers
	gvr   schema.GroupVersionResource
}

// resolve finds the resource to serve T from.
func resolve[T Object](f *Factory, resource schema.GroupVersionResource) (target, error) {
	switch reflect.TypeFor[T]() {
	case reflect.TypeFor[*unstructured.Unstructured]():
		if resource.Empty() {
			return target{}, errors.New("a dynamic informer needs InformerOptions.Resource")
		}
		return target{shape: dynamicShape, gvr: resource}, nil
	case reflect.TypeFor[*metav1.PartialObjectMetadata]():
		if resource.Empty() {
			return target{}, errors.New("a metadata-only informer needs InformerOptions.Resource")
		}
		return target{shape: metadataShape, gvr: resource}, nil
	}
	gvk, err := kindOf[T](f.scheme)
	if err != nil {
		return target{}, err
	}
	if resource.Empty() {
		resource = resourceFor(gvk)
	}
	return target{shape: typedShape, gvk: gvk, gvr: resource}, nil
}
