package informers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/dispatch"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/store"
)

// SharedInformer is a typed cache of objects of type T, kept in step with
// the server, and the handlers that follow its changes. Create one with
// NewInformer, or get a shared one from a Factory with Informer.
//
// A SharedInformer runs once: Run until its context ends.
type SharedInformer[T Object] struct {
	failed error     // why a Factory could not create it; see LastError
	cfg    config[T] // resolved once, by NewInformer or a Factory
	store  *store.Store[T]
	reader *reader[T]
	writer *writer[T]
	refls  *reflectors[T] // nil for an informer that only reports failed
	// scope is whether the informer caches all its list-watch sees, a
	// shard of it or the namespaces a label selects: it runs the
	// reflectors and says what the cache has reached.
	scope scope[T]
	// filter is what the informer's selection lets it cache, as far as
	// the client can tell (see tracker.go).
	filter selectionFilter
	// metrics is set by Run when Options.Metrics is.
	metrics   InformerMetrics
	runStart  atomic.Int64      // when Run began, in Unix nanoseconds
	staleness *stalenessMonitor // nil unless Options.Staleness

	// handlerSeq numbers handlers, for their default names.
	handlerSeq atomic.Int64

	mu         sync.Mutex
	state      runState
	runCtx     context.Context
	handlerWG  sync.WaitGroup
	stopped    chan struct{}
	lastErr    error
	errChanged chan struct{} // closed and replaced when lastErr changes
	regs       []*Registration[T]
	overflowed []*Registration[T] // removed for exceeding their queue limit
}

var _ AnyInformer = (*SharedInformer[Object])(nil)

type runState int

const (
	notStarted runState = iota
	running
	stopped
)

// NewInformer returns an informer over lw; Run runs it. The selectors of
// opts narrow every request of lw, whose namespace is its own. It fails if
// lw lacks its functions, opts sets a namespace, a selector does not parse
// or an index name in opts is taken.
func NewInformer[T Object, L List](lw *ListWatch[T, L], opts Options[T]) (*SharedInformer[T], error) {
	if lw == nil || lw.ListFunc == nil || lw.WatchFunc == nil {
		return nil, errorf("NewInformer[%T]: ListWatch needs ListFunc and WatchFunc", *new(T))
	}
	if _, ok := opts.Namespace.Get(); ok {
		return nil, errorf("NewInformer[%T]: Options.Namespace is for a Factory; the ListWatch's client sets the namespace", *new(T))
	}
	if sel, _ := opts.NamespaceSelector.Get(); sel != "" {
		return nil, errorf("NewInformer[%T]: Options.NamespaceSelector is for a Factory, which follows namespaces with its Namespace informer, or NewNamespaceSelectedInformer", *new(T))
	}
	c, err := resolveConfig(opts, FactoryOptions{}, guessResource[T](opts.Resource))
	if err != nil {
		return nil, errorf("NewInformer[%T]: %w", *new(T), err)
	}
	refls, err := newReflectors(c, func(ns string) (*ListWatch[T, L], error) {
		if ns != "" {
			return nil, fmt.Errorf("a ListWatch lists its own namespace only")
		}
		return lw, nil
	})
	if err != nil {
		return nil, errorf("NewInformer[%T]: %w", *new(T), err)
	}
	return newInformer(c, refls, newScope(c, nil))
}

// guessResource returns resource, or, if it is empty, the resource of
// T's kind in client-go's scheme, as far as it can tell.
func guessResource[T Object](resource schema.GroupVersionResource) schema.GroupVersionResource {
	if resource.Empty() {
		if gvr, err := apiclient.GuessResource[T](); err == nil {
			return gvr
		}
	}
	return resource
}

// newInformer returns an informer configured by c, whose reflectors refls
// makes and whose scope is sc: the one constructor of NewInformer,
// NewNamespaceSelectedInformer and a Factory.
func newInformer[T Object](c config[T], refls *reflectors[T], sc scope[T]) (*SharedInformer[T], error) {
	i := newSharedInformer(c, nil)
	i.refls, i.scope = refls, sc
	for name, fn := range c.indexers {
		if _, err := i.AddIndex(name, fn); err != nil {
			return nil, err
		}
	}
	i.filter = c.filter.known(c.namespaceKnown, !refls.tweaked)
	i.staleness = newStalenessMonitor(c.staleness)
	return i, nil
}

