package main

import (
	"context"
	"errors"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiunstructured "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// implementation is one way to sync a resource into a client-side cache,
// as a controller does at start-up.
type implementation struct {
	name  string
	about string
	// sync creates a cache of r over cfg, starts it, and returns once it
	// holds the server's state, or fails when ctx ends.
	sync func(ctx context.Context, cfg *rest.Config, r resource) (*syncedCache, error)
	// skip, if set, returns why the implementation does not measure r:
	// it would cache something else than r's shape; "" if it does.
	skip func(r resource) string
}

// applicable returns the implementations of impls that measure r, in
// order, and why each of the others does not, by name.
func applicable(impls []implementation, r resource) (kept []implementation, skipped map[string]string) {
	for _, im := range impls {
		if im.skip != nil {
			if why := im.skip(r); why != "" {
				if skipped == nil {
					skipped = map[string]string{}
				}
				skipped[im.name] = why
				continue
			}
		}
		kept = append(kept, im)
	}
	return kept, skipped
}

// syncedCache is a cache that sync filled.
type syncedCache struct {
	// objects counts the objects it holds.
	objects func(ctx context.Context) (int, error)
	// stop stops it and waits for its goroutines.
	stop func()
}

// implementations are the caches the harness measures, in the order it
// runs them by default. Measuring another is adding an entry.
var implementations = []implementation{
	{
		name:  "client-go",
		about: "client-go's informer factory: a SharedIndexInformer (typed, dynamic or metadata), WatchListClient at client-go's default",
		sync:  syncClientGo,
	},
	{
		name:  "client-go-list",
		about: "the same with client-go's WatchListClient feature gate off (KUBE_FEATURE_WatchListClient=false): a list, then a watch",
		sync:  syncClientGoListing,
	},
	{
		name:  "controller-runtime",
		about: "controller-runtime's cache with default options: GetInformer, then WaitForCacheSync",
		sync:  syncControllerRuntime,
	},
	{
		name:  "informers",
		about: "this library's Factory with default options",
		sync:  syncInformers(informers.FactoryOptions{}, shapeInformer),
	},
	{
		name:  "informers-list",
		about: "this library's Factory with Tuning.DisableWatchList set: a list, then a watch",
		sync:  syncInformers(informers.FactoryOptions{Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}}, shapeInformer),
	},
	{
		name: "informers-view",
		about: "this library's Factory, caching a view: of pods, their metadata, node, containers' names and images, " +
			"phase and conditions; of any other resource, its metadata",
		sync: syncInformers(informers.FactoryOptions{}, viewInformer),
		skip: func(r resource) string {
			if r.shape == shapeMetadata {
				return "a view is decoded from full objects, and -as metadata measures caches of what the server sends of metadata alone (informers caches *metav1.PartialObjectMetadata)"
			}
			return ""
		},
	},
}

// implementationNames returns the names of implementations, in order.
func implementationNames() []string {
	names := make([]string, len(implementations))
	for i, im := range implementations {
		names[i] = im.name
	}
	return names
}

// syncClientGoListing syncs r as syncClientGo does, with client-go's
// WatchListClient feature gate off: its reflector lists, then watches.
// The child process is the implementation's alone, so the gate is set for
// good.
func syncClientGoListing(ctx context.Context, cfg *rest.Config, r resource) (*syncedCache, error) {
	if err := bf.SetClientGoWatchList(false); err != nil {
		return nil, err
	}
	return syncClientGo(ctx, cfg, r)
}

// syncClientGo syncs r with client-go's informer factory of r's shape.
func syncClientGo(ctx context.Context, cfg *rest.Config, r resource) (*syncedCache, error) {
	type factory interface {
		Start(stopCh <-chan struct{})
		Shutdown()
	}
	var f factory
	var inf toolscache.SharedIndexInformer
	switch r.shape {
	case shapeTyped:
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		kf := kinformers.NewSharedInformerFactory(cs, 0)
		gi, err := kf.ForResource(r.gvr)
		if err != nil {
			return nil, err
		}
		f, inf = kf, gi.Informer()
	case shapeUnstructured:
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		df := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
		f, inf = df, df.ForResource(r.gvr).Informer()
	case shapeMetadata:
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		mf := metadatainformer.NewSharedInformerFactory(mc, 0)
		f, inf = mf, mf.ForResource(r.gvr).Informer()
	default:
		return nil, fmt.Errorf("client-go: no informer of shape %q", r.shape)
	}
	stopCh := make(chan struct{})
	f.Start(stopCh)
	stop := func() { close(stopCh); f.Shutdown() }
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		stop()
		return nil, fmt.Errorf("waiting for client-go's informer to sync: %w", context.Cause(ctx))
	}
	return &syncedCache{
		objects: func(context.Context) (int, error) { return len(inf.GetStore().ListKeys()), nil },
		stop:    stop,
	}, nil
}

