package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// The response's Content-Type decides how its body is decoded: protobuf
// by the library's protobuf decoder, JSON by its JSON decoder, for
// built-in types as for custom resources, whatever the request asked for
// (a client configured for JSON, a server that answers a protobuf request
// in JSON); CBOR, which the server sends only to clients that enable
// client-go's ClientsAllowCBOR, by client-go's codecs. A content type
// that is none of these is an error naming the resource and the type.
//
// client-go's Request.Stream does not return the response's headers, so
// the transport of the clients the library makes from a rest.Config
// records the Content-Type in a slot that the request's context carries.
// A clientset's transport is the user's: the body's first bytes tell its
// format then (watchstream.Sniff), which they do without ambiguity for
// the API server's three encodings.

// contentTypeKey is the context key of the slot (a *string) where a
// request's response Content-Type is recorded.
type contentTypeKey struct{}

// contentTypeRecorder records the Content-Type of the responses to the
// requests whose context carries a slot.
type contentTypeRecorder struct{ next http.RoundTripper }

func recordContentType(next http.RoundTripper) http.RoundTripper {
	return contentTypeRecorder{next: next}
}

func (r contentTypeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if slot, ok := req.Context().Value(contentTypeKey{}).(*string); ok && resp != nil {
		*slot = resp.Header.Get("Content-Type")
	}
	return resp, err
}

// WrappedRoundTripper returns the transport r wraps, as client-go's
// transport wrappers do.
func (r contentTypeRecorder) WrappedRoundTripper() http.RoundTripper { return r.next }

// stream sends req and returns the body of its response and the
// response's Content-Type, "" if the client's transport does not record
// it.
func stream(ctx context.Context, req *rest.Request) (io.ReadCloser, string, error) {
	slot := new(string)
	body, err := req.Stream(context.WithValue(ctx, contentTypeKey{}, slot))
	return body, *slot, err
}

// cborAllowed says whether the user enabled client-go's ClientsAllowCBOR
// feature: requests may then ask for CBOR as client-go's do.
func cborAllowed() bool {
	return clientfeatures.FeatureGates().Enabled(clientfeatures.ClientsAllowCBOR)
}

// customResourceAccept returns the media types that requests for custom
// resources accept: JSON, or, with ClientsAllowCBOR, CBOR preferred, as
// client-go's dynamic client asks.
func customResourceAccept() string {
	if cborAllowed() {
		return "application/json;q=0.9,application/cbor;q=1"
	}
	return "application/json"
}

// codecsFor returns the codecs that decode what the library's decoders
// leave to client-go, including CBOR, for the types of sch.
func codecsFor(sch *runtime.Scheme) serializer.CodecFactory {
	if sch == scheme.Scheme {
		return builtInCodecs()
	}
	return serializer.NewCodecFactory(sch, serializer.WithSerializer(cbor.NewSerializerInfo))
}

// builtInCodecs are codecsFor client-go's scheme, made once.
var builtInCodecs = sync.OnceValue(func() serializer.CodecFactory {
	return serializer.NewCodecFactory(scheme.Scheme, serializer.WithSerializer(cbor.NewSerializerInfo))
})

// wireDecoders decode the responses of an informer's requests, whatever
// their format, into objects of type T of the resource gvr.
type wireDecoders[T Object] struct {
	gvr      schema.GroupVersionResource
	kind     string // of the objects, such as Pod
	listKind string // such as PodList
	newT     func() T
	// protobuf is the library's protobuf decoder of T, or nil.
	protobuf *protodec.Decoder
	// json returns the library's JSON decoder of T, or nil; it is made
	// the first time a response is in JSON.
	json func() (*jsondec.Decoder, error)
	// codecs decode what the decoders above leave.
	codecs serializer.CodecFactory
	// bodies reads the pages of lists that the library does not decode.
	bodies decoded.Bodies
	// lastItems is the number of items of the last list decoded.
	lastItems atomic.Int64
}