// newScope returns the scope that c asks for: a namespace selection
// (sharded or not), which follows the Namespace informer namespaces, a
// shard, or the whole of what the list-watch sees.
func newScope[T Object](c config[T], namespaces namespaceSource) scope[T] {
	switch {
	case c.filter.namespaces != nil:
		return newNamespaceScope[T](c, namespaces)
	case c.shard != nil:
		return newShardScope[T](*c.shard)
	}
	return &wholeScope[T]{}
}

// newSharedInformer returns an informer configured by c that is not
// running, or, with failed set, one that only reports failed: what a
// Factory returns when it cannot serve T.
func newSharedInformer[T Object](c config[T], failed error) *SharedInformer[T] {
	i := &SharedInformer[T]{
		failed:     failed,
		cfg:        c,
		stopped:    make(chan struct{}),
		errChanged: make(chan struct{}),
		scope:      &wholeScope[T]{},
	}
	i.store = store.New[T]()
	i.reader = newReader(i.store, c.resource.GroupResource())
	i.writer = newWriter(c.desc, i.store, c.transform, c.clear, i.report)
	if failed != nil {
		i.state = stopped
		close(i.stopped)
	}
	return i
}

// failedInformer returns an informer that only reports err.
func failedInformer[T Object](err error) *SharedInformer[T] {
	return newSharedInformer(config[T]{desc: describe[T](schema.GroupVersionResource{})}, err)
}

// Resource returns the informer's resource.
func (i *SharedInformer[T]) Resource() schema.GroupVersionResource { return i.cfg.resource }

// String describes the informer by resource and Go type.
func (i *SharedInformer[T]) String() string { return i.cfg.desc }

// Run lists and watches until ctx ends, then waits for handler calls in
// progress to return. Once ctx has ended no handler call begins: events
// still queued for handlers are dropped and resyncs stop. It fails if the
// informer ran or was stopped before.
func (i *SharedInformer[T]) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("informer", i.cfg.desc)
	ctx = klog.NewContext(ctx, log)
	if i.failed != nil {
		return i.failed
	}
	i.mu.Lock()
	if i.state != notStarted {
		i.mu.Unlock()
		return errorf("%s: Run: %w", i.cfg.desc, ErrStopped)
	}
	i.state = running
	i.runCtx = ctx
	i.runStart.Store(time.Now().UnixNano())
	env := scopeEnv[T]{
		desc:     i.cfg.desc,
		name:     i.cfg.name,
		w:        i.writer,
		refls:    i.refls,
		log:      log,
		onErr:    i.requestFailed,
		onOK:     i.requestSucceeded,
		countErr: i.countRequestError,
		setErr:   i.setLastError,
		report:   i.report,
	}
	if i.cfg.metrics != nil {
		i.metrics = i.cfg.metrics.Informer(i)
		env.obs = informerObserver{i.metrics}
	}
	for _, l := range i.writer.listeners() {
		i.startListener(l)
	}
	i.mu.Unlock()

	monitorDone := i.startStalenessMonitor(ctx)
	i.scope.run(ctx, env)
	<-monitorDone

	i.mu.Lock()
	i.state = stopped
	regs := slices.Clone(i.regs)
	i.mu.Unlock()
	i.handlerWG.Wait()
	for _, reg := range regs {
		reg.forgetMetrics()
	}
	if i.metrics != nil {
		i.metrics.Stopped()
	}
	close(i.stopped)
	return nil
}

// Stopped is closed when Run has returned, or when an informer that never
// ran was released.
func (i *SharedInformer[T]) Stopped() <-chan struct{} { return i.stopped }

func (i *SharedInformer[T]) startListener(l *dispatch.Listener[T]) {
	i.handlerWG.Add(1)
	go func() {
		defer i.handlerWG.Done()
		l.Run(i.runCtx)
	}()
}

