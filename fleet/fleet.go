package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/syncwait"
)

// Options configures a Fleet. The zero value is valid.
type Options struct {
	// Factory is the configuration of every cluster's factory; the
	// Cluster given to Attach sets how the factory reaches its server
	// (RESTConfig, Server) and the fleet sets Decoders. Factory.OnError
	// receives the errors of every cluster.
	Factory informers.FactoryOptions
	// Metrics, if set, returns the metrics of one cluster's informers and
	// handlers, for example the Prometheus adapter over a registerer that
	// adds the label cluster=name. Their series go when the cluster is
	// detached.
	Metrics func(cluster string) informers.Metrics
}

// Cluster says how to reach one cluster's API server: set Client,
// RESTConfig or, in tests, Server (see informers.FactoryOptions).
type Cluster struct {
	Client     kubernetes.Interface
	RESTConfig *rest.Config
	Server     informers.Server
}

// Fleet is a set of clusters and the informers that run on each of them.
// It is safe for concurrent use. The zero value is not usable; call New.
type Fleet struct {
	opts     Options
	decoders informers.Decoders // shared by every cluster's factory
	// scheme returns the scheme the clusters' factories resolve Go types
	// in, for what the fleet says of a type without asking a cluster.
	scheme func() *runtime.Scheme

	mu        sync.Mutex
	clusters  map[string]*member
	informers []fleetInformer // in request order
	stopped   bool

	synced syncwait.Memo[informers.AnyInformer] // Synced's last channel

	hook // what informers.WaitForSync and ReadyCheck say of the fleet
}

// member is one attached cluster.
type member struct {
	name    string
	factory *informers.Factory
	stop    func() bool   // stops detaching the cluster when Attach's context ends
	done    chan struct{} // closed once the factory has shut down
	health  *health

	mu sync.Mutex
	// informers are the cluster's informers of the fleet's.
	informers []informers.AnyInformer
}

// added records inf, the cluster's informer of one of the fleet's.
func (m *member) added(inf informers.AnyInformer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.informers = append(m.informers, inf)
}

// all returns the cluster's informers of the fleet's.
func (m *member) all() []informers.AnyInformer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.informers)
}

// fleetInformer is an *SharedInformer[T] of any T.
type fleetInformer interface {
	// attach creates the informer on m; it is called with the fleet's
	// lock held.
	attach(m *member)
	// detach forgets cluster; it is called with the fleet's lock held.
	detach(cluster string)
}

// New returns a fleet with no cluster.
func New(opts Options) *Fleet {
	sch := func() *runtime.Scheme { return scheme.Scheme }
	if opts.Factory.Scheme != nil {
		sch = sync.OnceValue(func() *runtime.Scheme { return apiclient.WithBuiltIns(opts.Factory.Scheme) })
	}
	fl := &Fleet{opts: opts, scheme: sch, clusters: make(map[string]*member)}
	fl.hook = syncwait.New(fl.waitForSync, fl.notReady)
	return fl
}

// ErrAttached is returned by Attach for a name already attached.
var ErrAttached = errors.New("fleet: cluster already attached")

// Attach adds the cluster c under name and starts every informer the
// fleet has on it; informers requested later start on it too. The
// handlers of the fleet's informers receive the cluster's objects of its
// first list as adds with isInInitialList set, then its changes. The
// cluster runs until Detach, Shutdown or the end of ctx, which detaches
// it. Attach does not wait for its caches to sync (see WaitForSync).
//
// A cluster attached again under a name it was detached from is a new
// cluster to the handlers: they receive its whole state again as adds
// with isInInitialList set, objects they were given before included, and
// nothing for the objects deleted while it was detached (see Detach).
func (fl *Fleet) Attach(ctx context.Context, name string, c Cluster) error {
	_, err := fl.attach(ctx, name, c)
	return err
}

