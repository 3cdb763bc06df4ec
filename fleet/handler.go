package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/syncwait"
)

// Handler receives a fleet informer's events with the cluster of each.
// Each cluster delivers to its own goroutine and queue, as an informer
// does to each of its handlers: a handler slow or panicking on one
// cluster's events delays no other cluster's. Objects are shared with the
// cache: read them, never modify them. A detached cluster sends no deletes
// for its objects, and one attached again sends its whole state as
// initial adds (see Fleet.Detach and Fleet.Attach).
type Handler[T informers.Object] interface {
	HandleAdd(cluster string, obj T, isInInitialList bool)
	HandleUpdate(cluster string, oldObj, newObj T)
	HandleDelete(cluster string, d informers.Deleted[T])
}

// HandlerFuncs adapts functions to a Handler. A nil field ignores its
// events.
type HandlerFuncs[T informers.Object] struct {
	OnAdd    func(cluster string, obj T, isInInitialList bool)
	OnUpdate func(cluster string, oldObj, newObj T)
	OnDelete func(cluster string, d informers.Deleted[T])
}

// HandleAdd calls OnAdd if it is set.
func (f HandlerFuncs[T]) HandleAdd(cluster string, obj T, isInInitialList bool) {
	if f.OnAdd != nil {
		f.OnAdd(cluster, obj, isInInitialList)
	}
}

// HandleUpdate calls OnUpdate if it is set.
func (f HandlerFuncs[T]) HandleUpdate(cluster string, oldObj, newObj T) {
	if f.OnUpdate != nil {
		f.OnUpdate(cluster, oldObj, newObj)
	}
}

// HandleDelete calls OnDelete if it is set.
func (f HandlerFuncs[T]) HandleDelete(cluster string, d informers.Deleted[T]) {
	if f.OnDelete != nil {
		f.OnDelete(cluster, d)
	}
}

// inCluster is a Handler bound to one cluster, as an informers.Handler.
type inCluster[T informers.Object] struct {
	cluster string
	h       Handler[T]
}

func (c inCluster[T]) HandleAdd(obj T, initial bool)       { c.h.HandleAdd(c.cluster, obj, initial) }
func (c inCluster[T]) HandleUpdate(oldObj, newObj T)       { c.h.HandleUpdate(c.cluster, oldObj, newObj) }
func (c inCluster[T]) HandleDelete(d informers.Deleted[T]) { c.h.HandleDelete(c.cluster, d) }

// Registration is a handler added to a fleet informer: one registration
// per attached cluster, those attached later too.
type Registration[T informers.Object] struct {
	inf  *SharedInformer[T]
	h    Handler[T]
	opts informers.HandlerOptions

	// Guarded by inf.mu.
	clusters map[string]*informers.Registration[T]
	errs     map[string]error // clusters that refused the handler

	delivered syncwait.Memo[informers.AnyRegistration] // Synced's last channel

	hook // what informers.WaitForSync and ReadyCheck say of the handler
}

// AddHandler registers h on every cluster, those attached later too. On
// each cluster, h first receives the cache's current contents as adds,
// then every later event, as with informers.SharedInformer.AddHandler.
// A cluster that refuses the handler (its
// informer could not be created) is reported by informers.WaitForSync of
// the registration, and by its Err.
func (i *SharedInformer[T]) AddHandler(h Handler[T]) (*Registration[T], error) {
	return i.AddHandlerWith(h, informers.HandlerOptions{})
}

// AddHandlerWith is AddHandler with options, which apply on every
// cluster.
func (i *SharedInformer[T]) AddHandlerWith(h Handler[T], opts informers.HandlerOptions) (*Registration[T], error) {
	if h == nil {
		return nil, fmt.Errorf("fleet: %s: AddHandler with a nil handler", i)
	}
	reg := &Registration[T]{inf: i, h: h, opts: opts, clusters: make(map[string]*informers.Registration[T]), errs: make(map[string]error)}
	reg.hook = syncwait.New(reg.waitForSync, reg.notReady)
	i.mu.Lock()
	defer i.mu.Unlock()
	for cluster, inf := range i.clusters {
		reg.attach(cluster, inf)
	}
	i.regs = append(i.regs, reg)
	return reg, nil
}

// attach adds the handler to inf, the informer of cluster; with inf.mu
// held.
func (r *Registration[T]) attach(cluster string, inf *informers.SharedInformer[T]) {
	cr, err := inf.AddHandlerWith(inCluster[T]{cluster, r.h}, r.opts)
	if err != nil {
		r.errs[cluster] = err
		return
	}
	r.clusters[cluster] = cr
}

