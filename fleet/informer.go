package fleet

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/syncwait"
)

// SharedInformer is a fleet's informer of objects of type T: one shared
// informer per attached cluster, read and followed together. Get it with
// the package's Informer or InformerWith; the zero value is not usable.
type SharedInformer[T informers.Object] struct {
	fl   *Fleet
	opts informers.Options[T]
	// resource is what the lister's errors name: Options.Resource, or the
	// resource of T's kind in the fleet's scheme.
	resource schema.GroupResource

	mu       sync.Mutex
	clusters map[string]*informers.SharedInformer[T]
	indexers map[string]informers.IndexFunc[T] // added by AddIndex
	regs     []*Registration[T]

	synced syncwait.Memo[informers.AnyInformer] // Synced's last channel

	hook // what informers.WaitForSync and ReadyCheck say of the informer
}

// requestKey tells a fleet's informers apart, as a factory does: by
// every option that makes a factory's informers differ.
type requestKey struct {
	typ                   reflect.Type
	resource              schema.GroupVersionResource
	labels, fields, name  string
	namespace, namespaces informers.Setting[string]
	namespaceMode         informers.Setting[informers.NamespaceMode]
	shard                 string
}

// keyOf returns the key of the informers of type T that opts asks for.
func keyOf[T informers.Object](opts informers.Options[T]) requestKey {
	k := requestKey{reflect.TypeFor[T](), opts.Resource, opts.LabelSelector, opts.FieldSelector, opts.Name,
		opts.Namespace, opts.NamespaceSelector, opts.NamespaceMode, ""}
	if s := opts.Shard; s != nil {
		// An invalid shard fails on every cluster, whichever its key.
		c := s.Canonical()
		k.shard = string(c.Field) + "|" + c.Selector()
	}
	return k
}

// Informer returns the fleet's informer of objects of type T with default
// options, creating it on first use; see informers.Informer.
//
//	pods := fleet.Informer[*corev1.Pod](fl)
//
// It runs on every attached cluster and on every cluster attached later.
func Informer[T informers.Object](fl *Fleet) *SharedInformer[T] {
	return InformerWith(fl, informers.Options[T]{})
}

// InformerWith is Informer with options, which apply on every cluster as
// informers.InformerWith applies them on one. Requests with the same type,
// resource, namespace, selectors (of objects and of namespaces), namespace
// mode, shard and name return the same informer; the other options are
// those of the first request. A cluster that cannot
// serve the informer (T unknown, a conflict with the cluster's factory)
// reports it in informers.WaitForSync of the fleet.
func InformerWith[T informers.Object](fl *Fleet, opts informers.Options[T]) *SharedInformer[T] {
	key := keyOf(opts)
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for _, inf := range fl.informers {
		if i, ok := inf.(*SharedInformer[T]); ok && i.key() == key {
			return i
		}
	}
	i := &SharedInformer[T]{fl: fl, opts: opts, resource: resourceOf(fl, opts), clusters: make(map[string]*informers.SharedInformer[T]), indexers: make(map[string]informers.IndexFunc[T])}
	i.hook = syncwait.New(i.waitForSync, i.notReady)
	fl.informers = append(fl.informers, i)
	for _, m := range fl.clusters {
		i.attach(m)
	}
	return i
}

// resourceOf returns the group-resource that informers of opts serve: as
// a factory resolves it, Options.Resource or the resource of T's kind in
// the fleet's scheme; for a type the scheme does not know, which no
// cluster can serve, Options.Resource's, empty.
func resourceOf[T informers.Object](fl *Fleet, opts informers.Options[T]) schema.GroupResource {
	if t, err := apiclient.Resolve[T](fl.scheme(), opts.Resource); err == nil {
		return t.GVR.GroupResource()
	}
	return opts.Resource.GroupResource()
}

func (i *SharedInformer[T]) key() requestKey { return keyOf(i.opts) }

// attach creates the informer on m, with the indexes and handlers added
// so far.
func (i *SharedInformer[T]) attach(m *member) {
	inf := informers.InformerWith(m.factory, i.opts)
	m.added(inf)
	i.mu.Lock()
	defer i.mu.Unlock()
	i.clusters[m.name] = inf
	if !created(inf) {
		return // informers.WaitForSync of the factory reports it
	}
	for name, fn := range i.indexers {
		if _, err := inf.AddIndex(name, fn); err != nil {
			m.health.observe(nil)(fmt.Errorf("fleet: cluster %q: %w", m.name, err))
		}
	}
	for _, reg := range i.regs {
		reg.attach(m.name, inf)
	}
}

