package apiclient

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/reflector"
)

// The library's decoder (internal/protodec) decodes the protobuf of
// built-in types and of metadata-only informers straight into the objects
// an informer caches, sharing as it decodes: a string or a part (labels,
// a container, a volume, an owner reference) equal to one decoded before
// at the same place is looked up from its bytes and shared, never made
// twice. Options.DisableDecoder turns it off; Options.SkipFields names
// fields it never decodes.

// For the types the server serves only as JSON (custom resources), and
// for built-in and metadata-only informers whenever the server answers in
// JSON, the library's JSON decoder (internal/jsondec) does the same from
// JSON: list bodies and watch events decoded straight into T in one pass.
// The response's Content-Type picks the decoder (see wire.go).

// Decoding is how an informer's objects are decoded: by the library's
// decoder unless Disabled, skipping the fields Skip names.
type Decoding struct {
	Disabled bool
	Skip     []string
	// Shared, if set, keeps the decoders that list-watches made with it
	// share when their client has no Decoders of its own: the
	// list-watches of one informer's namespaces decode with one decoder.
	Shared *Decoders
	// Schema is the check of a view against the type it projects, shared
	// by the list-watches of one informer; nil checks in SchemaDefault
	// mode, keeping what it finds to each list-watch.
	Schema *SchemaCheck
}

// NewDecoder returns the decoder of an informer of objects of type T, or
// nil if the decoder is off or does not know T.
func NewDecoder[T Object](o Decoding) (*protodec.Decoder, error) {
	t := reflect.TypeFor[T]()
	if o.Disabled || !protodec.Supports(t) {
		return nil, nil
	}
	return protodec.New(t, protodec.Options{Share: true, Skip: o.Skip})
}

// Decoders keeps one decoder per Go type, wire format and fields skipped
// for the clients that share it, such as the factories of one fleet:
// objects that several clusters hold alike (images, labels, owner kinds)
// then share their strings and parts across clusters too. It is safe for
// concurrent use; the zero value is ready.
//
// Invariant: every value of byType is a *protodec.Decoder (key.json
// false), or a *jsondec.Decoder (key.json true), or for
// *unstructured.Unstructured a *jsondec.Unstructured (key.json true), of
// the type and skipped fields its key names.
type Decoders struct {
	mu     sync.Mutex
	byType map[decoderKey]any
}

// decoderKey names a shared decoder.
type decoderKey struct {
	typ  reflect.Type
	json bool         // a JSON decoder, not a protobuf one
	skip string       // Decoding.Skip, sorted, joined by commas
	api  reflect.Type // a view's protobuf decoder: the API type it views
}

// decoderOf returns the protobuf decoder of an informer of a's objects of
// type T: the one a's Decoders share, if it has them, or a new one.
func decoderOf[T Object](a *Client, o Decoding) (*protodec.Decoder, error) {
	return sharedDecoder(a, o, decoderKey{typ: reflect.TypeFor[T]()}, NewDecoder[T])
}

// jsonDecoderOf is decoderOf for the JSON decoder.
func jsonDecoderOf[T Object](a *Client, o Decoding) (*jsondec.Decoder, error) {
	return sharedDecoder(a, o, decoderKey{typ: reflect.TypeFor[T](), json: true}, NewJSONDecoder[T])
}

// unstructuredDecoderOf is decoderOf for the decoder of unstructured
// objects, which shares keys and repeated values.
func unstructuredDecoderOf(a *Client, o Decoding) (*jsondec.Unstructured, error) {
	return sharedDecoder(a, o, decoderKey{typ: reflect.TypeFor[*unstructured.Unstructured](), json: true},
		func(Decoding) (*jsondec.Unstructured, error) { return jsondec.NewUnstructured(true), nil })
}

// sharedDecoder returns the decoder of a's Decoders under key and o's
// skipped fields, made by newDecoder the first time; with no Decoders, or
// with the decoder off, a new one.
func sharedDecoder[D interface {
	*protodec.Decoder | *jsondec.Decoder | *jsondec.Unstructured
}](a *Client, o Decoding, key decoderKey, newDecoder func(Decoding) (D, error)) (D, error) {
	ds := cmp.Or(a.decoders, o.Shared)
	if ds == nil || o.Disabled {
		return newDecoder(o)
	}
	key.skip = strings.Join(o.Skip, ",")
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if dec, ok := ds.byType[key].(D); ok {
		return dec, nil
	}
	dec, err := newDecoder(o)
	if err != nil || dec == nil {
		return dec, err
	}
	if ds.byType == nil {
		ds.byType = make(map[decoderKey]any)
	}
	ds.byType[key] = dec
	return dec, nil
}

