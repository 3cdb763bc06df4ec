package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/adapter"
)

// Cache is a controller-runtime cache.Cache whose informers are ours: one
// informer of client.Object per type and namespace setting, created on
// first use (lazily, as controller-runtime's are), started at once if the
// cache runs. Reads deep-copy the cached object into the caller's, unless
// UnsafeDisableDeepCopy is set, and set its GroupVersionKind, as
// controller-runtime documents. Create one with NewCache.
type Cache struct {
	opts       cache.Options
	scheme     *runtime.Scheme
	mapper     meta.RESTMapper
	config     *rest.Config
	httpClient *http.Client
	codecs     serializer.CodecFactory
	paramCodec runtime.ParameterCodec
	byObject   map[schema.GroupVersionKind]*cache.ByObject
	// views maps the kind of each view in the scheme to the resource it
	// views (Options.Views).
	views map[schema.GroupVersionKind]schema.GroupVersionResource
	// schemas checks the views of resources the scheme has no Go type of
	// against the server's schemas; made on first use.
	schemas     *adapter.SchemaChecker
	schemasOnce sync.Once
	schemasErr  error

	mu      sync.Mutex
	types   map[typeKey]*typeCache
	ctx     context.Context // set by Start
	started chan struct{}   // closed by Start
	stopped bool
	running sync.WaitGroup
	// listAndWatch turns watch-list off for the informers created from now
	// on; only the benchmarks set it, to compare like with like.
	listAndWatch bool
	// decoding is how objects are decoded; skip holds its SkipFields by
	// Go type.
	decoding Decoding
	skip     map[reflect.Type][]string
	// namespaceSelection is Options' namespace selectors, by kind for
	// NamespaceSelectorByObject; namespaces is the Namespace informer they
	// follow, nil without a selector.
	namespaceSelection
	namespaces *informers.SharedInformer[*corev1.Namespace]
}

var _ cache.Cache = (*Cache)(nil)

// typeKey tells the cached types apart: a kind, cached typed,
// unstructured or as metadata.
type typeKey struct {
	gvk   schema.GroupVersionKind
	shape shape
}

// typeCache is the cache of one type: one informer per namespace setting.
type typeCache struct {
	key        typeKey
	namespaced bool
	parts      []*part
	informer   cache.Informer
}

// part is one informer of a type.
type part struct {
	partConfig
	inf    *informers.SharedInformer[client.Object]
	cancel context.CancelFunc // set once started
	done   chan struct{}
}

// NewCache returns a Cache configured by opts; it is a cache.NewCacheFunc,
// for the manager's NewCache option. opts.NewInformer and
// opts.DefaultWatchErrorHandler plug into client-go's informers, which
// this cache does not use: NewCache fails if they are set. A test that
// set NewInformer to wrap informers runs the cache on a test control
// plane instead, with failures injected through opts.HTTPClient (see
// docs/adapters.md). DefaultEnableWatchBookmarks is ignored: the
// informers always ask for bookmarks.
func NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	return New(cfg, opts)
}

// New is NewCache returning the *Cache.
func New(cfg *rest.Config, opts cache.Options) (*Cache, error) {
	return newCache(cfg, opts, nil)
}

