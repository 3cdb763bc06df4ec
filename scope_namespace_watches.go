package informers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kubetyped/informers/internal/reflector"
)

// namespaceWatches runs one reflector per selected namespace, all feeding
// the informer's one writer, one at a time: NamespaceModePerNamespace.
// It is the informer's running reflector, for what reads one (Stats,
// LastSyncResourceVersion).
type namespaceWatches[T Object] struct {
	sel *namespaceSelection
	env scopeEnv[T]
	// version is where the informer's version is published: the lowest
	// of the namespaces'.
	version *reflector.Version
	wake    chan struct{} // signalled when a namespace syncs

	// wmu serialises the reflectors' calls to the writer, which has one
	// list generation at a time: each namespace's list sets its own.
	wmu sync.Mutex

	mu      sync.Mutex
	watches map[string]*namespaceWatch
	errs    map[string]*ListWatchError // the last error of each namespace that failed
	waiting map[string]bool            // the namespaces selected at start not synced yet
	erred   bool                       // the informer's LastError was set from errs
}

// namespaceWatch is the reflector of one namespace.
type namespaceWatch struct {
	refl    runner
	version *reflector.Version
	cancel  context.CancelFunc
	done    chan struct{}
	synced  bool
}

// Run follows the selection until ctx ends, then stops every reflector.
func (p *namespaceWatches[T]) Run(ctx context.Context) {
	ns := p.sel
	p.mu.Lock()
	p.waiting = ns.wanted()
	p.mu.Unlock()
	ns.setApplied(map[string]bool{}) // what each namespace's list completes
	defer p.stopAll()
	for first := true; ; first = false {
		select {
		case <-ns.changed: // read below
		default:
		}
		p.follow(ctx, ns.wanted(), first)
		p.checkSynced()
		select {
		case <-ctx.Done():
			return
		case <-ns.changed:
		case <-p.wake:
		}
	}
}

// follow stops the reflectors of the namespaces outside want, evicts
// their objects (and, first, those of any namespace a cluster-wide
// reflector held), and starts those of the namespaces in want.
func (p *namespaceWatches[T]) follow(ctx context.Context, want map[string]bool, first bool) {
	ns := p.sel
	p.mu.Lock()
	var leaving []*namespaceWatch
	for name, w := range p.watches {
		if !want[name] {
			leaving = append(leaving, w)
			delete(p.watches, name)
			delete(p.errs, name)
		}
	}
	maps.DeleteFunc(p.waiting, func(name string, _ bool) bool { return !want[name] })
	p.mu.Unlock()
	// Stopped without p.mu held, which their callbacks take.
	for _, w := range leaving {
		w.cancel()
		<-w.done
	}
	if len(leaving) > 0 || first {
		ns.applyOnly(want)
		p.wmu.Lock()
		p.env.w.evict(leavesNamespaces[T](ns, want))
		p.wmu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(leaving) > 0 {
		p.lastErrorChangedLocked(nil)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if p.watches[name] == nil && ctx.Err() == nil {
			p.startLocked(ctx, name)
		}
	}
}

// stopAll stops every reflector, leaving the cache as it is.
func (p *namespaceWatches[T]) stopAll() {
	p.mu.Lock()
	watches := slices.Collect(maps.Values(p.watches))
	p.mu.Unlock()
	for _, w := range watches {
		w.cancel()
		<-w.done
	}
}

// startLocked starts the reflector of namespace name; p.mu is held.
func (p *namespaceWatches[T]) startLocked(ctx context.Context, name string) {
	w := &namespaceWatch{version: &reflector.Version{}, done: make(chan struct{})}
	req := p.env.request(&namespaceListSink[T]{p: p, namespace: name}, "", w.version)
	req.namespace = name
	req.onErr = func(op reflector.Op, err error) { p.failed(name, op, err) }
	req.onOK = func(op reflector.Op) { p.succeeded(name, op) }
	refl, err := p.env.refls.make(req)
	if err != nil {
		p.env.report(errorf("%s: watching namespace %s: %w", p.env.desc, name, err))
		close(w.done)
		w.cancel = func() {}
		p.watches[name] = w
		return
	}
	w.refl = refl
	rctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	p.watches[name] = w
	go func() {
		defer close(w.done)
		var wg sync.WaitGroup
		wg.Go(func() { refl.Run(rctx) })
		for {
			have, changed := w.version.Next()
			if have != "" {
				p.versionChanged()
			}
			select {
			case <-changed:
			case <-rctx.Done():
				wg.Wait()
				return
			}
		}
	}()
}

// versionOf returns the version namespace ns's reflector has reached,
// and false if no reflector of ns has reached one.
func (p *namespaceWatches[T]) versionOf(ns string) (string, bool) {
	p.mu.Lock()
	w := p.watches[ns]
	p.mu.Unlock()
	if w == nil {
		return "", false
	}
	v := w.version.Get()
	return v, v != ""
}

// synced records that namespace name has synced: its objects count as
// held, and the informer syncs once every namespace selected at start
// has.
func (p *namespaceWatches[T]) synced(name string) {
	p.mu.Lock()
	if w := p.watches[name]; w != nil {
		w.synced = true
	}
	delete(p.waiting, name)
	p.mu.Unlock()
	p.sel.markApplied(name)
	signal(p.wake)
}

// checkSynced marks the informer synced once no namespace selected at
// start is still to sync.
func (p *namespaceWatches[T]) checkSynced() {
	p.mu.Lock()
	waiting := len(p.waiting)
	p.mu.Unlock()
	if waiting == 0 && !p.env.w.hasSynced() {
		p.wmu.Lock()
		p.env.w.Watching()
		p.wmu.Unlock()
	}
}

// versionChanged publishes the informer's version: the lowest version of
// the namespaces watched, which every one of them has reached. It
// publishes at every move of any namespace, the lowest moved or not, so
// that a wait for a write in any namespace looks again.
func (p *namespaceWatches[T]) versionChanged() {
	p.mu.Lock()
	defer p.mu.Unlock()
	lowest := ""
	for _, w := range p.watches {
		v := w.version.Get()
		if v == "" {
			continue
		}
		if c, err := compareVersions(v, lowest); lowest == "" || err == nil && c < 0 {
			lowest = v
		}
	}
	cur := p.version.Get()
	if c, err := compareVersions(lowest, cur); lowest != "" && (err != nil || c > 0) {
		cur = lowest
	}
	p.version.Set(cur)
}

// failed records the failed request of namespace name's reflector.
func (p *namespaceWatches[T]) failed(name string, op reflector.Op, err error) {
	p.env.countErr(op, err)
	lwErr := &ListWatchError{Resource: p.env.desc, Op: string(op), Err: fmt.Errorf("namespace %s: %w", name, err)}
	p.env.report(lwErr)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watches[name] == nil {
		return // stopped
	}
	p.errs[name] = lwErr
	p.lastErrorChangedLocked(lwErr)
}

// succeeded records a successful request of namespace name's reflector.
func (p *namespaceWatches[T]) succeeded(name string, _ reflector.Op) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errs[name] == nil {
		return
	}
	delete(p.errs, name)
	p.lastErrorChangedLocked(nil)
}