// newWireDecoders returns the decoders of an informer of a's objects of
// type T, of kind kind in resource gvr, as o says.
func newWireDecoders[T Object](a *Client, gvr schema.GroupVersionResource, kind string, o Decoding) (*wireDecoders[T], error) {
	newT, _ := watchstream.NewFunc(*new(T))
	d := &wireDecoders[T]{gvr: gvr, kind: kind, listKind: kind + "List", newT: newT, codecs: a.codecs}
	if protodec.Supports(reflect.TypeFor[T]()) {
		var err error
		if d.protobuf, err = decoderOf[T](a, o); err != nil {
			return nil, err
		}
	}
	d.json = sync.OnceValues(func() (*jsondec.Decoder, error) { return jsonDecoderOf[T](a, o) })
	return d, nil
}

// on says whether the library decodes: its decoder is not turned off.
func (d *wireDecoders[T]) on() (bool, error) {
	if d.protobuf != nil {
		return true, nil
	}
	jd, err := d.json()
	return jd != nil, err
}

// list sends req, a list request, and decodes the response into a list
// that holds its items: as its bytes arrive, never read whole, where the
// library's decoders decode its format.
func (d *wireDecoders[T]) list(ctx context.Context, req *rest.Request) (List, error) {
	l := &decoded.List[T]{Items: make([]T, 0, d.lastItems.Load())}
	var whole List
	meta, err := d.stream(ctx, req, listCollector[T]{l}, func(w List) { whole = w })
	if err != nil {
		return nil, err
	}
	if whole != nil {
		return whole, nil
	}
	l.ListMeta = meta
	d.lastItems.Store(int64(len(l.Items)))
	return l, nil
}

// listReaders holds the buffered readers of list bodies, so that the pages
// of a sync reuse one.
var listReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// stream sends req, a list request, and hands each item of the response
// to items as its bytes arrive, where the library's decoders decode its
// format; it returns the list's metadata. A response in a format they do
// not decode is read whole and decoded by client-go's codecs, then handed
// to whole if it is set, else item by item to items.
func (d *wireDecoders[T]) stream(ctx context.Context, req *rest.Request, items reflector.ListItems, whole func(List)) (metav1.ListMeta, error) {
	body, contentType, err := stream(ctx, req)
	if err != nil {
		return metav1.ListMeta{}, err
	}
	defer body.Close()
	format, err := watchstream.FormatOf(contentType)
	if err != nil {
		return metav1.ListMeta{}, fmt.Errorf("list of %s: %w", ResourceName(d.gvr), err)
	}
	r := listReaders.Get().(*bufio.Reader)
	r.Reset(body)
	defer func() {
		r.Reset(nil)
		listReaders.Put(r)
	}()
	if format == watchstream.Sniffed {
		head, _ := r.Peek(8)
		format = watchstream.Sniff(head)
	}
	put := func(obj T) { items.Put(obj) }
	bad := func(u *decoded.Undecodable) { items.Undecodable(u) }
	switch format {
	case watchstream.Protobuf:
		if d.protobuf != nil {
			return protodec.StreamList(d.protobuf, r, d.listKind, d.newT, put, bad)
		}
	case watchstream.JSON:
		jd, err := d.json()
		if err != nil {
			return metav1.ListMeta{}, err
		}
		if jd != nil {
			meta, err := jsondec.StreamList(jd, r, d.listKind, d.newT, put, bad)
			if err != nil {
				err = fmt.Errorf("list of %s: %w", ResourceName(d.gvr), err)
			}
			return meta, err
		}
	}
	var l List
	err = d.bodies.Read(r, func(b []byte) error {
		l, err = d.decodeList(b, contentType)
		return err
	})
	if err != nil {
		return metav1.ListMeta{}, err
	}
	if whole != nil {
		whole(l)
		return metav1.ListMeta{}, nil
	}
	return putEach[T](l, items)
}

// listCollector keeps the items of a list in a decoded.List.
type listCollector[T Object] struct{ l *decoded.List[T] }

func (c listCollector[T]) Put(obj runtime.Object) { c.l.Items = append(c.l.Items, obj.(T)) }
func (c listCollector[T]) Undecodable(u reflector.Undecodable) {
	c.l.Undecodable = append(c.l.Undecodable, u.(*decoded.Undecodable))
}