// newCache is New with the views of Options.Views.
func newCache(cfg *rest.Config, opts cache.Options, views map[client.Object]schema.GroupVersionResource) (*Cache, error) {
	if opts.NewInformer != nil {
		return nil, errors.New("controllerruntime: cache.Options.NewInformer makes client-go informers, which this cache replaces")
	}
	if opts.DefaultWatchErrorHandler != nil {
		return nil, errors.New("controllerruntime: cache.Options.DefaultWatchErrorHandler takes a client-go reflector, which this cache does not have; failed requests are logged")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	var err error
	if opts.HTTPClient == nil {
		if opts.HTTPClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("controllerruntime: HTTP client for the config: %w", err)
		}
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		if opts.Mapper, err = apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient); err != nil {
			return nil, fmt.Errorf("controllerruntime: REST mapper: %w", err)
		}
	}
	c := &Cache{
		opts:       opts,
		scheme:     opts.Scheme,
		mapper:     opts.Mapper,
		config:     cfg,
		httpClient: opts.HTTPClient,
		codecs:     serializer.NewCodecFactory(opts.Scheme),
		paramCodec: runtime.NewParameterCodec(opts.Scheme),
		byObject:   map[schema.GroupVersionKind]*cache.ByObject{},
		types:      map[typeKey]*typeCache{},
		started:    make(chan struct{}),
	}
	if err := c.setViews(views); err != nil {
		return nil, err
	}
	for obj, bo := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return nil, fmt.Errorf("controllerruntime: ByObject: %w", err)
		}
		namespaced, err := c.isNamespaced(obj, gvk)
		if err != nil {
			return nil, fmt.Errorf("controllerruntime: ByObject: is %v namespaced: %w", gvk, err)
		}
		if !namespaced && bo.Namespaces != nil {
			return nil, fmt.Errorf("controllerruntime: ByObject: %v is cluster-scoped, but its Namespaces are set", gvk)
		}
		c.byObject[gvk] = &bo
	}
	return c, nil
}

// NeedLeaderElection returns false: a manager runs the cache on every
// replica, leader or not, as it runs controller-runtime's own caches
// (manager.LeaderElectionRunnable).
func (c *Cache) NeedLeaderElection() bool { return false }

// Start runs the informers of the types requested so far, and of those
// requested later, until ctx ends; then it waits for them to stop.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.ctx != nil {
		c.mu.Unlock()
		return errors.New("controllerruntime: informer already started") // controller-runtime's words, which callers match
	}
	c.ctx = ctx
	c.runNamespacesLocked()
	for _, tc := range c.types {
		c.startLocked(tc)
	}
	close(c.started)
	c.mu.Unlock()

	<-ctx.Done()
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.running.Wait()
	return nil
}

func (c *Cache) startLocked(tc *typeCache) {
	if c.ctx == nil || c.stopped {
		return
	}
	log := klog.FromContext(c.ctx).WithValues("kind", tc.key.gvk.String())
	for _, p := range tc.parts {
		if p.cancel != nil {
			continue
		}
		ctx, cancel := context.WithCancel(klog.NewContext(c.ctx, log))
		p.cancel = cancel
		c.running.Add(1)
		go func() {
			defer c.running.Done()
			defer close(p.done)
			if err := p.inf.Run(ctx); err != nil {
				log.Error(err, "Informer did not run")
			}
		}()
	}
}

// WaitForCacheSync waits until the cache has started and the informers
// requested so far have synced. It returns false if ctx ends first, or as
// soon as an informer fails in a way retrying will not fix (403
// Forbidden, a resource the server does not serve), which it logs.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.started:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	var syncers []informers.Syncer
	for _, tc := range c.types {
		for _, p := range tc.parts {
			syncers = append(syncers, p.inf)
		}
	}
	c.mu.Unlock()
	if err := informers.WaitForSync(ctx, syncers...); err != nil {
		klog.FromContext(ctx).Error(err, "Cache not synced")
		return false
	}
	return true
}

