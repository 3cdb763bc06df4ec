package clientgo

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
)

// DynamicFactory returns a dynamicinformer.DynamicSharedInformerFactory
// over f, for client-go code written for dynamic informers: ForResource
// gives a read-only view of the factory's *unstructured.Unstructured
// informer of a resource, whose objects the library's JSON decoder
// decodes in one pass, sharing their equal keys and values, when the
// factory has a RESTConfig. The switch is one line:
//
//	dyn := clientgo.DynamicFactory(informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg}))
//
// As client-go's, informers asked for after Start run too (client-go's
// need another Start), and WaitForCacheSync waits for each informer until
// it syncs or stopCh closes. Shutdown stops every informer and waits for
// them.
func DynamicFactory(f *informers.Factory) *Dynamic {
	return &Dynamic{f: f, views: map[schema.GroupVersionResource]*View[*unstructured.Unstructured]{}, done: make(chan struct{})}
}

// Dynamic is the view DynamicFactory returns.
type Dynamic struct {
	f *informers.Factory

	mu    sync.Mutex
	views map[schema.GroupVersionResource]*View[*unstructured.Unstructured]
	once  sync.Once     // closes done
	done  chan struct{} // closed by Shutdown
	wg    sync.WaitGroup
}

var _ dynamicinformer.DynamicSharedInformerFactory = (*Dynamic)(nil)

// Start starts the factory's informers, and those asked for later, until
// stopCh closes.
func (d *Dynamic) Start(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	d.wg.Go(func() {
		defer cancel()
		select {
		case <-stopCh:
		case <-d.done:
		}
	})
	d.f.Start(ctx)
}

// ForResource returns the informer of gvr's objects as unstructured ones,
// made on first use; an informer that cannot be made (the factory has no
// way to reach the resource) logs why and never syncs.
func (d *Dynamic) ForResource(gvr schema.GroupVersionResource) clientgoinformers.GenericInformer {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.views[gvr]
	if !ok {
		inf := informers.InformerWith(d.f, informers.Options[*unstructured.Unstructured]{Resource: gvr})
		select {
		case <-inf.Stopped(): // stopped as it is made: it could not be
			klog.Background().Error(inf.LastError(), "Dynamic informer cannot be made", "resource", gvr.String())
		default:
		}
		v = SharedIndexInformer(inf)
		d.views[gvr] = v
	}
	return genericInformer{view: v, resource: gvr.GroupResource()}
}

// WaitForCacheSync waits until every informer asked for has synced, or
// stopCh closes, and says which have.
func (d *Dynamic) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	d.mu.Lock()
	views := make(map[schema.GroupVersionResource]*View[*unstructured.Unstructured], len(d.views))
	for gvr, v := range d.views {
		views[gvr] = v
	}
	d.mu.Unlock()
	synced := make(map[schema.GroupVersionResource]bool, len(views))
	for gvr, v := range views {
		synced[gvr] = cache.WaitForCacheSync(stopCh, v.HasSynced)
	}
	return synced
}

// Shutdown stops the informers and waits for them to end. It may be
// called more than once.
func (d *Dynamic) Shutdown() {
	d.once.Do(func() { close(d.done) })
	d.wg.Wait()
	if err := d.f.Shutdown(context.Background()); err != nil {
		klog.Background().Error(err, "Dynamic informers did not shut down cleanly")
	}
}

// genericInformer is client-go's GenericInformer of a View.
type genericInformer struct {
	view     *View[*unstructured.Unstructured]
	resource schema.GroupResource
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.view }

func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.view.GetIndexer(), g.resource)
}
