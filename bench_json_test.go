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
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchJSONImpl starts a cache of the objects a JSONServer serves,
// calling onAdd for every object delivered, and returns how to stop it.
// newScheme makes a scheme that registers the served type, at every
// start, as a program makes its scheme when it starts; it is nil for the
// built-in types, which client-go's scheme registers.
type benchJSONImpl struct {
	name  string
	start func(srv *bf.JSONServer, newScheme func() *runtime.Scheme, onAdd func()) (stop func(), err error)
}

// benchJSONImpls are the implementations of fixture=json for objects of
// type T, each decoding the JSON pages its own way: client-go's typed
// informer over a REST client whose codecs know the type
// (sigs.k8s.io/json), client-go's dynamic informer
// (UnstructuredJSONScheme), and ours, typed and unstructured, from a
// factory as users make one. All list, then watch.
func benchJSONImpls[T informers.Object]() []benchJSONImpl {
	return []benchJSONImpl{
		{"clientgo", benchJSONClientGo[T]},
		{"clientgo-dynamic", benchJSONClientGoDynamic},
		{"informers", benchJSONInformers[T]},
		{"informers-unstructured", benchJSONInformers[*unstructured.Unstructured]},
	}
}

func benchJSONScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	bf.AddApplications(s)
	return s
}

// benchJSONClientGo is client-go's typed path for objects of type T: a
// REST client with the codecs of a scheme that registers the type (as a
// generated clientset has, client-go's own for the built-in types), and a
// SharedIndexInformer over it whose handler asserts T.
func benchJSONClientGo[T runtime.Object](srv *bf.JSONServer, newScheme func() *runtime.Scheme, onAdd func()) (func(), error) {
	if err := benchCheckClientGoListWatch(); err != nil {
		return nil, err
	}
	s, codecs := clientgoscheme.Scheme, clientgoscheme.Codecs
	if newScheme != nil {
		s = newScheme()
		codecs = serializer.NewCodecFactory(s)
	}
	gvr := srv.Resource()
	gv := gvr.GroupVersion()
	cfg := srv.Config()
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.GroupVersion = &gv
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	example, err := s.New(gv.WithKind(srv.Kind()))
	if err != nil {
		return nil, err
	}
	if _, ok := example.(T); !ok {
		return nil, fmt.Errorf("the scheme makes %T of kind %s, not %T", example, srv.Kind(), *new(T))
	}
	listKind := gv.WithKind(srv.Kind() + "List")
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := s.New(listKind)
			if err != nil {
				return nil, err
			}
			return l, rc.Get().Resource(gvr.Resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(l)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Resource(gvr.Resource).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}, example, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	return benchJSONRunClientGo(inf, onAdd, func(T) {})
}

// benchJSONClientGoDynamic is client-go's dynamic informer.
func benchJSONClientGoDynamic(srv *bf.JSONServer, _ func() *runtime.Scheme, onAdd func()) (func(), error) {
	if err := benchCheckClientGoListWatch(); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		return nil, err
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, srv.Resource(), metav1.NamespaceAll, 0,
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
// RESTConfig (and the Scheme of newScheme, unless nil), listing and
// watching as client-go does here.
func benchJSONInformers[T informers.Object](srv *bf.JSONServer, newScheme func() *runtime.Scheme, onAdd func()) (func(), error) {
	var s *runtime.Scheme
	if newScheme != nil {
		s = newScheme()
	}
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{
		RESTConfig: srv.Config(), Scheme: s, Tuning: informers.Tuning{DisableWatchList: informers.Set(true), PageSize: informers.Set[int64](benchPageSize)},
	})
	inf := informers.InformerWith(f, informers.Options[T]{Resource: srv.Resource()})
	if err := inf.LastError(); err != nil {
		return nil, err
	}
	if _, err := inf.AddHandler(informers.HandlerFuncs[T]{OnAdd: func(T, bool) { onAdd() }}); err != nil {
		return nil, err
	}
	// Our informers log the progress of long syncs, and that they read
	// whole objects when the server refuses to send their metadata alone,
	// which go test would print between a benchmark's name and its figures.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(1)))
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
	for _, impl := range benchJSONImpls[*bf.Application]() {
		b.Run(fmt.Sprintf("objects=%d/managedFields=%v/fixture=json/impl=%s", count, managedFields, impl.name), func(b *testing.B) {
			if srv == nil {
				var err error
				if srv, err = bf.NewApplicationServer(count, benchPageSize, managedFields); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(srv.Bytes()))
			benchMeasureSync(b, count, func(onAdd func()) func() {
				stop, err := impl.start(srv, benchJSONScheme, onAdd)
				if err != nil {
					b.Fatal(err)
				}
				return stop
			})
		})
	}
}