// HasSynced reports whether the cache holds a complete list and a watch
// follows it, for code written for client-go's informers
// (cache.InformerSynced). Handlers may still be delivering; see
// Registration.HasSynced. To wait, call WaitForSync(ctx, i), which says
// why a cache does not sync.
func (i *SharedInformer[T]) HasSynced() bool { return i.writer.hasSynced() }

// Synced is closed once the cache has synced, for code that waits on a
// channel, such as client-go's cache.DoneChecker. It makes the informer a
// Syncer.
func (i *SharedInformer[T]) Synced() <-chan struct{} { return i.writer.syncedChan() }

// waitForSync waits until the cache, and the shard it was last given, have
// synced; see WaitForSync. Once synced, it returns an
// *UndecodableTypeError, at once, while most of the resource's objects
// cannot be decoded at the same field: the cache has synced, but the Go
// type does not fit the resource.
func (i *SharedInformer[T]) waitForSync(ctx context.Context) error {
	if i.failed != nil {
		return i.failed
	}
	if err := i.waitForCache(ctx); err != nil {
		return err
	}
	st := shardsOf(i.scope)
	if st == nil {
		return i.undecodableType()
	}
	select {
	case <-st.syncedChan():
		return i.undecodableType()
	case <-i.stopped:
		return &NotSyncedError{Resource: i.cfg.desc, LastErr: i.LastError(), Err: ErrStopped}
	case <-ctx.Done():
		return &NotSyncedError{Resource: i.cfg.desc, LastErr: i.LastError(), Err: ctx.Err()}
	}
}

// waitForCache is waitForSync but for the shard.
func (i *SharedInformer[T]) waitForCache(ctx context.Context) error {
	for {
		i.mu.Lock()
		lastErr, changed, state := i.lastErr, i.errChanged, i.state
		i.mu.Unlock()
		if i.HasSynced() {
			return nil
		}
		waiting := i.cfg.waitForResource && apierrors.IsNotFound(lastErr)
		if lastErr != nil && isPermanent(lastErr) && !waiting {
			return &NotSyncedError{Resource: i.cfg.desc, LastErr: lastErr}
		}
		if state == stopped {
			return &NotSyncedError{Resource: i.cfg.desc, LastErr: lastErr, Err: ErrStopped, WaitingForResource: waiting}
		}
		select {
		case <-i.writer.syncedChan():
			return nil
		case <-changed:
		case <-i.stopped:
		case <-ctx.Done():
			return &NotSyncedError{Resource: i.cfg.desc, LastErr: lastErr, Err: ctx.Err(), WaitingForResource: waiting}
		}
	}
}

// LastError returns why the informer has not synced or may be stale: the
// error of its last failed list or watch; if the last request succeeded,
// an *UndecodableTypeError while the cache has synced and most of the
// resource's objects cannot be decoded at the same field; nil otherwise.
// For an informer a Factory could not create (T unknown to the scheme, its
// resource already served as another Go type, options that conflict...)
// it is why, for good: such an informer is stopped from the start
// (Stopped is closed when Informer returns it), never syncs, its Run,
// AddHandler and AddIndex return this error, and its lister is empty.
func (i *SharedInformer[T]) LastError() error {
	if i.failed != nil {
		return i.failed
	}
	i.mu.Lock()
	err := i.lastErr
	i.mu.Unlock()
	if err != nil {
		return err
	}
	return i.undecodableType()
}

// undecodableType returns an *UndecodableTypeError while the cache has
// synced and most of the resource's objects cannot be decoded at the same
// field, and nil otherwise.
func (i *SharedInformer[T]) undecodableType() error {
	if !i.HasSynced() {
		return nil
	}
	return i.writer.undecodableType()
}

// LastSyncResourceVersion returns the resource version the cache is at;
// it is Stats().ResourceVersion.
func (i *SharedInformer[T]) LastSyncResourceVersion() string { return i.Stats().ResourceVersion }

// UsesWatchList reports whether the informer gets its initial state by
// watch-list streaming rather than by listing: false with
// Tuning.DisableWatchList or with client-go's WatchListClient feature
// gate off (KUBE_FEATURE_WatchListClient=false), false for good once the
// server refuses streaming, and false while the informer lists because
// streams ended before their initial events did (true again once a stream
// delivers them). It is Stats().WatchList.
func (i *SharedInformer[T]) UsesWatchList() bool { return i.Stats().WatchList }

