package informers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchJSONImpl starts a cache of the applications a JSONServer serves,
// calling onAdd for every object delivered, and returns how to stop it.
type benchJSONImpl struct {
	name  string
	start func(srv *bf.JSONServer, onAdd func()) (stop func(), err error)
}

// benchJSONImpls are the implementations of fixture=json, each decoding
// the JSON pages its own way: client-go's typed informer over a REST
// client whose codecs know the type (sigs.k8s.io/json), client-go's
// dynamic informer (UnstructuredJSONScheme), and ours, typed and
// unstructured, from a factory as users make one. All list, then watch.
var benchJSONImpls = []benchJSONImpl{
	{"clientgo", benchJSONClientGo},
	{"clientgo-dynamic", benchJSONClientGoDynamic},
	{"informers", benchJSONInformers[*bf.Application]},
	{"informers-unstructured", benchJSONInformers[*unstructured.Unstructured]},
}

func benchJSONScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	bf.AddApplications(s)
	return s
}

// benchJSONClientGo is client-go's typed path for a custom resource: a REST
// client with the codecs of a scheme that registers the type, and a
// SharedIndexInformer over it.
func benchJSONClientGo(srv *bf.JSONServer, onAdd func()) (func(), error) {
	if err := benchCheckClientGoListWatch(); err != nil {
		return nil, err
	}
	cfg := srv.Config()
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &bf.ApplicationGV
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(benchJSONScheme()).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	res := bf.ApplicationResource.Resource
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := &bf.ApplicationList{}
			return l, rc.Get().Resource(res).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(l)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Resource(res).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}, &bf.Application{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	return benchJSONRunClientGo(inf, onAdd, func(*bf.Application) {})
}

// benchJSONClientGoDynamic is client-go's dynamic informer.
func benchJSONClientGoDynamic(srv *bf.JSONServer, onAdd func()) (func(), error) {
	if err := benchCheckClientGoListWatch(); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		return nil, err
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, bf.ApplicationResource, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	return benchJSONRunClientGo(inf, onAdd, func(*unstructured.Unstructured) {})
}

// benchJSONRunClientGo adds a handler that asserts the type as users do,
// runs inf, and returns how to stop it and wait for it.
func benchJSONRunClientGo[T any](inf cache.SharedIndexInformer, onAdd func(), use func(T)) (func(), error) {
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if o, ok := obj.(T); ok {
			use(o)
			onAdd()
		}
	}}); err != nil {
		return nil, err
	}
	stopCh := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(stopCh) })
	return func() { close(stopCh); wg.Wait() }, nil
}

// benchJSONInformers is ours as users get it, from a factory with a
// RESTConfig (and, for the typed informer, a Scheme that registers the
// type), listing and watching as client-go does here.
func benchJSONInformers[T informers.Object](srv *bf.JSONServer, onAdd func()) (func(), error) {
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{
		RESTConfig: srv.Config(), Scheme: benchJSONScheme(), Tuning: informers.Tuning{DisableWatchList: informers.Set(true), PageSize: informers.Set[int64](benchPageSize)},
	})
	inf := informers.InformerWith(f, informers.Options[T]{Resource: bf.ApplicationResource})
	if err := inf.LastError(); err != nil {
		return nil, err
	}
	if _, err := inf.AddHandler(informers.HandlerFuncs[T]{OnAdd: func(T, bool) { onAdd() }}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	return func() {
		cancel()
		if err := f.Shutdown(context.Background()); err != nil {
			panic(fmt.Sprintf("benchmark: factory: %v", err))
		}
	}, nil
}

// benchInitialSyncJSON is fixture=json of BenchmarkInitialSync: count
// applications (NewApplication, with or without their managed fields)
// served as JSON list pages of 500 by an HTTP server on the loopback,
// decoded by each implementation its own way.
func benchInitialSyncJSON(b *testing.B, count int, managedFields bool) {
	var srv *bf.JSONServer // made when first needed, closed at the end
	defer func() {
		if srv != nil {
			srv.Close()
		}
	}()
	for _, impl := range benchJSONImpls {
		b.Run(fmt.Sprintf("objects=%d/managedFields=%v/fixture=json/impl=%s", count, managedFields, impl.name), func(b *testing.B) {
			if srv == nil {
				var err error
				if srv, err = bf.NewApplicationServer(count, benchPageSize, managedFields); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(srv.Bytes()))
			benchMeasureSync(b, count, func(onAdd func()) func() {
				stop, err := impl.start(srv, onAdd)
				if err != nil {
					b.Fatal(err)
				}
				return stop
			})
		})
	}
}
