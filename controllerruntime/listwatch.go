package controllerruntime

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/adapter"
)

// shape is how a type's objects are represented in the cache.
type shape int

const (
	typed shape = iota
	unstructuredShape
	metadataShape
)

func shapeOf(obj runtime.Object) shape {
	switch obj.(type) {
	case runtime.Unstructured:
		return unstructuredShape
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return metadataShape
	}
	return typed
}

// listWatch lists and watches gvk, through the resource gvr, in namespace
// ns ("" for all), in the given shape: through a typed REST client (as
// protobuf for built-in types, as controller-runtime does), the dynamic
// client or the metadata client. It decodes with the decoder of shared.
func (c *Cache) listWatch(gvk schema.GroupVersionKind, gvr schema.GroupVersionResource, sh shape, ns string, shared *partDecoder) (*informers.ListWatch[client.Object, informers.List], error) {
	switch sh {
	case unstructuredShape:
		d, err := c.decoderFor(nil, sh, shared)
		if err != nil {
			return nil, err
		}
		if d.dec != nil {
			rc, err := apiutil.RESTClientForGVK(gvk, false, true, c.config, c.codecs, c.httpClient)
			if err != nil {
				return nil, err
			}
			return adapter.ListWatch[client.Object](c.requests(rc, gvr, ns), gvr, gvk.Kind, d.dec, nil, c.codecs)
		}
		cfg := rest.CopyConfig(c.config)
		cfg.NegotiatedSerializer = nil
		dc, err := dynamic.NewForConfigAndClient(cfg, c.httpClient)
		if err != nil {
			return nil, err
		}
		r := dc.Resource(gvr)
		var rc dynamic.ResourceInterface = r
		if ns != "" {
			rc = r.Namespace(ns)
		}
		return informers.NewListWatch[client.Object](
			func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) { return rc.List(ctx, opts) },
			rc.Watch), nil
	case metadataShape:
		lw, err := c.metadataListWatch(gvr, ns, shared)
		if err != nil {
			return nil, err
		}
		return withKind(lw, gvk), nil
	}
	rc, err := apiutil.RESTClientForGVK(gvk, false, false, c.config, c.codecs, c.httpClient)
	if err != nil {
		return nil, err
	}
	example, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if _, ok := example.(client.Object); !ok {
		return nil, fmt.Errorf("%v is a %T, not a client.Object", gvk, example)
	}
	t := reflect.TypeOf(example)
	d, err := c.decoderFor(t, sh, shared)
	if err != nil {
		return nil, err
	}
	newObject := func() client.Object { return reflect.New(t.Elem()).Interface().(client.Object) }
	return adapter.ListWatch(c.requests(rc, gvr, ns), gvr, gvk.Kind, d.dec, newObject, c.codecs)
}

// metadataListWatch lists and watches the metadata of gvr in namespace ns
// ("" for all): decoded by the library's decoder, or else through the
// metadata client.
func (c *Cache) metadataListWatch(gvr schema.GroupVersionResource, ns string, shared *partDecoder) (*informers.ListWatch[client.Object, informers.List], error) {
	d, err := c.decoderFor(reflect.TypeFor[*metav1.PartialObjectMetadata](), metadataShape, shared)
	if err != nil {
		return nil, err
	}
	if d.dec != nil {
		request, err := c.metadataRequests(gvr, ns)
		if err != nil {
			return nil, err
		}
		newObject := func() client.Object { return &metav1.PartialObjectMetadata{} }
		return adapter.ListWatch(request, gvr, "PartialObjectMetadata", d.dec, newObject, c.codecs)
	}
	cfg := rest.CopyConfig(c.config)
	cfg.NegotiatedSerializer = nil
	mc, err := metadata.NewForConfigAndClient(cfg, c.httpClient)
	if err != nil {
		return nil, err
	}
	r := mc.Resource(gvr)
	var rc metadata.ResourceInterface = r
	if ns != "" {
		rc = r.Namespace(ns)
	}
	return informers.NewListWatch[client.Object](
		func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) { return rc.List(ctx, opts) },
		rc.Watch), nil
}

// withKind sets gvk on the objects that lw lists and watches: metadata
// objects say PartialObjectMetadata, or nothing.
func withKind(lw *informers.ListWatch[client.Object, informers.List], gvk schema.GroupVersionKind) *informers.ListWatch[client.Object, informers.List] {
	list, watchFn := lw.ListFunc, lw.WatchFunc
	lw.ListFunc = func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) {
		l, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		return l, meta.EachListItem(l, func(o runtime.Object) error {
			o.GetObjectKind().SetGroupVersionKind(gvk)
			return nil
		})
	}
	if stream := lw.StreamFunc; stream != nil {
		lw.StreamFunc = func(ctx context.Context, opts metav1.ListOptions, items informers.ListItems[client.Object]) (metav1.ListMeta, error) {
			return stream(ctx, opts, kindSetter{items: items, gvk: gvk})
		}
	}
	lw.WatchFunc = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		w, err := watchFn(ctx, opts)
		if err != nil {
			return nil, err
		}
		return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			if m, ok := ev.Object.(*metav1.PartialObjectMetadata); ok {
				m.SetGroupVersionKind(gvk)
			}
			return ev, true
		}), nil
	}
	return lw
}

// kindSetter sets gvk on the objects of a streamed list.
type kindSetter struct {
	items informers.ListItems[client.Object]
	gvk   schema.GroupVersionKind
}

func (k kindSetter) Put(obj client.Object) {
	obj.GetObjectKind().SetGroupVersionKind(k.gvk)
	k.items.Put(obj)
}

func (k kindSetter) Undecodable(err *informers.UndecodableObjectError) { k.items.Undecodable(err) }

// requests returns the list and watch requests of gvr in namespace ns
// ("" for all) through rc. The options are encoded as meta.k8s.io/v1's,
// which every resource takes: the scheme need not know the resource's
// group (a custom resource cached unstructured or as a view).
func (c *Cache) requests(rc rest.Interface, gvr schema.GroupVersionResource, ns string) func(*metav1.ListOptions) *rest.Request {
	return func(opts *metav1.ListOptions) *rest.Request {
		req := rc.Get().Resource(gvr.Resource).SpecificallyVersionedParams(opts, metav1.ParameterCodec, metav1.SchemeGroupVersion)
		if ns != "" {
			req = req.Namespace(ns)
		}
		return req
	}
}
