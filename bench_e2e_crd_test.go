package informers_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchCreateApplications installs the CRD of applications (once; the
// CRD is kept) and creates count applications (benchfixtures
// NewApplication, 4.6 KB of JSON each) in a new namespace ns.
func benchCreateApplications(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, ns string, count int) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := bf.CreateApplicationCRD(ctx, dyn); err != nil {
		return err
	}
	return bf.CreateApplications(ctx, cs, ns, count)
}

// benchE2EApplicationSyncs returns the ways BenchmarkEndToEnd syncs the
// applications of namespace ns, a custom resource that the server serves
// as JSON only:
//
//	impl=clientgo                    client-go's typed path for a custom
//	                                 resource: a SharedIndexInformer over a
//	                                 REST client with the codecs of a
//	                                 scheme that registers the type; list
//	                                 and watch
//	impl=clientgo-watchlist          the same with client-go's
//	                                 WatchListClient gate on
//	impl=clientgo-dynamic            client-go's dynamic informer
//	impl=clientgo-dynamic-watchlist  the same with WatchListClient on
//	impl=informers                   our factory as users get it, typed
//	                                 through FactoryOptions.Scheme:
//	                                 watch-list, the library's JSON decoder
//	impl=informers-unstructured      the same, *unstructured.Unstructured
//	impl=informers-list              impl=informers with DisableWatchList
//	impl=informers-unstructured-list the same, unstructured
//	impl=wire-floor                  no informer: our watch-list request,
//	                                 its JSON stream read and cut into
//	                                 lines, no object decoded
//	                                 (benchWireFloorJSON)
func benchE2EApplicationSyncs(cfg *rest.Config, ns string) []benchE2ESync {
	ours := func(inf func(*informers.Factory) error, opts informers.FactoryOptions) func(context.Context) (func(), error) {
		return func(ctx context.Context) (func(), error) {
			opts.RESTConfig, opts.Scheme, opts.Namespace = cfg, benchJSONScheme(), informers.Set(ns)
			f := informers.NewFactoryWith(nil, opts)
			if err := inf(f); err != nil {
				return nil, err
			}
			return benchRunFactory(ctx, f)
		}
	}
	typed := func(f *informers.Factory) error {
		return informers.InformerWith(f, informers.Options[*bf.Application]{Resource: bf.ApplicationResource}).LastError()
	}
	untyped := func(f *informers.Factory) error {
		return informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: bf.ApplicationResource}).LastError()
	}
	clientGo := func(ctx context.Context) (func(), error) {
		inf, err := benchClientGoApplications(cfg, ns)
		if err != nil {
			return nil, err
		}
		return benchRunClientGoInformer(ctx, inf)
	}
	clientGoDynamic := func(ctx context.Context) (func(), error) {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(dyn, bf.ApplicationResource, ns, 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
		return benchRunClientGoInformer(ctx, inf)
	}
	return []benchE2ESync{
		{"clientgo", false, clientGo},
		{"clientgo-watchlist", true, clientGo},
		{"clientgo-dynamic", false, clientGoDynamic},
		{"clientgo-dynamic-watchlist", true, clientGoDynamic},
		{"informers", true, ours(typed, informers.FactoryOptions{})},
		{"informers-unstructured", true, ours(untyped, informers.FactoryOptions{})},
		{"informers-list", false, ours(typed, informers.FactoryOptions{Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}})},
		{"informers-unstructured-list", false, ours(untyped, informers.FactoryOptions{Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}})},
		{"wire-floor", false, benchWireFloorJSON(cfg, ns)},
	}
}

// benchRunFactory starts f and waits until its informers have synced, and
// returns how to stop it and wait for it.
func benchRunFactory(ctx context.Context, f *informers.Factory) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	f.Start(ctx)
	stop := func() { cancel(); _ = f.Shutdown(context.Background()) }
	if err := informers.WaitForSync(ctx, f); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// benchClientGoApplications is client-go's typed informer of the
// applications of namespace ns, as benchJSONClientGo makes it.
func benchClientGoApplications(cfg *rest.Config, ns string) (cache.SharedIndexInformer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &bf.ApplicationGV
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, ""
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(benchJSONScheme()).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	res := bf.ApplicationResource.Resource
	return cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := &bf.ApplicationList{}
			return l, rc.Get().Namespace(ns).Resource(res).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(l)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Namespace(ns).Resource(res).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}, &bf.Application{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}), nil
}

// benchRunClientGoInformer runs inf until it has synced, and returns how
// to stop it and wait for it.
func benchRunClientGoInformer(ctx context.Context, inf cache.SharedIndexInformer) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	stop := func() { cancel(); <-done }
	if err := bf.PollUntil(ctx, inf.HasSynced); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// benchWireFloorJSON returns the wire floor of a watch-list sync of the
// applications of namespace ns: the same request as our informers make,
// its JSON stream read and cut into events, one line each, but no object
// decoded and nothing cached; the bookmark that ends the initial events
// is recognized by its bytes. What a sync takes beyond it is the client's
// work on the objects.
func benchWireFloorJSON(cfg *rest.Config, ns string) func(context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		opts := metav1.ListOptions{
			Watch:                true,
			SendInitialEvents:    ptr.To(true),
			AllowWatchBookmarks:  true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		}
		body, err := cs.CoreV1().RESTClient().Get().
			AbsPath("/apis", bf.ApplicationGV.Group, bf.ApplicationGV.Version, "namespaces", ns, bf.ApplicationResource.Resource).
			VersionedParams(&opts, scheme.ParameterCodec).SetHeader("Accept", runtime.ContentTypeJSON).Stream(ctx)
		if err != nil {
			return nil, err
		}
		defer body.Close()
		if err := benchReadInitialEvents(body); err != nil {
			return nil, fmt.Errorf("watch-list of applications: %w", err)
		}
		return func() {}, nil
	}
}

// benchInitialEventsEnd marks the bookmark that ends a watch-list's
// initial events, in JSON.
var benchInitialEventsEnd = []byte(`"` + metav1.InitialEventsAnnotationKey + `":"true"`)

// benchReadInitialEvents reads a JSON watch stream, one event a line, until
// the bookmark that ends its initial events.
func benchReadInitialEvents(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bookmark := []byte(`{"type":"BOOKMARK"`)
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return errors.New("the stream ended before its initial events did")
		case err != nil:
			return err
		}
		if bytes.HasPrefix(line, bookmark) && bytes.Contains(line, benchInitialEventsEnd) {
			return nil
		}
		if bytes.HasPrefix(line, []byte(`{"type":"ERROR"`)) {
			return fmt.Errorf("the server ended the stream: %.200s", line)
		}
		line = line[:0]
	}
}
