package informers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/watchlist"

	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/watchstream"
)

// apiAccess reaches the server, or client-go's fakes, for informers of any
// type: one generic path instead of a generated client per resource.
type apiAccess struct {
	server    Server         // serves every typed informer, or nil
	fake      fakeInvoker    // client-go's fake clientset, or nil
	rest      rest.Interface // typed requests, by absolute path
	discovery rest.Interface // resource names and scopes; nil with fakes
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	// metadataOwn says metadata was made from RESTConfig, not given:
	// metadata-only informers may then list and watch through rest.
	metadataOwn bool
	errs        error // why the clients above could not be made

	mu        sync.Mutex
	resources map[schema.GroupVersion]*metav1.APIResourceList
}

// fakeInvoker is implemented by client-go's fake clientsets.
type fakeInvoker interface {
	fakeClient
	InvokesWatch(clienttesting.Action) (watch.Interface, error)
}

// paramCodec encodes list options as query parameters for any resource.
var paramCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(s)
}()

func newAPIAccess(client kubernetes.Interface, o FactoryOptions, sch *runtime.Scheme) *apiAccess {
	a := &apiAccess{server: o.Server, dynamic: o.Dynamic, metadata: o.Metadata, resources: make(map[schema.GroupVersion]*metav1.APIResourceList)}
	if o.Server != nil {
		return a
	}
	if fake, ok := client.(fakeInvoker); ok && o.RESTConfig == nil {
		a.fake = fake
		return a
	}
	if o.RESTConfig == nil {
		if client != nil {
			// Every group's client decodes every built-in type.
			a.rest = client.CoreV1().RESTClient()
			a.discovery = client.Discovery().RESTClient()
		}
		return a
	}
	cfg := rest.CopyConfig(o.RESTConfig)
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(sch).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		a.errs = fmt.Errorf("RESTConfig: %w", err)
		return a
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		a.errs = fmt.Errorf("RESTConfig: %w", err)
		return a
	}
	a.rest, a.discovery = rc, rc
	a.dynamic, a.errs = orMake(a.dynamic, a.errs, func() (dynamic.Interface, error) {
		return dynamic.NewForConfigAndClient(cfg, httpClient)
	})
	a.metadataOwn = a.metadata == nil
	a.metadata, a.errs = orMake(a.metadata, a.errs, func() (metadata.Interface, error) {
		return metadata.NewForConfigAndClient(cfg, httpClient)
	})
	return a
}

func orMake[C comparable](have C, errs error, make func() (C, error)) (C, error) {
	var zero C
	if have != zero {
		return have, errs
	}
	c, err := make()
	return c, errors.Join(errs, err)
}

// listWatchFor builds the requests of an informer.
func listWatchFor[T Object](a *apiAccess, t target, namespace string, tweak func(*metav1.ListOptions), dec decodeOptions) (*ListWatch[T, List], error) {
	if a.errs != nil {
		return nil, a.errs
	}
	var lw *ListWatch[T, List]
	var err error
	switch {
	case a.server != nil:
		if t.shape != typedShape {
			return nil, errors.New("FactoryOptions.Server serves typed informers only")
		}
		lw = serverListWatch[T](a.server, t.gvr, namespace)
	case t.shape == dynamicShape:
		lw, err = dynamicListWatch[T](a, t.gvr, namespace)
	case t.shape == metadataShape:
		lw, err = metadataListWatch[T](a, t.gvr, namespace, dec)
	case a.fake != nil:
		lw = fakeListWatch[T](a, t, namespace)
	default:
		lw, err = typedListWatch[T](a, t, namespace, dec)
	}
	if err != nil {
		return nil, err
	}
	lw.Tweak = tweak
	return lw, nil
}