// lastErrorChangedLocked sets the informer's last error: latest, or, if
// nil, the errors of the namespaces still failing, in the order of their
// names, or nil if none is. p.mu is held.
func (p *namespaceWatches[T]) lastErrorChangedLocked(latest *ListWatchError) {
	if latest != nil {
		p.erred = true
		p.env.setErr(latest)
		return
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.errs)) {
		errs = append(errs, p.errs[name])
	}
	if p.erred || len(errs) > 0 {
		p.erred = len(errs) > 0
		p.env.setErr(errors.Join(errs...))
	}
}

// LastSyncResourceVersion returns the informer's version: the lowest of
// the namespaces'.
func (p *namespaceWatches[T]) LastSyncResourceVersion() string { return p.version.Get() }

// UsesWatchList reports whether any namespace streams its initial state.
func (p *namespaceWatches[T]) UsesWatchList() bool {
	return p.any(func(r runner) bool { return r.UsesWatchList() })
}

// SyncProgress returns the objects listed so far by the namespaces
// syncing.
func (p *namespaceWatches[T]) SyncProgress() int {
	n := 0
	p.any(func(r runner) bool { n += r.SyncProgress(); return false })
	return n
}

// LastEvent returns the time of the latest event of any namespace.
func (p *namespaceWatches[T]) LastEvent() time.Time {
	var last time.Time
	p.any(func(r runner) bool {
		if t := r.LastEvent(); t.After(last) {
			last = t
		}
		return false
	})
	return last
}

// any reports whether f is true of the reflector of any namespace.
func (p *namespaceWatches[T]) any(f func(runner) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.watches {
		if w.refl != nil && f(w.refl) {
			return true
		}
	}
	return false
}

// namespaceListSink is the sink of one namespace's reflector: it gives
// each of its lists a generation of its own, so that completing it
// deletes only what that namespace's list missed.
type namespaceListSink[T Object] struct {
	p         *namespaceWatches[T]
	namespace string
	gen       uint64
	synced    bool
}

func (s *namespaceListSink[T]) StartList() {
	s.p.wmu.Lock()
	s.gen = s.p.env.w.newGeneration()
	s.p.wmu.Unlock()
}

func (s *namespaceListSink[T]) Put(obj T, from reflector.Origin) {
	if obj.GetNamespace() != s.namespace {
		return
	}
	s.p.wmu.Lock()
	defer s.p.wmu.Unlock()
	s.p.env.w.putIn(s.gen, obj, from)
}

func (s *namespaceListSink[T]) Delete(obj T) {
	if obj.GetNamespace() != s.namespace {
		return
	}
	s.p.wmu.Lock()
	defer s.p.wmu.Unlock()
	s.p.env.w.Delete(obj)
}

func (s *namespaceListSink[T]) Undecodable(u reflector.Undecodable, deleted bool) {
	if ns, _, _, _ := u.Identity(); ns != s.namespace {
		return
	}
	s.p.wmu.Lock()
	defer s.p.wmu.Unlock()
	s.p.env.w.undecodableIn(s.gen, u, deleted)
}

func (s *namespaceListSink[T]) FinishList() {
	s.p.wmu.Lock()
	defer s.p.wmu.Unlock()
	s.p.env.w.finishListIn(s.namespace, s.gen)
}

func (s *namespaceListSink[T]) Watching() {
	if !s.synced {
		s.synced = true
		s.p.synced(s.namespace)
	}
}

func (s *namespaceListSink[T]) Flush() {
	s.p.wmu.Lock()
	defer s.p.wmu.Unlock()
	s.p.env.w.Flush()
}