// detach forgets cluster, which was detached; with inf.mu held.
func (r *Registration[T]) detach(cluster string) {
	delete(r.clusters, cluster)
	delete(r.errs, cluster)
}

// Cluster returns the handler's registration on the cluster called name,
// and whether it has one.
func (r *Registration[T]) Cluster(name string) (*informers.Registration[T], bool) {
	r.inf.mu.Lock()
	defer r.inf.mu.Unlock()
	cr, ok := r.clusters[name]
	return cr, ok
}

// snapshot returns the registrations and errors by cluster.
func (r *Registration[T]) snapshot() (map[string]*informers.Registration[T], map[string]error) {
	r.inf.mu.Lock()
	defer r.inf.mu.Unlock()
	return maps.Clone(r.clusters), maps.Clone(r.errs)
}

// never is a channel never closed: the Synced of a registration that a
// cluster refused.
var never = make(chan struct{})

// Synced is closed once the handler has been delivered the initial state
// of every cluster attached at the time of the call; it stays open if a
// cluster refused the handler or it is removed first. It makes the
// registration an informers.Syncer: informers.WaitForSync(ctx, r) waits
// for it as the fleet's does, cluster by cluster, and
// informers.ReadyCheck(r) names the clusters not ready. Calls while its
// clusters stay the same share one channel, and one goroutine waits for
// it.
func (r *Registration[T]) Synced() <-chan struct{} {
	regs, errs := r.snapshot()
	if len(errs) > 0 {
		return never
	}
	all := make([]informers.AnyRegistration, 0, len(regs))
	for _, name := range slices.Sorted(maps.Keys(regs)) {
		all = append(all, regs[name])
	}
	return r.delivered.Get(all, allDelivered)
}

// waitForSync waits until the handler has been delivered the initial
// state of every attached cluster. As the fleet's, it stops waiting for a
// cluster at its first failed request; its error, a *SyncError, names
// each cluster whose state the handler lacks, with why, and no cluster
// whose state it was delivered, even if that cluster's server went away
// since.
func (r *Registration[T]) waitForSync(ctx context.Context) error {
	return waitClusters(ctx, r.inf.fl.members(), func(ctx context.Context, m *member) error {
		regs, errs := r.snapshot()
		if err := errs[m.name]; err != nil {
			return err
		}
		cr, ok := regs[m.name]
		if !ok {
			return nil // attached after the handler was removed, or detached
		}
		inf, ok := r.inf.Cluster(m.name)
		if !ok {
			return nil
		}
		return waitMember(ctx, m, []informers.AnyInformer{inf}, func(ctx context.Context) error { return informers.WaitForSync(ctx, cr) })
	})
}

// notReady returns a *SyncError naming the clusters on which the handler
// is not ready, or nil.
func (r *Registration[T]) notReady() error {
	members := r.inf.fl.members()
	regs, failed := r.snapshot()
	errs := make([]error, len(members))
	for n, m := range members {
		if err := failed[m.name]; err != nil {
			errs[n] = err
			continue
		}
		cr, ok := regs[m.name]
		inf, iok := r.inf.Cluster(m.name)
		if ok && iok {
			errs[n] = notReadyOn(cr, inf)
		}
	}
	return syncError(members, errs)
}

// Remove stops delivery to the handler on every cluster, and on clusters
// attached later.
func (r *Registration[T]) Remove() {
	r.inf.mu.Lock()
	regs := slices.Collect(maps.Values(r.clusters))
	clear(r.clusters)
	r.inf.regs = slices.DeleteFunc(r.inf.regs, func(x *Registration[T]) bool { return x == r })
	r.inf.mu.Unlock()
	for _, cr := range regs {
		cr.Remove()
	}
}

// Err returns the errors of the clusters that refused the handler or
// removed it for exceeding its queue limit, each naming its cluster, or
// nil.
func (r *Registration[T]) Err() error {
	regs, errs := r.snapshot()
	for cluster, cr := range regs {
		if err := cr.Err(); err != nil {
			errs[cluster] = err
		}
	}
	var all []error
	for _, cluster := range slices.Sorted(maps.Keys(errs)) {
		all = append(all, fmt.Errorf("fleet: cluster %q: %w", cluster, errs[cluster]))
	}
	return errors.Join(all...)
}
