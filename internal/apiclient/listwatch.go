package apiclient

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/watchlist"

	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// Object and List are the reflector's constraints on object and list
// types.
type (
	Object = reflector.Object
	List   = reflector.List
)

// Funcs are the requests of an informer: its list and watch functions,
// in the reflector's types, and what the informer must know of them.
type Funcs struct {
	List  func(context.Context, metav1.ListOptions) (List, error)
	Watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	// Stream, if set, lists as List does, but hands each item to items
	// as the response is read (see reflector.Config.ListStream): the
	// functions of the library's decoders have it.
	Stream func(context.Context, metav1.ListOptions, reflector.ListItems) (metav1.ListMeta, error)
	// DisableWatchList says the functions cannot stream a watch-list.
	DisableWatchList bool
}

func newFuncs(list func(context.Context, metav1.ListOptions) (List, error), watch func(context.Context, metav1.ListOptions) (watch.Interface, error)) *Funcs {
	return &Funcs{List: list, Watch: watch}
}

// ListWatch builds the list and watch functions of an informer of objects
// of type T, resolved to t, in namespace ("" for all), decoded as dec says.
func ListWatch[T Object](a *Client, t Target, namespace string, dec Decoding) (*Funcs, error) {
	if a.errs != nil {
		return nil, a.errs
	}
	if t.Shape == View {
		return viewListWatch[T](a, t, namespace, dec)
	}
	var lw *Funcs
	var err error
	switch {
	case a.server != nil:
		if t.Shape != Typed {
			return nil, errors.New("FactoryOptions.Server serves typed informers only")
		}
		lw = serverListWatch[T](a.server, t.GVR, namespace)
	case t.Shape == Dynamic:
		lw, err = dynamicListWatch[T](a, t.GVR, namespace, dec)
	case t.Shape == Metadata:
		lw, err = metadataListWatch[T](a, t.GVR, namespace, dec)
	case a.fake != nil:
		lw = fakeListWatch[T](a, t, namespace)
	default:
		if lw, err = typedListWatch[T](a, t, namespace, dec); err == nil {
			lw, err = metadataProjected[T](a, t, namespace, dec, lw)
		}
	}
	return lw, err
}

// typedListWatch asks for built-in types in protobuf and for others
// (custom resources) in JSON, and decodes each response by its format with
// the library's decoders unless dec turns them off.
func typedListWatch[T Object](a *Client, t Target, ns string, dec Decoding) (*Funcs, error) {
	if a.rest == nil {
		return nil, errors.New("the factory has no client to reach the server")
	}
	builtIn := scheme.Scheme.Recognizes(t.GVK)
	newT, decodesItself := watchstream.NewFunc(*new(T))
	decoders, err := newWireDecoders[T](a, t.GVR, t.GVK.Kind, dec)
	if err != nil {
		return nil, err
	}
	decoded, err := decoders.on()
	if err != nil {
		return nil, err
	}
	request := func(ctx context.Context, opts metav1.ListOptions) (*rest.Request, error) {
		res, err := a.resource(ctx, t.GVR, t.GVK.Kind)
		if err != nil {
			return nil, err
		}
		req := a.rest.Get().AbsPath(pathOf(t.GVR.GroupVersion(), res, ns)...).
			SpecificallyVersionedParams(&opts, paramCodec, schema.GroupVersion{Version: "v1"})
		if builtIn {
			req = req.UseProtobufAsDefault()
		} else {
			req = req.SetHeader("Accept", customResourceAccept())
		}
		return req, nil
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (List, error) {
		req, err := request(ctx, opts)
		if err != nil {
			return nil, err
		}
		if decoded {
			l, err := decoders.list(ctx, req)
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return l, err
		}
		obj, err := req.Do(ctx).Get()
		if err != nil {
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return nil, err
		}
		return asList(obj, t.GVR)
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		req, err := request(ctx, opts)
		if err != nil {
			return nil, err
		}
		var w watch.Interface
		switch {
		case decoded:
			w, err = decoders.watch(ctx, req, func() (watch.Interface, error) { return req.Watch(ctx) })
		case builtIn && decodesItself:
			w, err = watchstream.Watch(ctx, req, t.GVK.Kind, newT)
		default:
			w, err = req.Watch(ctx)
		}
		a.forgetOnNotFound(t.GVR.GroupVersion(), err)
		return w, err
	}
	lw := newFuncs(list, watchFn)
	if decoded {
		lw.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
			req, err := request(ctx, opts)
			if err != nil {
				return metav1.ListMeta{}, err
			}
			meta, err := decoders.stream(ctx, req, items, nil)
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return meta, err
		}
	}
	return lw, nil
}