// typeFor returns the cache of a type, creating it (and starting it if the
// cache runs) unless it does not exist and create is false.
func (c *Cache) typeFor(gvk schema.GroupVersionKind, sh shape, create bool) (tc *typeCache, started bool, err error) {
	key := typeKey{gvk: gvk, shape: sh}
	c.mu.Lock()
	defer c.mu.Unlock()
	started = c.ctx != nil
	if tc := c.types[key]; tc != nil {
		return tc, started, nil
	}
	if !create {
		return nil, started, &cache.ErrResourceNotCached{GVK: gvk}
	}
	_, isView := c.views[gvk]
	if isView && sh != typed {
		return nil, started, fmt.Errorf("controllerruntime: %v is a view, cached as its Go type only, not unstructured or as metadata", gvk)
	}
	mapping, err := c.mappingFor(gvk)
	if err != nil {
		return nil, started, err
	}
	tc = &typeCache{key: key, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	for _, pc := range partsFor(&c.opts, c.byObject[gvk], tc.namespaced) {
		dec := new(partDecoder)
		lwFor := func(ns string) (lw *informers.ListWatch[client.Object, informers.List], err error) {
			if isView {
				lw, err = c.viewListWatch(gvk, mapping.GroupVersionKind, mapping.Resource, ns, dec)
			} else {
				lw, err = c.listWatch(gvk, mapping.Resource, sh, ns, dec)
			}
			if err != nil {
				return nil, err
			}
			lw.DisableWatchList = c.listAndWatch
			return lw, nil
		}
		o := pc.informerOptions(nil)
		o.Resource = mapping.Resource
		// A view's decoder decodes every object: none has fields to clear.
		if clear := c.clearSkipped(c.goType(gvk, sh)); clear != nil && !isView {
			if o.Transform != nil {
				o.Transform = informers.Chain(clear, o.Transform)
			} else {
				o.Transform = clear
			}
		}
		var inf *informers.SharedInformer[client.Object]
		if sel := c.namespaceSelectorFor(gvk, tc.namespaced, pc.namespace); sel != "" {
			o.NamespaceSelector, o.NamespaceMode = informers.Set(sel), informers.Set(c.namespaceMode)
			inf, err = informers.NewNamespaceSelectedInformer(lwFor, c.namespaces, o)
		} else {
			var lw *informers.ListWatch[client.Object, informers.List]
			if lw, err = lwFor(pc.namespace); err == nil {
				inf, err = informers.NewInformer(lw, o)
			}
		}
		if err != nil {
			return nil, started, fmt.Errorf("controllerruntime: %v: %w", gvk, err)
		}
		tc.parts = append(tc.parts, &part{partConfig: pc, inf: inf, done: make(chan struct{})})
	}
	tc.informer = newInformer(tc)
	c.types[key] = tc
	c.startLocked(tc)
	return tc, started, nil
}

// waitSynced waits until the type's informers have synced, if the cache
// runs, as controller-runtime's reads do. Synced caches are read even
// while most of their objects cannot be decoded (an
// informers.UndecodableTypeError, which WaitForCacheSync and readiness
// report): the objects that decode are there.
func (tc *typeCache) waitSynced(ctx context.Context) error {
	syncers := make([]informers.Syncer, len(tc.parts))
	for n, p := range tc.parts {
		syncers[n] = p.inf
	}
	err := informers.WaitForSync(ctx, syncers...)
	var undecodable *informers.UndecodableTypeError
	if errors.As(err, &undecodable) && !slices.ContainsFunc(tc.parts, func(p *part) bool { return !p.inf.HasSynced() }) {
		return nil // synced: the objects that decode are served
	}
	if err != nil {
		return apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %v informer to sync: %v", tc.key.gvk, err), 0)
	}
	return nil
}

// partFor returns the informer that caches namespace ns, or nil.
func (tc *typeCache) partFor(ns string) *part {
	var all *part
	for _, p := range tc.parts {
		switch p.namespace {
		case ns:
			return p
		case cache.AllNamespaces:
			all = p
		}
	}
	return all
}

// get returns a type's cache, ready to read: created if the options allow,
// started, synced.
func (c *Cache) get(ctx context.Context, gvk schema.GroupVersionKind, sh shape) (*typeCache, error) {
	tc, started, err := c.typeFor(gvk, sh, !c.opts.ReaderFailOnMissingInformer)
	if err != nil {
		return nil, err
	}
	if !started {
		return nil, &cache.ErrCacheNotStarted{}
	}
	return tc, tc.waitSynced(ctx)
}

// Get reads the object key of out's type into out.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(out, c.scheme)
	if err != nil {
		return err
	}
	tc, err := c.get(ctx, gvk, shapeOf(out))
	if err != nil {
		return err
	}
	if !tc.namespaced {
		key.Namespace = ""
	}
	p := tc.partFor(key.Namespace)
	if p == nil {
		return fmt.Errorf("unable to get %v %s: the cache does not cache namespace %q", gvk, key, key.Namespace)
	}
	var obj client.Object
	if key.Namespace == "" {
		obj, err = p.inf.Lister().Get(key.Name)
	} else {
		obj, err = p.inf.Lister().Namespace(key.Namespace).Get(key.Name)
	}
	if err != nil {
		// The NotFound that controller-runtime's cache returns.
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	var getOpts client.GetOptions
	getOpts.ApplyOptions(opts)
	noCopy := p.noCopy || deref(getOpts.UnsafeDisableDeepCopy)
	return copyInto(out, obj, gvk, noCopy)
}

// copyInto sets out to obj, or to a deep copy of obj with its kind set.
func copyInto(out, obj client.Object, gvk schema.GroupVersionKind, noCopy bool) error {
	var src runtime.Object = obj
	if !noCopy {
		src = obj.DeepCopyObject()
	}
	outVal, srcVal := reflect.ValueOf(out), reflect.ValueOf(src)
	if !srcVal.Type().AssignableTo(outVal.Type()) {
		return fmt.Errorf("cache had type %s, but %s was asked for", srcVal.Type(), outVal.Type())
	}
	reflect.Indirect(outVal).Set(reflect.Indirect(srcVal))
	if !noCopy {
		out.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

// List reads the objects of list's item type that opts select into list:
// by namespace, label selector and exact field selectors over indexes
// made with IndexField, up to opts.Limit. Continue is not supported.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	tc, err := c.get(ctx, gvk, shapeOf(list))
	if err != nil {
		return err
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if lo.Continue != "" {
		return errors.New("continue list option is not supported by the cache")
	}
	ns := lo.Namespace
	if !tc.namespaced {
		ns = ""
	}
	parts := tc.parts
	if ns != "" {
		p := tc.partFor(ns)
		if p == nil {
			return fmt.Errorf("unable to list %v: the cache does not cache namespace %q", gvk, ns)
		}
		parts = []*part{p}
	}
	var items []runtime.Object
	for _, p := range parts {
		objs, err := p.selectObjects(ns, &lo)
		if err != nil {
			return err
		}
		noCopy := p.noCopy || deref(lo.UnsafeDisableDeepCopy)
		for _, obj := range objs {
			if lo.Limit > 0 && int64(len(items)) >= lo.Limit {
				break
			}
			if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
				continue
			}
			if noCopy {
				items = append(items, obj)
				continue
			}
			cp := obj.DeepCopyObject()
			cp.GetObjectKind().SetGroupVersionKind(gvk)
			items = append(items, cp)
		}
	}
	if err := meta.SetList(list, items); err != nil {
		return err
	}
	list.SetContinue("continue-not-supported")
	return nil
}

// selectObjects returns the objects of namespace ns ("" for all) that the
// field selector of lo selects, through the indexes of IndexField.
func (p *part) selectObjects(ns string, lo *client.ListOptions) ([]client.Object, error) {
	if lo.FieldSelector == nil || lo.FieldSelector.Empty() {
		if ns == "" {
			return p.inf.Lister().List(nil), nil
		}
		return p.inf.Lister().Namespace(ns).List(nil), nil
	}
	var objs []client.Object
	for n, req := range lo.FieldSelector.Requirements() {
		if req.Operator != "=" && req.Operator != "==" {
			return nil, errors.New("non-exact field matches are not supported by the cache")
		}
		found, err := p.inf.Lister().ByIndex(fieldIndexName(req.Field), namespacedKey(ns, req.Value))
		if err != nil {
			return nil, fmt.Errorf("index with name %s does not exist", fieldIndexName(req.Field))
		}
		if n == 0 {
			objs = found
			continue
		}
		objs = intersect(objs, found)
	}
	return objs, nil
}

// intersect returns the objects of a that are also in b.
func intersect(a, b []client.Object) []client.Object {
	in := make(map[client.Object]bool, len(b))
	for _, o := range b {
		in[o] = true
	}
	out := a[:0]
	for _, o := range a {
		if in[o] {
			out = append(out, o)
		}
	}
	return out
}

// GetInformer returns the informer of obj's type, creating it; if the
// cache runs, it waits for it to sync unless told not to.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	return c.informerFor(ctx, gvk, shapeOf(obj), opts)
}

// GetInformerForKind is GetInformer for a kind of the scheme.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	return c.informerFor(ctx, gvk, shapeOf(obj), opts)
}