// NewJSONDecoder returns the JSON decoder of an informer of objects of
// type T, or nil if the decoder is off or does not know T.
func NewJSONDecoder[T Object](o Decoding) (*jsondec.Decoder, error) {
	t := reflect.TypeFor[T]()
	if o.Disabled || !jsondec.Supports(t) {
		return nil, nil
	}
	return jsondec.New(t, jsondec.Options{Share: true, Skip: o.Skip})
}

// DecodeList decodes body, a list response, as a list request does; with
// no decoder, protobuf too goes to client-go's codecs.
func DecodeList[T Object](body []byte, dec *protodec.Decoder, listKind string, newT func() T) (List, error) {
	if dec != nil && protodec.IsProtobuf(body) {
		return protodec.DecodeList(dec, body, listKind, newT)
	}
	return decodeListWith(builtInCodecs(), body, listKind, newT)
}

// The media types client-go's metadata client asks for.
const (
	metadataListAccept  = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	metadataWatchAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)

// metadataMedia are the media types the metadata requests of an informer
// accept, of lists and of watches.
type metadataMedia struct {
	list, watch string
	// again says that a watch the server answers in a format the
	// decoders leave is watched again through the metadata client, whose
	// objects are *metav1.PartialObjectMetadata.
	again bool
}

// clientGoMetadata are the media types of client-go's metadata client.
var clientGoMetadata = metadataMedia{list: metadataListAccept, watch: metadataWatchAccept, again: true}

// metadataDecoded lists and watches gvr in namespace ns as metadata, the
// requests of client-go's metadata client sent through a.rest with the
// media types of media, and decodes them with decoders.
func metadataDecoded[T Object](a *Client, gvr schema.GroupVersionResource, ns string, decoders *wireDecoders[T], media metadataMedia) *Funcs {
	request := func(ctx context.Context, opts metav1.ListOptions, accept string) (*rest.Request, metav1.APIResource, error) {
		res, err := a.resource(ctx, gvr, "")
		if err != nil {
			return nil, res, err
		}
		req := a.rest.Get().AbsPath(pathOf(gvr.GroupVersion(), res, ns)...).
			SpecificallyVersionedParams(&opts, paramCodec, schema.GroupVersion{Version: "v1"}).
			SetHeader("Accept", accept)
		return req, res, nil
	}
	lw := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			req, _, err := request(ctx, opts, media.list)
			if err != nil {
				return nil, err
			}
			l, err := decoders.list(ctx, req)
			a.forgetOnNotFound(gvr.GroupVersion(), err)
			return l, err
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			req, res, err := request(ctx, opts, media.watch)
			if err != nil {
				return nil, err
			}
			var again func() (watch.Interface, error)
			if media.again && a.metadata != nil {
				again = func() (watch.Interface, error) {
					r := a.metadata.Resource(gvr.GroupVersion().WithResource(res.Name))
					if res.Namespaced && ns != "" {
						return r.Namespace(ns).Watch(ctx, opts)
					}
					return r.Watch(ctx, opts)
				}
			}
			w, err := decoders.watch(ctx, req, again)
			a.forgetOnNotFound(gvr.GroupVersion(), err)
			return w, err
		})
	lw.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		req, _, err := request(ctx, opts, media.list)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		meta, err := decoders.stream(ctx, req, items, nil)
		a.forgetOnNotFound(gvr.GroupVersion(), err)
		return meta, err
	}
	return lw
}

// Clearer zeroes the fields to skip in objects decoded by other means
// than the library's decoders.
type Clearer interface{ Clear(p unsafe.Pointer) }

// NewClearer returns the Clearer of the fields paths name in objects of
// type t: the protobuf decoder of built-in types, the JSON decoder of
// other structs (custom resources), each made to skip those fields.
func NewClearer(t reflect.Type, paths []string) (Clearer, error) {
	switch {
	case protodec.Supports(t):
		dec, err := protodec.New(t, protodec.Options{Skip: paths})
		if err != nil {
			return nil, err
		}
		return dec, nil
	case jsondec.Supports(t):
		dec, err := jsondec.New(t, jsondec.Options{Skip: paths})
		if err != nil {
			return nil, err
		}
		return dec, nil
	}
	return nil, fmt.Errorf("jsondec: %v does not decode by plan: its fields cannot be skipped", t)
}