// Name returns the informer's name in metrics: Options.Name, or one made
// of its resource, namespace and selectors.
func (i *SharedInformer[T]) Name() string { return i.cfg.name }

// Stats returns a snapshot of the informer's state.
func (i *SharedInformer[T]) Stats() InformerStats {
	sr := i.scope.report()
	st := InformerStats{Objects: i.store.Len(), Synced: i.HasSynced(), Shard: sr.shard, Undecodable: i.writer.undecodableCount()}
	st.Staleness, _ = i.stalenessNow()
	st.SchemaCheck = i.cfg.decoding.Schema.Status()
	refl := i.scope.running()
	if refl == nil {
		return st
	}
	st.ResourceVersion = refl.LastSyncResourceVersion()
	st.WatchList = refl.UsesWatchList()
	st.SyncProgress = refl.SyncProgress()
	st.LastEvent = refl.LastEvent()
	if at := i.writer.syncedTime(); at != 0 {
		st.InitialSync = time.Duration(at - i.runStart.Load())
	}
	return st
}

// Lister returns a lister over the cache.
func (i *SharedInformer[T]) Lister() Lister[T] { return Lister[T]{r: i.reader} }

// AddHandler registers h and returns its registration. A handler added
// while the informer runs first receives the cache's current contents as
// adds, then every later event. It fails once the informer has stopped.
func (i *SharedInformer[T]) AddHandler(h Handler[T]) (*Registration[T], error) {
	return i.AddHandlerWith(h, HandlerOptions{})
}

// AddHandlerWith is AddHandler with options.
func (i *SharedInformer[T]) AddHandlerWith(h Handler[T], opts HandlerOptions) (*Registration[T], error) {
	if i.failed != nil {
		return nil, i.failed
	}
	if h == nil {
		return nil, errorf("%s: AddHandler with a nil handler", i.cfg.desc)
	}
	if opts.QueueLimit < 0 {
		return nil, errorf("%s: AddHandler: queue limit %d is negative", i.cfg.desc, opts.QueueLimit)
	}
	name := opts.Name
	if name == "" {
		name = fmt.Sprintf("%T#%d", h, i.handlerSeq.Add(1))
	}
	resync, ok := opts.ResyncPeriod.Get()
	if !ok {
		resync = i.cfg.resync
	}
	reg := &Registration[T]{name: name, limit: opts.QueueLimit, desc: i.cfg.desc, inf: i}
	lc := dispatch.Config[T]{
		Deliver: deliverTo(h),
		OnPanic: func(n dispatch.Notification[T], v any, stack []byte) {
			i.handlerPanicked(reg, n, v, stack)
		},
		Resync:     resync,
		OnResync:   i.replay,
		Limit:      opts.QueueLimit,
		OnOverflow: func() { i.handlerOverflowed(reg) },
	}
	if opts.MergeByKey {
		lc.KeyOf = func(obj T) types.NamespacedName { return store.KeyOf(obj) }
	}
	if i.cfg.metrics != nil {
		reg.metrics = i.cfg.metrics.Handler(i, reg)
		lc.Observe = func(k dispatch.Kind, took time.Duration) { reg.metrics.Delivered(eventType(k), took) }
	}
	reg.listener = dispatch.New(lc)

	// The read lock keeps the writer out while the handler joins.
	i.store.RLock()
	defer i.store.RUnlock()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.state == stopped {
		return nil, errorf("%s: AddHandler: %w", i.cfg.desc, ErrStopped)
	}
	for _, obj := range i.store.AppendAllLocked(nil) {
		reg.listener.Push(dispatch.Notification[T]{Kind: dispatch.Add, New: obj, InitialList: true})
	}
	if i.writer.hasSynced() {
		reg.listener.Push(dispatch.Notification[T]{Kind: dispatch.Synced})
	}
	i.writer.addListener(reg.listener)
	i.regs = append(i.regs, reg)
	if i.state == running {
		i.startListener(reg.listener)
	}
	return reg, nil
}