func (c *Cache) informerFor(ctx context.Context, gvk schema.GroupVersionKind, sh shape, opts []cache.InformerGetOption) (cache.Informer, error) {
	var o cache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		// A caller that has given up gets no new informer, rather than one
		// that may or may not have synced by the time this looks.
		if _, _, notCached := c.typeFor(gvk, sh, false); notCached != nil {
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("%v informer not created: %v", gvk, err), 0)
		}
	}
	tc, started, err := c.typeFor(gvk, sh, true)
	if err != nil {
		return nil, err
	}
	if started && (o.BlockUntilSynced == nil || *o.BlockUntilSynced) {
		if err := tc.waitSynced(ctx); err != nil {
			return nil, err
		}
	}
	return tc.informer, nil
}

// RemoveInformer stops the informers of obj's type and forgets them: their
// watches end, their handlers stop, and their caches are freed once
// nothing refers to them. It waits until they have stopped, or ctx ends.
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	key := typeKey{gvk: gvk, shape: shapeOf(obj)}
	c.mu.Lock()
	tc := c.types[key]
	delete(c.types, key)
	c.mu.Unlock()
	if tc == nil {
		return nil
	}
	for _, p := range tc.parts {
		if p.cancel == nil {
			continue
		}
		p.cancel()
		select {
		case <-p.done:
		case <-ctx.Done():
			return fmt.Errorf("controllerruntime: RemoveInformer %v: %w", gvk, ctx.Err())
		}
	}
	return nil
}