// dynamicListWatch decodes unstructured objects with the library's JSON
// decoder; with client-go's ClientsAllowCBOR on, through client-go's
// dynamic client, which asks for CBOR and decodes it.
func dynamicListWatch[T Object](a *Client, gvr schema.GroupVersionResource, ns string, dec Decoding) (*Funcs, error) {
	if _, ok := any(*new(T)).(*unstructured.Unstructured); ok && a.dynamicOwn && a.rest != nil && !dec.Disabled && !cborAllowed() {
		decoder, err := unstructuredDecoderOf(a, dec)
		if err != nil {
			return nil, err
		}
		return unstructuredDecoded[T](a, gvr, ns, decoder), nil
	}
	if a.dynamic == nil {
		return nil, errors.New("a dynamic informer needs FactoryOptions.Dynamic or RESTConfig")
	}
	return resourceListWatch[T, *unstructured.UnstructuredList](a, gvr, ns, a.dynamic.Resource, a.dynamic), nil
}

func metadataListWatch[T Object](a *Client, gvr schema.GroupVersionResource, ns string, dec Decoding) (*Funcs, error) {
	if a.metadataOwn && a.rest != nil {
		decoders, err := newWireDecoders[T](a, gvr, "PartialObjectMetadata", dec)
		if err != nil {
			return nil, err
		}
		if decoded, err := decoders.on(); err != nil || decoded {
			return metadataDecoded(a, gvr, ns, decoders, clientGoMetadata), err
		}
	}
	if a.metadata == nil {
		return nil, errors.New("a metadata-only informer needs FactoryOptions.Metadata or RESTConfig")
	}
	return resourceListWatch[T, *metav1.PartialObjectMetadataList](a, gvr, ns, a.metadata.Resource, a.metadata), nil
}

// listWatcher is what a typed, dynamic or metadata client of one resource
// offers.
type listWatcher[L List] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// resourceClient is a client of one resource, such as the dynamic or the
// metadata client's Resource(gvr): of all namespaces, or of one.
type resourceClient[L List, C listWatcher[L]] interface {
	listWatcher[L]
	Namespace(string) C
}

// resourceListWatch lists and watches gvr through resource, a dynamic or
// metadata client's Resource method; client turns watch-list off if it
// does not support it.
func resourceListWatch[T Object, L List, C listWatcher[L], R resourceClient[L, C]](a *Client, gvr schema.GroupVersionResource, ns string,
	resource func(schema.GroupVersionResource) R, client any) *Funcs {
	lw := scopedListWatch[T](a, gvr, ns, func(gvr schema.GroupVersionResource, namespaced bool) listWatcher[L] {
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
func scopedListWatch[T Object, L List](a *Client, gvr schema.GroupVersionResource, ns string,
	pick func(gvr schema.GroupVersionResource, namespaced bool) listWatcher[L]) *Funcs {
	client := func(ctx context.Context) (listWatcher[L], error) {
		res, err := a.resource(ctx, gvr, "")
		if err != nil {
			return nil, err
		}
		return pick(gvr.GroupVersion().WithResource(res.Name), res.Namespaced && ns != ""), nil
	}
	return newFuncs(
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
func fakeListWatch[T Object](a *Client, t Target, ns string) *Funcs {
	keep := func(o metav1.Object, sel labels.Selector) bool {
		return (ns == "" || o.GetNamespace() == ns || o.GetNamespace() == "") && sel.Matches(labels.Set(o.GetLabels()))
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (List, error) {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		obj, err := a.fake.Invokes(clienttesting.NewListActionWithOptions(t.GVR, t.GVK, "", opts), nil)
		if err != nil {
			return nil, err
		}
		l, ok := obj.(List)
		if !ok {
			return nil, fmt.Errorf("fake list of %s returned %T", ResourceName(t.GVR), obj)
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
		w, err := a.fake.InvokesWatch(clienttesting.NewWatchActionWithOptions(t.GVR, "", opts))
		if err != nil {
			return nil, err
		}
		return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			m, ok := ev.Object.(metav1.Object)
			return ev, !ok || keep(m, sel)
		}), nil
	}
	lw := newFuncs(list, watchFn)
	lw.DisableWatchList = true
	return lw
}

// serverListWatch serves a resource from a Server.
func serverListWatch[T Object](srv Server, gvr schema.GroupVersionResource, ns string) *Funcs {
	return newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			obj, err := srv.List(ctx, gvr, ns, opts)
			if err != nil {
				return nil, err
			}
			return asList(obj, gvr)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return srv.Watch(ctx, gvr, ns, opts)
		})
}

// asList returns obj, what a list of gvr returned, as a List.
func asList(obj runtime.Object, gvr schema.GroupVersionResource) (List, error) {
	l, ok := obj.(List)
	if !ok {
		return nil, fmt.Errorf("list of %s returned %T, not a list", ResourceName(gvr), obj)
	}
	return l, nil
}