// removeHandler takes reg out of the handlers the writer delivers to.
func (i *SharedInformer[T]) removeHandler(reg *Registration[T]) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.writer.removeListener(reg.listener)
	i.regs = slices.DeleteFunc(i.regs, func(r *Registration[T]) bool { return r == reg })
}

// replay queues the cache's contents to l as updates: a resync.
func (i *SharedInformer[T]) replay(l *dispatch.Listener[T]) {
	i.store.RLock()
	defer i.store.RUnlock()
	i.reader.withBuffer(i.store.AppendAllLocked, func(buf []T) {
		for _, obj := range buf {
			l.Push(dispatch.Notification[T]{Kind: dispatch.Update, Old: obj, New: obj})
		}
	})
}

// deliverTo turns notifications into calls of h.
func deliverTo[T Object](h Handler[T]) func(dispatch.Notification[T]) {
	return func(n dispatch.Notification[T]) {
		switch n.Kind {
		case dispatch.Add:
			h.HandleAdd(n.New, n.InitialList)
		case dispatch.Update:
			h.HandleUpdate(n.Old, n.New)
		case dispatch.Delete:
			h.HandleDelete(Deleted[T]{Key: store.KeyOf(n.Old), Object: n.Old, FinalStateUnknown: n.FinalStateUnknown, LeftShard: n.LeftShard, LeftNamespace: n.LeftNamespace})
		}
	}
}

// Index returns the named index, the built-in NamespaceIndex included.
func (i *SharedInformer[T]) Index(name string) (*Index[T], bool) {
	if !i.store.HasIndex(name) {
		return nil, false
	}
	return &Index[T]{r: i.reader, name: name}, true
}

// AddIndex adds a named index, before or after the informer starts, and
// returns it. Objects already cached are indexed at once.
func (i *SharedInformer[T]) AddIndex(name string, fn IndexFunc[T]) (*Index[T], error) {
	if i.failed != nil {
		return nil, i.failed
	}
	err := i.store.AddIndex(name, store.IndexFunc[T](fn))
	var ixErr *store.IndexFuncError
	switch {
	case errors.As(err, &ixErr):
		i.writer.reportIndexErrors(err)
	case err != nil:
		return nil, errorf("%s: %w", i.cfg.desc, err)
	}
	return &Index[T]{r: i.reader, name: name}, nil
}

func (i *SharedInformer[T]) requestFailed(op reflector.Op, err error) {
	i.countRequestError(op, err)
	err = &ListWatchError{Resource: i.cfg.desc, Op: string(op), Err: err}
	// Report first, so that OnError has seen the error by the time
	// WaitForSync returns it.
	i.report(err)
	i.setLastError(err)
}

// countRequestError counts a failed request in the informer's metrics.
func (i *SharedInformer[T]) countRequestError(op reflector.Op, err error) {
	if i.metrics != nil && op != reflector.OpDecode {
		i.metrics.RequestError(string(op), statusCode(err))
	}
}

// setLastError sets the error LastError returns and wakes WaitForSync.
func (i *SharedInformer[T]) setLastError(err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.lastErr = err
	close(i.errChanged)
	i.errChanged = make(chan struct{})
}

func (i *SharedInformer[T]) requestSucceeded(reflector.Op) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.lastErr != nil {
		i.lastErr = nil
		close(i.errChanged)
		i.errChanged = make(chan struct{})
	}
}

func (i *SharedInformer[T]) handlerPanicked(reg *Registration[T], n dispatch.Notification[T], v any, stack []byte) {
	obj := n.New
	if n.Kind == dispatch.Delete {
		obj = n.Old
	}
	if reg.metrics != nil {
		reg.metrics.Panicked(eventType(n.Kind))
	}
	i.report(&HandlerPanicError{Resource: i.cfg.desc, Handler: reg.name, Event: eventType(n.Kind).String(), Key: store.KeyOf(obj), Value: v, Stack: stack})
}

// handlerOverflowed removes reg, whose queue went over its limit and which
// its listener has stopped, and reports it.
func (i *SharedInformer[T]) handlerOverflowed(reg *Registration[T]) {
	err := reg.Err()
	i.removeHandler(reg)
	i.mu.Lock()
	i.overflowed = append(i.overflowed, reg)
	i.mu.Unlock()
	reg.forgetMetrics()
	i.report(err)
}