// syncControllerRuntime syncs r with controller-runtime's cache over
// client-go's scheme.
func syncControllerRuntime(ctx context.Context, cfg *rest.Config, r resource) (*syncedCache, error) {
	c, err := crcache.New(cfg, crcache.Options{})
	if err != nil {
		return nil, err
	}
	obj, list, err := controllerRuntimeObjects(r)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	stop := func() { cancel(); <-done }
	// Not blocking in GetInformer, whose wait polls every 100 ms: the
	// informer's checker says when it has synced, to the millisecond.
	inf, err := c.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
	if err != nil {
		stop()
		return nil, err
	}
	select {
	case <-inf.HasSyncedChecker().Done():
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("controller-runtime's cache stopped before it synced: %w", errors.Join(err, context.Cause(ctx)))
	case <-ctx.Done():
		stop()
		return nil, fmt.Errorf("waiting for controller-runtime's informer to sync: %w", context.Cause(ctx))
	}
	if !c.WaitForCacheSync(ctx) {
		stop()
		return nil, fmt.Errorf("controller-runtime's WaitForCacheSync: %w", context.Cause(ctx))
	}
	return &syncedCache{
		objects: func(ctx context.Context) (int, error) {
			if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				return 0, err
			}
			return apimeta.LenList(list), nil
		},
		stop: stop,
	}, nil
}

// controllerRuntimeObjects returns the object and the list of r's shape
// that controller-runtime's cache takes to name r.
func controllerRuntimeObjects(r resource) (client.Object, client.ObjectList, error) {
	gvk, listGVK := r.gvk(), r.gvr.GroupVersion().WithKind(r.kind+"List")
	switch r.shape {
	case shapeTyped:
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, nil, err
		}
		list, err := scheme.Scheme.New(listGVK)
		if err != nil {
			return nil, nil, err
		}
		o, ok := obj.(client.Object)
		l, lok := list.(client.ObjectList)
		if !ok || !lok {
			return nil, nil, fmt.Errorf("%v is not a client.Object with a client.ObjectList", gvk)
		}
		return o, l, nil
	case shapeUnstructured:
		o, l := &apiunstructured.Unstructured{}, &apiunstructured.UnstructuredList{}
		o.SetGroupVersionKind(gvk)
		l.SetGroupVersionKind(listGVK)
		return o, l, nil
	case shapeMetadata:
		o, l := &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{}
		o.SetGroupVersionKind(gvk)
		l.SetGroupVersionKind(listGVK)
		return o, l, nil
	}
	return nil, nil, fmt.Errorf("controller-runtime: no object of shape %q", r.shape)
}

// syncInformers returns the sync of this library's Factory with opts, of
// the informer that informerOf returns.
func syncInformers(opts informers.FactoryOptions, informerOf func(*informers.Factory, resource) (informers.AnyInformer, error)) func(context.Context, *rest.Config, resource) (*syncedCache, error) {
	return func(ctx context.Context, cfg *rest.Config, r resource) (*syncedCache, error) {
		o := opts
		o.RESTConfig = cfg
		f := informers.NewFactoryWith(nil, o)
		inf, err := informerOf(f, r)
		if err != nil {
			return nil, err
		}
		runCtx, cancel := context.WithCancel(ctx)
		f.Start(runCtx)
		stop := func() {
			cancel()
			f.Shutdown(context.WithoutCancel(ctx))
		}
		if err := informers.WaitForSync(ctx, inf); err != nil {
			stop()
			return nil, err
		}
		return &syncedCache{
			objects: func(context.Context) (int, error) { return inf.Stats().Objects, nil },
			stop:    stop,
		}, nil
	}
}

// shapeInformer returns the informer of f of r's objects, in r's shape.
func shapeInformer(f *informers.Factory, r resource) (informers.AnyInformer, error) {
	switch r.shape {
	case shapeTyped:
		t, ok := typedFor(r.gvr)
		if !ok {
			return nil, fmt.Errorf("informers: no Go type for %s", gvrString(r.gvr))
		}
		return t.informer(f), nil
	case shapeUnstructured:
		return informers.InformerWith(f, informers.Options[*apiunstructured.Unstructured]{Resource: r.gvr}), nil
	case shapeMetadata:
		return informers.InformerWith(f, informers.Options[*metav1.PartialObjectMetadata]{Resource: r.gvr}), nil
	}
	return nil, fmt.Errorf("informers: no informer of shape %q", r.shape)
}
