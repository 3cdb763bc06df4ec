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
	"github.com/kubetyped/informers/internal/watchstream"
)

// JSONFuncs are the list and watch functions of the requests that request
// makes, of objects of kind kind in resource gvr, asked for in JSON and
// decoded by dec into objects that newT makes (codecs decode a response in
// another format): a custom resource's typed informer, for callers that
// make their own requests (the controller-runtime cache).
func JSONFuncs[T Object](request func(*metav1.ListOptions) *rest.Request, gvr schema.GroupVersionResource, kind string,
	dec *jsondec.Decoder, newT func() T, codecs serializer.CodecFactory) *Funcs {
	d := &wireDecoders[T]{gvr: gvr, kind: kind, listKind: kind + "List", newT: newT, codecs: codecs,
		json: func() (*jsondec.Decoder, error) { return dec, nil }}
	lw := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			return d.list(ctx, request(&opts).SetHeader("Accept", "application/json"))
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return d.watch(ctx, request(&opts).SetHeader("Accept", "application/json"), nil)
		})
	lw.Decoded = true
	return lw
}

// UnstructuredFuncs is JSONFuncs for unstructured objects (T is
// *unstructured.Unstructured or an interface it implements), decoded in
// one pass by dec; what names the resource in errors.
func UnstructuredFuncs[T Object](request func(*metav1.ListOptions) *rest.Request, dec *jsondec.Unstructured, kind, what string) *Funcs {
	bodies := new(decoded.Bodies)
	lw := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			return listUnstructured(ctx, request(&opts), bodies, dec, what)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return watchstream.WatchJSON(ctx, request(&opts).SetHeader("Accept", "application/json"), kind, jsondec.UnstructuredEventDecoder[T](dec))
		})
	lw.Decoded = true
	return lw
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