// putEach hands the items of l, a list read whole, to items, each
// allocated on its own: an item of a list of structs, which points into
// the list's item array, is copied out of it (a shallow copy), so that
// keeping it does not keep the array. It returns l's metadata.
func putEach[T Object](l List, items reflector.ListItems) (metav1.ListMeta, error) {
	if bad, ok := l.(reflector.UndecodableItems); ok {
		for _, u := range bad.UndecodableItems() {
			items.Undecodable(u)
		}
	}
	_, owned := l.(reflector.OwnedItems[T])
	err := meta.EachListItem(l, func(obj runtime.Object) error {
		if !owned {
			obj = shallowCopy(obj)
		}
		items.Put(obj)
		return nil
	})
	if err != nil {
		return metav1.ListMeta{}, err
	}
	return metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue(), RemainingItemCount: l.GetRemainingItemCount()}, nil
}

// decodeList decodes body, a list response whose Content-Type is
// contentType.
func (d *wireDecoders[T]) decodeList(body []byte, contentType string) (List, error) {
	format, err := watchstream.FormatOf(contentType)
	if err != nil {
		return nil, fmt.Errorf("list of %s: %w", ResourceName(d.gvr), err)
	}
	if format == watchstream.Sniffed {
		format = watchstream.Sniff(body)
	}
	switch format {
	case watchstream.Protobuf:
		if d.protobuf != nil {
			return protodec.DecodeList(d.protobuf, body, d.listKind, d.newT)
		}
	case watchstream.JSON:
		jd, err := d.json()
		if err != nil {
			return nil, err
		}
		if jd != nil {
			l, err := jsondec.DecodeList(jd, body, d.listKind, d.newT)
			if err != nil {
				return nil, fmt.Errorf("list of %s: %w", ResourceName(d.gvr), err)
			}
			return l, nil
		}
	}
	l, err := decodeListWith(d.codecs, body, d.listKind, d.newT)
	if err != nil {
		return nil, fmt.Errorf("list of %s in %s: %w", ResourceName(d.gvr), format, err)
	}
	return l, nil
}

// watch sends req, a watch request, and decodes its stream; again sends it
// again through client-go, for a stream in a format the library's
// decoders leave to it.
func (d *wireDecoders[T]) watch(ctx context.Context, req *rest.Request, again func() (watch.Interface, error)) (watch.Interface, error) {
	decoders := watchstream.Decoders[T]{Again: again}
	if d.protobuf != nil {
		decoders.Protobuf = protodec.EventDecoder(d.protobuf, d.newT)
		decoders.JSON = d.jsonEvent // the JSON decoder made only if needed
	} else {
		jd, err := d.json()
		if err != nil {
			return nil, err
		}
		if jd != nil {
			decoders.JSON = jsondec.EventDecoder(jd, d.newT)
		}
	}
	body, contentType, err := stream(ctx, req.Throttle(nil))
	if err != nil {
		return nil, err
	}
	w, err := watchstream.FromResponse(ctx, body, contentType, d.kind, decoders)
	if err != nil {
		return nil, fmt.Errorf("watch of %s: %w", ResourceName(d.gvr), err)
	}
	return w, nil
}

// jsonEvent decodes the object of a JSON watch event with the JSON
// decoder, made the first time.
func (d *wireDecoders[T]) jsonEvent(data []byte, bookmark bool) (T, error) {
	jd, err := d.json()
	if err == nil && jd == nil {
		err = fmt.Errorf("the library's JSON decoder does not decode %T", d.newT())
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return jsondec.EventDecoder(jd, d.newT)(data, bookmark)
}

// decodeListWith decodes body, a list response in any of the API server's
// formats, with codecs; metadata in JSON with encoding/json, as client-go's
// metadata client does.
func decodeListWith[T Object](codecs serializer.CodecFactory, body []byte, listKind string, newT func() T) (List, error) {
	if _, ok := any(newT()).(*metav1.PartialObjectMetadata); ok && watchstream.Sniff(body) == watchstream.JSON {
		l := &metav1.PartialObjectMetadataList{}
		if err := json.Unmarshal(body, l); err != nil {
			return nil, fmt.Errorf("decoding the %s: %w", listKind, err)
		}
		l.TypeMeta = metav1.TypeMeta{}
		return l, nil
	}
	obj, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", listKind, err)
	}
	l, ok := obj.(List)
	if !ok {
		return nil, fmt.Errorf("decoding the %s: got %T", listKind, obj)
	}
	return l, nil
}

// shallowCopy returns a copy of obj, a pointer to a struct, that shares
// what obj's fields point to.
func shallowCopy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(runtime.Object)
}