// created reports whether the cluster's factory could create inf: one it
// could not is stopped from the start, and its LastError says why.
func created(inf informers.AnyInformer) bool {
	select {
	case <-inf.Stopped():
		return inf.LastError() == nil
	default:
		return true
	}
}

// detach forgets cluster, whose factory is shutting down.
func (i *SharedInformer[T]) detach(cluster string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.clusters, cluster)
	for _, reg := range i.regs {
		reg.detach(cluster)
	}
}

// Cluster returns the informer's shared informer on the cluster called
// name, and whether that cluster is attached.
func (i *SharedInformer[T]) Cluster(name string) (*informers.SharedInformer[T], bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	inf, ok := i.clusters[name]
	return inf, ok
}

// each returns the informer's clusters and their informers, sorted by
// cluster name.
func (i *SharedInformer[T]) each() []clusterInformer[T] {
	i.mu.Lock()
	defer i.mu.Unlock()
	all := make([]clusterInformer[T], 0, len(i.clusters))
	for _, name := range slices.Sorted(maps.Keys(i.clusters)) {
		all = append(all, clusterInformer[T]{name, i.clusters[name]})
	}
	return all
}

// clusterInformer is one cluster's informer.
type clusterInformer[T informers.Object] struct {
	cluster string
	inf     *informers.SharedInformer[T]
}

// String describes the informer by resource and Go type.
func (i *SharedInformer[T]) String() string {
	return fmt.Sprintf("fleet informer of %v", reflect.TypeFor[T]())
}

// Synced is closed once the informer's cache has synced on every cluster
// attached at the time of the call; it stays open if one of them stops
// first. It makes the informer an informers.Syncer:
// informers.WaitForSync(ctx, i) waits for it as the fleet's does, cluster
// by cluster, and informers.ReadyCheck(i) names the clusters not ready.
// Calls while its clusters stay the same share one channel, and one
// goroutine waits for it.
func (i *SharedInformer[T]) Synced() <-chan struct{} {
	var infs []informers.AnyInformer
	for _, c := range i.each() {
		infs = append(infs, c.inf)
	}
	return i.synced.Get(infs, allSynced)
}

// waitForSync waits until the informer's cache has synced on every
// attached cluster. Like the fleet's, it stops waiting for a cluster at
// its first failed request; its error, a *SyncError, names each cluster
// not synced, with its cause, and no cluster whose cache synced, even if
// its server went away since (ReadyCheck names those).
func (i *SharedInformer[T]) waitForSync(ctx context.Context) error {
	fl := i.fl
	return waitClusters(ctx, fl.members(), func(ctx context.Context, m *member) error {
		inf, ok := i.Cluster(m.name)
		if !ok {
			return nil // detached meanwhile
		}
		return waitMember(ctx, m, []informers.AnyInformer{inf}, func(ctx context.Context) error { return informers.WaitForSync(ctx, inf) })
	})
}

// notReady returns a *SyncError naming the clusters on which the informer
// is not ready, or nil.
func (i *SharedInformer[T]) notReady() error {
	members := i.fl.members()
	errs := make([]error, len(members))
	for n, m := range members {
		if inf, ok := i.Cluster(m.name); ok {
			errs[n] = notReadyOn(inf, inf)
		}
	}
	return syncError(members, errs)
}

// AddIndex adds a named index on every cluster, those attached later too,
// and returns the fleet-wide index. It fails if a cluster's informer
// refuses it (a name taken), naming the cluster.
func (i *SharedInformer[T]) AddIndex(name string, fn informers.IndexFunc[T]) (*Index[T], error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.indexers[name]; ok || i.opts.Indexers[name] != nil {
		return &Index[T]{inf: i, name: name}, nil
	}
	for cluster, inf := range i.clusters {
		if !created(inf) {
			continue
		}
		if _, err := inf.AddIndex(name, fn); err != nil {
			return nil, fmt.Errorf("fleet: cluster %q: %w", cluster, err)
		}
	}
	i.indexers[name] = fn
	return &Index[T]{inf: i, name: name}, nil
}

// Index returns the named index, the built-in informers.NamespaceIndex
// included, if the informer has it.
func (i *SharedInformer[T]) Index(name string) (*Index[T], bool) {
	i.mu.Lock()
	_, ok := i.indexers[name]
	i.mu.Unlock()
	if !ok && name != informers.NamespaceIndex && i.opts.Indexers[name] == nil {
		return nil, false
	}
	return &Index[T]{inf: i, name: name}, true
}

// Lister returns a lister over the caches of every cluster.
func (i *SharedInformer[T]) Lister() Lister[T] { return Lister[T]{inf: i} }