// registrations returns the informer's handlers, and those removed for
// exceeding their queue limit, which fail readiness for good.
func (i *SharedInformer[T]) registrations() []Syncer {
	i.mu.Lock()
	defer i.mu.Unlock()
	regs := make([]Syncer, 0, len(i.regs)+len(i.overflowed))
	for _, r := range i.regs {
		regs = append(regs, r)
	}
	for _, r := range i.overflowed {
		regs = append(regs, r)
	}
	return regs
}

// report hands err to OnError, or logs it.
func (i *SharedInformer[T]) report(err error) {
	if i.cfg.onError != nil {
		i.cfg.onError(err)
		return
	}
	log := klog.Background()
	i.mu.Lock()
	if i.runCtx != nil {
		log = klog.FromContext(i.runCtx)
	}
	i.mu.Unlock()
	var lw *ListWatchError
	if errors.As(err, &lw) && reflector.IsExpired(lw.Err) {
		log.V(4).Info("Resource version expired", "err", err)
		return
	}
	log.Error(err, "Informer error")
}

// stopUnstarted stops an informer that never ran: its handlers are done,
// Stopped is closed, and Run and AddHandler fail.
func (i *SharedInformer[T]) stopUnstarted() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.state != notStarted {
		return
	}
	i.state = stopped
	for _, reg := range i.regs {
		reg.listener.Stop()
	}
	close(i.stopped)
}

// free empties the cache of a stopped informer, so that its memory can be
// reclaimed and its readers see nothing, and their Get says why
// (ErrReleased); it no longer counts as synced.
func (i *SharedInformer[T]) free() {
	i.reader.released.Store(true)
	i.writer.unsync()
	i.store.Reset()
}

// busyHandlers names the handlers in a call.
func (i *SharedInformer[T]) busyHandlers() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	var names []string
	for _, reg := range i.regs {
		if reg.listener.InCall() {
			names = append(names, reg.name)
		}
	}
	return names
}

// startStalenessMonitor runs the informer's staleness monitor, if it has
// one, until ctx ends; the channel it returns is closed once it has.
func (i *SharedInformer[T]) startStalenessMonitor(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if i.staleness == nil {
		close(done)
		return done
	}
	sm, _ := i.metrics.(StalenessMetrics)
	probe := stalenessProbe{
		desc:          i.cfg.desc,
		synced:        i.writer.syncedChan(),
		cacheVersion:  func() string { return i.scope.progress("") },
		serverVersion: i.refls.serverVersion,
		metrics:       sm,
	}
	go func() {
		defer close(done)
		i.staleness.run(ctx, probe)
	}()
	return done
}

// stalenessNow returns the informer's staleness now, and false if it has
// no staleness monitor.
func (i *SharedInformer[T]) stalenessNow() (Staleness, bool) {
	if i.staleness == nil {
		return Staleness{}, false
	}
	return i.staleness.measure(i.cfg.desc, i.scope.progress(""), time.Now()), true
}

// unhealthy returns why a synced informer is not ready: a
// *StalenessError if the cache lags the server by more than the threshold
// of its staleness monitor, an *UndecodableTypeError while most objects
// cannot be decoded at the same field, or, with
// Options.FailReadinessOnUndecodable, an *UndecodableObjectsError while
// objects cannot be decoded.
func (i *SharedInformer[T]) unhealthy() error {
	if err := i.cfg.decoding.Schema.Err(); err != nil {
		return errorf("%s: %w", i.cfg.desc, err)
	}
	if st, ok := i.stalenessNow(); ok && i.staleness.over(st) {
		return &StalenessError{Resource: i.cfg.desc, Staleness: st, Threshold: i.staleness.opts.Threshold}
	}
	if err := i.undecodableType(); err != nil {
		return err
	}
	if i.cfg.failOnUndecodable && i.writer.undecodableCount() > 0 {
		return &UndecodableObjectsError{Resource: i.cfg.desc, Objects: i.writer.undecodableObjects()}
	}
	return nil
}