// typedListWatch serves built-in types as protobuf, decoded by the
// library's decoder unless dec turns it off, and others as JSON.
func typedListWatch[T Object](a *apiAccess, t target, ns string, dec decodeOptions) (*ListWatch[T, List], error) {
	if a.rest == nil {
		return nil, errors.New("the factory has no client to reach the server")
	}
	protobuf := scheme.Scheme.Recognizes(t.gvk)
	newT, decodesItself := watchstream.NewFunc(*new(T))
	var decoder *protodec.Decoder
	if protobuf {
		var err error
		if decoder, err = newDecoder[T](dec); err != nil {
			return nil, err
		}
	}
	request := func(ctx context.Context, opts metav1.ListOptions) (*rest.Request, error) {
		res, err := a.resource(ctx, t.gvr, t.gvk.Kind)
		if err != nil {
			return nil, err
		}
		req := a.rest.Get().AbsPath(pathOf(t.gvr.GroupVersion(), res, ns)...).
			SpecificallyVersionedParams(&opts, paramCodec, schema.GroupVersion{Version: "v1"})
		if protobuf {
			req = req.UseProtobufAsDefault()
		}
		return req, nil
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (List, error) {
		req, err := request(ctx, opts)
		if err != nil {
			return nil, err
		}
		if decoder != nil {
			l, err := listDecoded(ctx, req, decoder, t.gvk.Kind+"List", newT)
			a.forgetOnNotFound(t.gvr.GroupVersion(), err)
			return l, err
		}
		obj, err := req.Do(ctx).Get()
		if err != nil {
			a.forgetOnNotFound(t.gvr.GroupVersion(), err)
			return nil, err
		}
		l, ok := obj.(List)
		if !ok {
			return nil, fmt.Errorf("list of %s returned %T", resourceName(t.gvr), obj)
		}
		return l, nil
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		req, err := request(ctx, opts)
		if err != nil {
			return nil, err
		}
		var w watch.Interface
		if decoder != nil {
			w, err = watchDecoded(ctx, req, decoder, t.gvk.Kind, newT)
		} else if protobuf && decodesItself {
			w, err = watchstream.Watch(ctx, req, t.gvk.Kind, newT)
		} else {
			w, err = req.Watch(ctx)
		}
		a.forgetOnNotFound(t.gvr.GroupVersion(), err)
		return w, err
	}
	lw := NewListWatch[T](list, watchFn)
	lw.decoded = decoder != nil
	return lw, nil
}

func dynamicListWatch[T Object](a *apiAccess, gvr schema.GroupVersionResource, ns string) (*ListWatch[T, List], error) {
	if a.dynamic == nil {
		return nil, errors.New("a dynamic informer needs FactoryOptions.Dynamic or RESTConfig")
	}
	return resourceListWatch[T, *unstructured.UnstructuredList](a, gvr, ns, a.dynamic.Resource, a.dynamic), nil
}

func metadataListWatch[T Object](a *apiAccess, gvr schema.GroupVersionResource, ns string, dec decodeOptions) (*ListWatch[T, List], error) {
	if a.metadataOwn && a.rest != nil {
		decoder, err := newDecoder[T](dec)
		if err != nil || decoder != nil {
			return metadataDecoded[T](a, gvr, ns, decoder), err
		}
	}
	if a.metadata == nil {
		return nil, errors.New("a metadata-only informer needs FactoryOptions.Metadata or RESTConfig")
	}
	return resourceListWatch[T, *metav1.PartialObjectMetadataList](a, gvr, ns, a.metadata.Resource, a.metadata), nil
}

// resourceClient is a client of one resource, such as the dynamic or the
// metadata client's Resource(gvr): of all namespaces, or of one.
type resourceClient[L List, C Client[L]] interface {
	Client[L]
	Namespace(string) C
}

// resourceListWatch lists and watches gvr through resource, a dynamic or
// metadata client's Resource method; client turns watch-list off if it
// does not support it.
func resourceListWatch[T Object, L List, C Client[L], R resourceClient[L, C]](a *apiAccess, gvr schema.GroupVersionResource, ns string,
	resource func(schema.GroupVersionResource) R, client any) *ListWatch[T, List] {
	lw := scopedListWatch[T](a, gvr, ns, func(gvr schema.GroupVersionResource, namespaced bool) Client[L] {
		if namespaced {
			return resource(gvr).Namespace(ns)
		}
		return resource(gvr)
	})
	lw.DisableWatchList = watchlist.DoesClientNotSupportWatchListSemantics(client)
	return lw
}

// scopedListWatch lists and watches through the client that pick returns
// for the resource's discovered name, in namespace ns if it is namespaced.
func scopedListWatch[T Object, L List](a *apiAccess, gvr schema.GroupVersionResource, ns string,
	pick func(gvr schema.GroupVersionResource, namespaced bool) Client[L]) *ListWatch[T, List] {
	client := func(ctx context.Context) (Client[L], error) {
		res, err := a.resource(ctx, gvr, "")
		if err != nil {
			return nil, err
		}
		return pick(gvr.GroupVersion().WithResource(res.Name), res.Namespaced && ns != ""), nil
	}
	return NewListWatch[T](
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			c, err := client(ctx)
			if err != nil {
				return nil, err
			}
			return c.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			c, err := client(ctx)
			if err != nil {
				return nil, err
			}
			return c.Watch(ctx, opts)
		})
}