// attach is Attach, returning the attached cluster.
func (fl *Fleet) attach(ctx context.Context, name string, c Cluster) (*member, error) {
	if name == "" {
		return nil, errors.New("fleet: Attach: empty cluster name")
	}
	if c.Client == nil && c.RESTConfig == nil && c.Server == nil {
		return nil, fmt.Errorf("fleet: Attach %q: Cluster sets neither Client, RESTConfig nor Server", name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: Attach %q: %w", name, err)
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.stopped {
		return nil, fmt.Errorf("fleet: Attach %q: %w", name, informers.ErrStopped)
	}
	if _, ok := fl.clusters[name]; ok {
		return nil, fmt.Errorf("%w: %q", ErrAttached, name)
	}
	m := &member{name: name, health: newHealth(name), done: make(chan struct{})}
	opts := fl.opts.Factory
	opts.RESTConfig, opts.Server, opts.Decoders = c.RESTConfig, c.Server, &fl.decoders
	onError, _ := fl.opts.Factory.OnError.Get()
	opts.OnError = informers.Set(m.health.observe(onError))
	if fl.opts.Metrics != nil {
		opts.Metrics = informers.Set(fl.opts.Metrics(name))
	}
	m.factory = informers.NewFactoryWith(c.Client, opts)
	fl.clusters[name] = m
	for _, inf := range fl.informers {
		inf.attach(m)
	}
	m.factory.Start(context.WithoutCancel(ctx))
	m.stop = context.AfterFunc(ctx, func() { _ = fl.detach(ctx, m) })
	return m, nil
}

// Detach removes the cluster called name: its informers stop, its
// handlers receive nothing more and its cache is freed. Handlers are not
// told: they receive no deletes for the cluster's objects, and the events
// still queued for them are dropped, so a handler that keeps state per
// cluster forgets the cluster's itself. The same holds when a cluster goes
// with the end of its Attach's context, Shutdown or a provider.
//
// Detach waits until the cluster's goroutines have ended, or until ctx
// ends (see informers.Factory.Shutdown); its error then names the handlers
// still in a call, which may overlap the calls of a cluster attached again
// under the same name. It fails if no cluster is called name.
func (fl *Fleet) Detach(ctx context.Context, name string) error {
	fl.mu.Lock()
	m := fl.clusters[name]
	fl.mu.Unlock()
	if m == nil {
		return fmt.Errorf("fleet: Detach: no cluster %q", name)
	}
	m.stop()
	return fl.detach(ctx, m)
}

// detach removes m, unless another call did, and stops its factory.
func (fl *Fleet) detach(ctx context.Context, m *member) error {
	fl.mu.Lock()
	if fl.clusters[m.name] != m {
		fl.mu.Unlock()
		return nil
	}
	delete(fl.clusters, m.name)
	for _, inf := range fl.informers {
		inf.detach(m.name)
	}
	fl.mu.Unlock()
	defer close(m.done)
	if err := m.factory.Shutdown(ctx); err != nil {
		return fmt.Errorf("fleet: cluster %q: %w", m.name, err)
	}
	return nil
}

// detachWait detaches m and waits until its factory has shut down, by
// this call or by another detaching it meanwhile, or until ctx ends.
func (fl *Fleet) detachWait(ctx context.Context, m *member) error {
	m.stop()
	if err := fl.detach(ctx, m); err != nil {
		return err
	}
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fleet: detaching cluster %q: %w", m.name, ctx.Err())
	}
}

// Clusters returns the names of the attached clusters, sorted.
func (fl *Fleet) Clusters() []string {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return slices.Sorted(maps.Keys(fl.clusters))
}

// Factory returns the factory of the cluster called name, for informers
// that run on that cluster alone, or nil if no cluster is called name.
func (fl *Fleet) Factory(name string) *informers.Factory {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if m := fl.clusters[name]; m != nil {
		return m.factory
	}
	return nil
}

// Shutdown detaches every cluster and waits as Detach does; clusters
// cannot be attached after it.
func (fl *Fleet) Shutdown(ctx context.Context) error {
	fl.mu.Lock()
	fl.stopped = true
	members := slices.Collect(maps.Values(fl.clusters))
	fl.mu.Unlock()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for n, m := range members {
		m.stop()
		wg.Go(func() { errs[n] = fl.detach(ctx, m) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// members returns the attached clusters, sorted by name.
func (fl *Fleet) members() []*member {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	ms := slices.Collect(maps.Values(fl.clusters))
	slices.SortFunc(ms, func(a, b *member) int { return cmp.Compare(a.name, b.name) })
	return ms
}
