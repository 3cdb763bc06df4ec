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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/watchlist"

	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
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
	// DisableWatchList says the functions cannot stream a watch-list.
	DisableWatchList bool
	// Decoded says the functions decode with the library's decoder,
	// which shares what it decodes: interning after it adds nothing.
	Decoded bool
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
		lw, err = typedListWatch[T](a, t, namespace, dec)
	}
	return lw, err
}

// typedListWatch serves built-in types as protobuf and others (custom
// resources) as JSON, each decoded by the library's decoder of its format
// unless dec turns it off.
func typedListWatch[T Object](a *Client, t Target, ns string, dec Decoding) (*Funcs, error) {
	if a.rest == nil {
		return nil, errors.New("the factory has no client to reach the server")
	}
	protobuf := scheme.Scheme.Recognizes(t.GVK)
	newT, decodesItself := watchstream.NewFunc(*new(T))
	var decoder *protodec.Decoder
	var jsonDecoder *jsondec.Decoder
	var err error
	if protobuf {
		decoder, err = decoderOf[T](a, dec)
	} else {
		jsonDecoder, err = jsonDecoderOf[T](a, dec)
	}
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
			l, err := listDecoded(ctx, req, decoder, t.GVK.Kind+"List", newT)
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return l, err
		}
		if jsonDecoder != nil {
			l, err := listJSON(ctx, req, jsonDecoder, t.GVK.Kind+"List", newT)
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return l, err
		}
		obj, err := req.Do(ctx).Get()
		if err != nil {
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return nil, err
		}
		l, ok := obj.(List)
		if !ok {
			return nil, fmt.Errorf("list of %s returned %T", ResourceName(t.GVR), obj)
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
			w, err = watchDecoded(ctx, req, decoder, t.GVK.Kind, newT)
		} else if jsonDecoder != nil {
			w, err = watchJSON(ctx, req, jsonDecoder, t.GVK.Kind, newT)
		} else if protobuf && decodesItself {
			w, err = watchstream.Watch(ctx, req, t.GVK.Kind, newT)
		} else {
			w, err = req.Watch(ctx)
		}
		a.forgetOnNotFound(t.GVR.GroupVersion(), err)
		return w, err
	}
	lw := newFuncs(list, watchFn)
	lw.Decoded = decoder != nil || jsonDecoder != nil
	return lw, nil
}

func dynamicListWatch[T Object](a *Client, gvr schema.GroupVersionResource, ns string, dec Decoding) (*Funcs, error) {
	if _, ok := any(*new(T)).(*unstructured.Unstructured); ok && a.dynamicOwn && a.rest != nil && !dec.Disabled {
		return unstructuredDecoded[T](a, gvr, ns), nil
	}
	if a.dynamic == nil {
		return nil, errors.New("a dynamic informer needs FactoryOptions.Dynamic or RESTConfig")
	}
	return resourceListWatch[T, *unstructured.UnstructuredList](a, gvr, ns, a.dynamic.Resource, a.dynamic), nil
}

func metadataListWatch[T Object](a *Client, gvr schema.GroupVersionResource, ns string, dec Decoding) (*Funcs, error) {
	if a.metadataOwn && a.rest != nil {
		decoder, err := decoderOf[T](a, dec)
		if err != nil || decoder != nil {
			return metadataDecoded[T](a, gvr, ns, decoder), err
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
			l, ok := obj.(List)
			if !ok {
				return nil, fmt.Errorf("list of %s returned %T, not a list", ResourceName(gvr), obj)
			}
			return l, nil
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return srv.Watch(ctx, gvr, ns, opts)
		})
}
