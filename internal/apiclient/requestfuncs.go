package apiclient

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// RequestFuncs are the list and watch functions of the requests that
// request makes, of objects of kind kind in resource gvr, for callers that
// make their own requests (the adapters): decoded into objects that newT
// makes by protobuf, the library's protobuf decoder, for a response in
// protobuf, and by the JSON decoder that json returns (made the first
// time a response is in JSON; nil if none), for one in JSON; codecs decode
// the rest. A type the library decodes from JSON only (a custom resource)
// is asked for in JSON. With neither decoder, lists are decoded by the
// request's client and watches by the objects' generated code if they have
// it (built-in types), or by the client.
func RequestFuncs[T Object](request func(*metav1.ListOptions) *rest.Request, gvr schema.GroupVersionResource, kind string,
	protobuf *protodec.Decoder, json func() (*jsondec.Decoder, error), newT func() T, codecs serializer.CodecFactory) (*Funcs, error) {
	if json == nil {
		json = func() (*jsondec.Decoder, error) { return nil, nil }
	}
	d := &wireDecoders[T]{gvr: gvr, kind: kind, listKind: kind + "List", newT: newT, codecs: codecs, protobuf: protobuf, json: json}
	decoded, err := d.on()
	if err != nil {
		return nil, err
	}
	if !decoded {
		return clientFuncs(request, gvr, kind, newT), nil
	}
	req := request
	if protobuf == nil {
		req = func(opts *metav1.ListOptions) *rest.Request {
			return request(opts).SetHeader("Accept", "application/json")
		}
	}
	lw := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			return d.list(ctx, req(&opts))
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			r := req(&opts)
			return d.watch(ctx, r, func() (watch.Interface, error) { return r.Watch(ctx) })
		})
	lw.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		return d.stream(ctx, req(&opts), items, nil)
	}
	return lw, nil
}

// clientFuncs are the list and watch functions of the requests that
// request makes, decoded by the request's client, but for watches of
// objects with generated code (built-in types), decoded by that code
// straight from the stream.
func clientFuncs[T Object](request func(*metav1.ListOptions) *rest.Request, gvr schema.GroupVersionResource, kind string, newT func() T) *Funcs {
	_, generated := watchstream.NewFunc(newT())
	return newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			obj, err := request(&opts).Do(ctx).Get()
			if err != nil {
				return nil, err
			}
			return asList(obj, gvr)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			if generated {
				return watchstream.Watch(ctx, request(&opts), kind, newT)
			}
			return request(&opts).Watch(ctx)
		})
}

// UnstructuredFuncs is RequestFuncs for unstructured objects (T is
// *unstructured.Unstructured or an interface it implements) of kind kind
// in resource gvr, decoded in one pass by dec.
func UnstructuredFuncs[T Object](request func(*metav1.ListOptions) *rest.Request, dec *jsondec.Unstructured, gvr schema.GroupVersionResource, kind string) *Funcs {
	what := ResourceName(gvr)
	bodies := new(decoded.Bodies)
	lw := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			return listUnstructured(ctx, request(&opts), bodies, dec, what)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return watchstream.WatchJSON(ctx, request(&opts).SetHeader("Accept", "application/json"), kind, jsondec.UnstructuredEventDecoder[T](dec))
		})
	lw.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		return streamUnstructured(ctx, request(&opts), dec, gvr, kind, items)
	}
	return lw
}

// streamUnstructured sends req, a list request of gvr's objects of kind
// kind, asking for JSON, and hands each item to items as the response is
// read, decoded by dec.
func streamUnstructured(ctx context.Context, req *rest.Request, dec *jsondec.Unstructured, gvr schema.GroupVersionResource, kind string, items reflector.ListItems) (metav1.ListMeta, error) {
	body, err := req.SetHeader("Accept", "application/json").Stream(ctx)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	defer body.Close()
	meta, err := dec.StreamList(body, kind, gvr.GroupVersion().String(),
		func(obj *unstructured.Unstructured) { items.Put(obj) },
		func(u *decoded.Undecodable) { items.Undecodable(u) })
	if err != nil {
		return metav1.ListMeta{}, fmt.Errorf("list of %s: %w", ResourceName(gvr), err)
	}
	return meta, nil
}

// listUnstructured sends req, a list request, asking for JSON, reads the
// response with bodies and decodes it with dec; what names the resource
// in errors.
func listUnstructured(ctx context.Context, req *rest.Request, bodies *decoded.Bodies, dec *jsondec.Unstructured, what string) (List, error) {
	stream, err := req.SetHeader("Accept", "application/json").Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var l List
	err = bodies.Read(stream, func(body []byte) error {
		l, err = decodeUnstructuredList(dec, body, what)
		return err
	})
	return l, err
}

// decodeUnstructuredList decodes body, a list response, as the dynamic
// client does: a list, or a single object made a list of one.
func decodeUnstructuredList(dec *jsondec.Unstructured, body []byte, what string) (List, error) {
	obj, err := dec.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("decoding the list of %s: %w", what, err)
	}
	switch o := obj.(type) {
	case *unstructured.UnstructuredList:
		return o, nil
	case *unstructured.Unstructured:
		return o.ToList()
	}
	return nil, fmt.Errorf("decoding the list of %s: got a %T", what, obj)
}