// IndexField indexes the objects of obj's type by the values extract
// returns, for List with a field selector (client.MatchingFields): each
// value is filed under its object's namespace and under all namespaces.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	tc, _, err := c.typeFor(gvk, shapeOf(obj), true)
	if err != nil {
		return err
	}
	for _, p := range tc.parts {
		if _, ok := p.inf.Index(fieldIndexName(field)); ok {
			return fmt.Errorf("controllerruntime: %v: index of field %q exists already", gvk, field)
		}
		if _, err := p.inf.AddIndex(fieldIndexName(field), fieldIndex(extract)); err != nil {
			return err
		}
	}
	return nil
}

// fieldIndex files an object under each value, prefixed with its
// namespace, and, for a namespaced object, with the all-namespaces prefix.
func fieldIndex(extract client.IndexerFunc) informers.IndexFunc[client.Object] {
	return func(obj client.Object) []string {
		raw := extract(obj)
		ns := obj.GetNamespace()
		vals := make([]string, 0, 2*len(raw))
		for _, v := range raw {
			vals = append(vals, namespacedKey(ns, v))
			if ns != "" {
				vals = append(vals, namespacedKey("", v))
			}
		}
		return vals
	}
}

// fieldIndexName and namespacedKey spell index names and values as
// controller-runtime does.
func fieldIndexName(field string) string { return "field:" + field }

func namespacedKey(ns, v string) string {
	if ns == "" {
		return "__all_namespaces/" + v
	}
	return ns + "/" + v
}
