//go:build k8s_v0_37

// The clientgo-typed implementation of the benchmarks: client-go's informer
// through the typed wrappers that client-go v0.37 added
// (cache.NewTypedSharedIndexInformer, TypedResourceEventHandlerFuncs,
// DeletedObject, the typed indexer). The library requires k8s.io v0.36,
// which has none of them, so this file builds only with the k8s_v0_37 tag,
// which `make bench` and `make test-k8s-newest` set on a copy of the module
// that requires the newest k8s.io release; without it the benchmarks
// compare the other implementations, on the same fixtures.

package informers_test

import (
	"context"
	"io"
	"net/http"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchClientGoTypedImpl is client-go's SharedIndexInformer, as clientgo
// builds it, through client-go's typed wrappers: TypedSharedIndexInformer
// and TypedResourceEventHandlerFuncs.
var benchClientGoTypedImpl = benchImpl{"clientgo-typed", func(s benchSource, o benchCacheOptions) (benchCache, error) {
	c, err := benchNewClientGo(s, o)
	if err != nil {
		return nil, err
	}
	typed := cache.NewTypedSharedIndexInformer[*corev1.Pod](c.Informer)
	c.addTyped = func(h benchHandler) (cache.ResourceEventHandlerRegistration, error) {
		return typed.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*corev1.Pod]{
			AddFunc:    h.add,
			UpdateFunc: h.update,
			DeleteFunc: func(d cache.DeletedObject[*corev1.Pod]) { h.delete(d.OptionalObj) },
		})
	}
	return c, nil
}}

// init adds clientgo-typed to the benchmarks that compare client-go's ways
// of use: Update (pods and fixture=json), ReadWrite's readers and Query.
func init() {
	benchUpdateImpls = append(benchUpdateImpls, benchClientGoTypedImpl)
	benchJSONUpdates = append(benchJSONUpdates, benchJSONUpdate{"clientgo-typed", benchJSONUpdateClientGo})
	benchReaders = append(benchReaders, benchReader{"clientgo-typed", benchClientGoTypedImpl, func(c benchCache) func(string) int {
		lister := corelisters.NewPodLister(c.(*benchClientGo).Informer.GetIndexer())
		return func(ns string) int {
			pods, err := lister.Pods(ns).List(labels.Everything())
			if err != nil {
				panic(err)
			}
			return len(pods)
		}
	}})
	benchQueryCaches = append(benchQueryCaches, benchQueryCache{benchClientGoTypedImpl, map[string][]string{
		"clientgo-typed": {"get", "list-namespace", "index-node", "select-labels"},
	}, func(pods *bf.PodList, sel labels.Selector, c benchCache) []benchQuery {
		return benchClientGoTypedQueries(pods, sel, c.(*benchClientGo))
	}})
}

// benchClientGoTypedQueries are client-go users' ways of reading cg
// through the typed indexer and the generated listers.
func benchClientGoTypedQueries(pods *bf.PodList, sel labels.Selector, cg *benchClientGo) []benchQuery {
	typedIndexer := cache.NewTypedSharedIndexInformer[*corev1.Pod](cg.Informer).GetTypedIndexer()
	podLister := corelisters.NewPodLister(cg.Informer.GetIndexer())
	return []benchQuery{
		{"clientgo-typed", map[string]func(int) int{
			"get": func(i int) int {
				ns, name := pods.Key(i)
				return benchOne(podLister.Pods(ns).Get(name))
			},
			"list-namespace": func(i int) int {
				ns, _ := pods.Key(i)
				return benchLen(podLister.Pods(ns).List(labels.Everything()))
			},
			"index-node":    func(i int) int { return benchLen(typedIndexer.ByTypedIndex(benchNodeIndex, pods.Node(i))) },
			"select-labels": func(int) int { return benchLen(podLister.List(sel)) },
		}},
	}
}

// benchJSONUpdateClientGo is client-go's typed informer of a custom
// resource: a list decoded by the codecs of a scheme that registers it,
// a watch decoded as rest.Request.Watch decodes a JSON stream, and a
// typed handler through TypedSharedIndexInformer.
func benchJSONUpdateClientGo(list []byte, stream io.ReadCloser, onUpdate func()) (func(), error) {
	if err := benchCheckClientGoListWatch(); err != nil {
		return nil, err
	}
	negotiator := runtime.NewClientNegotiator(serializer.NewCodecFactory(benchJSONScheme()).WithoutConversion(), bf.ApplicationGV)
	listDecoder, err := negotiator.Decoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		return nil, err
	}
	objects, events, framer, err := negotiator.StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		return nil, err
	}
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			l := &bf.ApplicationList{}
			_, _, err := listDecoder.Decode(list, nil, l)
			return l, err
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewStreamWatcher(
				restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(stream), events), objects),
				apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"),
			), nil
		},
	}, &bf.Application{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	typed := cache.NewTypedSharedIndexInformer[*bf.Application](inf)
	if _, err := typed.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*bf.Application]{
		UpdateFunc: func(_, _ *bf.Application) { onUpdate() },
	}); err != nil {
		return nil, err
	}
	stopCh := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(stopCh) })
	return func() { close(stopCh); wg.Wait() }, nil
}