// fakeListWatch serves any type from client-go's fake clientset. The fake
// has no discovery, so scope is unknown: it lists all namespaces and keeps
// the objects of ns and the cluster-scoped ones, which have none.
func fakeListWatch[T Object](a *apiAccess, t target, ns string) *ListWatch[T, List] {
	keep := func(o metav1.Object, sel labels.Selector) bool {
		return (ns == "" || o.GetNamespace() == ns || o.GetNamespace() == "") && sel.Matches(labels.Set(o.GetLabels()))
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (List, error) {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		obj, err := a.fake.Invokes(clienttesting.NewListActionWithOptions(t.gvr, t.gvk, "", opts), nil)
		if err != nil {
			return nil, err
		}
		l, ok := obj.(List)
		if !ok {
			return nil, fmt.Errorf("fake list of %s returned %T", resourceName(t.gvr), obj)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		kept := items[:0]
		for _, it := range items {
			if m, ok := it.(metav1.Object); ok && keep(m, sel) {
				kept = append(kept, it)
			}
		}
		return l, meta.SetList(l, kept)
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		w, err := a.fake.InvokesWatch(clienttesting.NewWatchActionWithOptions(t.gvr, "", opts))
		if err != nil {
			return nil, err
		}
		return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			m, ok := ev.Object.(metav1.Object)
			return ev, !ok || keep(m, sel)
		}), nil
	}
	lw := NewListWatch[T](list, watchFn)
	lw.DisableWatchList = true
	return lw
}

// serverListWatch serves a resource from a Server.
func serverListWatch[T Object](srv Server, gvr schema.GroupVersionResource, ns string) *ListWatch[T, List] {
	return NewListWatch[T](
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			obj, err := srv.List(ctx, gvr, ns, opts)
			if err != nil {
				return nil, err
			}
			l, ok := obj.(List)
			if !ok {
				return nil, fmt.Errorf("list of %s returned %T, not a list", resourceName(gvr), obj)
			}
			return l, nil
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return srv.Watch(ctx, gvr, ns, opts)
		})
}

// pathOf returns the path segments of a resource's collection.
func pathOf(gv schema.GroupVersion, res metav1.APIResource, ns string) []string {
	p := groupVersionPath(gv)
	if res.Namespaced && ns != "" {
		p = append(p, "namespaces", ns)
	}
	return append(p, res.Name)
}

// groupVersionPath returns the path segments of a group version: /api/v1
// for the core group, /apis/group/version for the others.
func groupVersionPath(gv schema.GroupVersion) []string {
	if gv.Group == "" {
		return []string{"/api", gv.Version}
	}
	return []string{"/apis", gv.Group, gv.Version}
}

// resource looks a resource up in the server's discovery document of its
// group version, by kind if kind is set and by name otherwise: this gives
// its exact name and scope. Without discovery (fakes), the name stands and
// the resource counts as namespaced.
func (a *apiAccess) resource(ctx context.Context, gvr schema.GroupVersionResource, kind string) (metav1.APIResource, error) {
	if a.discovery == nil {
		return metav1.APIResource{Name: gvr.Resource, Namespaced: true}, nil
	}
	gv := gvr.GroupVersion()
	a.mu.Lock()
	list := a.resources[gv]
	a.mu.Unlock()
	if list == nil {
		res := a.discovery.Get().AbsPath(groupVersionPath(gv)...).SetHeader("Accept", "application/json").Do(ctx)
		raw, err := res.Raw()
		if err != nil {
			// Error decodes the server's Status, which Raw leaves out.
			return metav1.APIResource{}, fmt.Errorf("discovery of %s: %w", gv, res.Error())
		}
		list = &metav1.APIResourceList{}
		if err := json.Unmarshal(raw, list); err != nil {
			return metav1.APIResource{}, fmt.Errorf("discovery of %s: %w", gv, err)
		}
		a.mu.Lock()
		a.resources[gv] = list
		a.mu.Unlock()
	}
	for _, r := range list.APIResources {
		if (kind != "" && r.Kind == kind || kind == "" && r.Name == gvr.Resource) && !strings.Contains(r.Name, "/") {
			return r, nil
		}
	}
	a.forget(gv)
	return metav1.APIResource{}, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server does not serve %s", resourceName(gvr)),
	}}
}

// forgetOnNotFound drops the cached discovery of gv when the server says a
// resource is gone, so that the next request looks again.
func (a *apiAccess) forgetOnNotFound(gv schema.GroupVersion, err error) {
	if apierrors.IsNotFound(err) {
		a.forget(gv)
	}
}

func (a *apiAccess) forget(gv schema.GroupVersion) {
	a.mu.Lock()
	delete(a.resources, gv)
	a.mu.Unlock()
}
