package adapter

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// Decoder is the library's decoder of the objects of one Go type, or of
// unstructured objects. It is safe for concurrent use.
//
// Invariant: unstructured is set for unstructured objects; otherwise typ
// is set, with protobuf if the type decodes from protobuf, and json
// returns its JSON decoder (made the first time a response is in JSON).
// A decoder of views (NewViewDecoder) has view set, and a json that never
// returns nil.
type Decoder struct {
	typ          reflect.Type
	protobuf     *protodec.Decoder
	json         func() (*jsondec.Decoder, error)
	unstructured *jsondec.Unstructured
	view         bool
	// schema, if set, checks the views against the server's schema
	// (CheckedBy).
	schema *viewSchema
}

// NewDecoder returns the decoder of objects of type t, a pointer to a
// struct: a built-in type such as *corev1.Pod, *metav1.PartialObjectMetadata,
// or a custom resource's Go type. It never decodes the fields that skip
// names, by dotted JSON paths such as metadata.managedFields or
// spec.containers.env: they read as zero values. NewDecoder returns nil
// and no error if the library's decoders do not decode t.
func NewDecoder(t reflect.Type, skip []string) (*Decoder, error) {
	o := jsondec.Options{Share: true, Skip: skip}
	switch {
	case protodec.Supports(t):
		pd, err := protodec.New(t, o)
		if err != nil {
			return nil, fmt.Errorf("adapter: decoder of %v: %w", t, err)
		}
		return &Decoder{typ: t, protobuf: pd, json: sync.OnceValues(func() (*jsondec.Decoder, error) {
			if !jsondec.Supports(t) {
				return nil, nil
			}
			return jsondec.New(t, o)
		})}, nil
	case jsondec.Supports(t):
		jd, err := jsondec.New(t, o)
		if err != nil {
			return nil, fmt.Errorf("adapter: decoder of %v: %w", t, err)
		}
		return &Decoder{typ: t, json: func() (*jsondec.Decoder, error) { return jd, nil }}, nil
	}
	return nil, nil
}

// NewViewDecoder returns the decoder of views of type view of a resource
// whose Go type is api, such as *corev1.Pod: view is a pointer to a
// struct that declares the fields of api a controller reads under their
// JSON names, with its metadata (an informers.ViewMeta or a
// metav1.ObjectMeta) under "metadata", as the informers package's
// ViewMeta describes. If api decodes from protobuf (a built-in type), the
// view is checked against it, the first field api has not or of a kind
// api's cannot be decoded into being an error that names it, and views
// are decoded from protobuf by a plan of both types; from JSON, always,
// by the view's own plan. If api is a JSON-only Go type (a custom
// resource's), the view is checked against it alike, field names and JSON
// kinds, and decoded from JSON. With api nil (a type the adapter does not
// know), views are decoded from JSON only, unchecked: check them against
// the server's schema with CheckedBy. The fields the view lacks are skipped
// on the wire, never built; skip names more, by the view's JSON paths.
//
// ListWatch asks for views in protobuf (if api decodes from it) or JSON,
// and decodes every response with this decoder: a list in another format
// fails, rather than decoding into api. The bookmarks of a watch are
// decoded whole, whatever skip names: an informer reads the annotation
// that ends a watch-list's initial events on them.
func NewViewDecoder(view, api reflect.Type, skip []string) (*Decoder, error) {
	if view == nil || !apiclient.IsView(view) {
		return nil, fmt.Errorf("adapter: %v is not a view: a pointer to a struct with a metav1.Object (such as informers.ViewMeta) under \"metadata\"", view)
	}
	o := jsondec.Options{Share: true, Skip: skip}
	jd, err := jsondec.New(view, o)
	if err != nil {
		return nil, fmt.Errorf("adapter: decoder of view %v: %w", view, err)
	}
	dec := &Decoder{typ: view, json: func() (*jsondec.Decoder, error) { return jd, nil }, view: true}
	switch {
	case api != nil && protodec.Supports(api):
		if dec.protobuf, err = protodec.NewView(view, api, o); err != nil {
			return nil, fmt.Errorf("adapter: decoder of view %v of %v: %w", view, api, err)
		}
	case api != nil:
		if err := checkGo(view, api); err != nil {
			return nil, err
		}
	}
	return dec, nil
}

// NewUnstructuredDecoder returns the decoder of unstructured objects
// (*unstructured.Unstructured), which decodes JSON in one pass as
// client-go's unstructured.UnstructuredJSONScheme decodes it.
func NewUnstructuredDecoder() *Decoder {
	return &Decoder{unstructured: jsondec.NewUnstructured(true)}
}

// Requests returns the request of a list or, with opts.Watch set, of a
// watch of the objects of one resource, in one namespace or in all, with
// opts as its parameters; it is made through a client of the adapter's
// (a rest.Interface), which decodes what the library's decoders do not.
type Requests func(opts *metav1.ListOptions) *rest.Request

// ListWatch returns the list and watch functions of the objects of kind
// kind (such as Pod) of resource gvr that requests asks for, decoded by
// dec into objects that newT makes, of dec's type (for an unstructured
// decoder, newT is not called: T is *unstructured.Unstructured or an
// interface it implements). A response in a format dec does not decode
// is decoded by codecs (a list) or watched again through the request's
// client (a watch). With dec nil, lists are decoded by the request's
// client and watches by the objects' generated code, if they have it
// (built-in types).
//
// The lists it returns hold each item in its own allocation: keeping one
// keeps no other. Its StreamFunc, set where the library's decoders read
// the responses, hands each item over as the response is read instead,
// and the informers built on it list with it, holding no list whole.
//
// With a decoder of views (NewViewDecoder), kind is the kind of the
// resource the views are of (Pod for views of pods), newT makes views,
// and codecs are not used: requests ask for protobuf or JSON, which dec
// decodes.
func ListWatch[T informers.Object](requests Requests, gvr schema.GroupVersionResource, kind string, dec *Decoder, newT func() T,
	codecs serializer.CodecFactory) (*informers.ListWatch[T, informers.List], error) {
	var funcs *apiclient.Funcs
	if dec != nil && dec.view {
		return viewListWatch(requests, gvr, kind, dec, newT)
	}
	if dec != nil && dec.unstructured != nil {
		funcs = apiclient.UnstructuredFuncs[T](requests, dec.unstructured, gvr, kind)
	} else {
		var pd *protodec.Decoder
		var jd func() (*jsondec.Decoder, error)
		if dec != nil {
			if t := reflect.TypeOf(newT()); t != dec.typ {
				return nil, fmt.Errorf("adapter: list-watch of %s: objects of type %v for a decoder of %v", apiclient.ResourceName(gvr), t, dec.typ)
			}
			pd, jd = dec.protobuf, dec.json
		}
		var err error
		if funcs, err = apiclient.RequestFuncs(requests, gvr, kind, pd, jd, newT, codecs); err != nil {
			return nil, fmt.Errorf("adapter: list-watch of %s: %w", apiclient.ResourceName(gvr), err)
		}
	}
	return withStream(funcs, informers.NewListWatch[T](
		func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) {
			return funcs.List(ctx, opts)
		},
		funcs.Watch)), nil
}

// withStream returns lw with its StreamFunc set to funcs', if funcs
// stream their lists.
func withStream[T informers.Object](funcs *apiclient.Funcs, lw *informers.ListWatch[T, informers.List]) *informers.ListWatch[T, informers.List] {
	if funcs.Stream != nil {
		lw.StreamFunc = func(ctx context.Context, opts metav1.ListOptions, items informers.ListItems[T]) (metav1.ListMeta, error) {
			return funcs.Stream(ctx, opts, listItems[T]{items})
		}
	}
	return lw
}

// listItems are the items of a ListWatch's StreamFunc, as the library's
// decoders hand them out.
type listItems[T informers.Object] struct{ items informers.ListItems[T] }

func (l listItems[T]) Put(obj runtime.Object) {
	if t, ok := obj.(T); ok {
		l.items.Put(t)
		return
	}
	err := &informers.UndecodableObjectError{Err: fmt.Errorf("list item is %T, want %T", obj, *new(T))}
	if m, ok := obj.(metav1.Object); ok {
		err.Key = types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
		err.UID, err.ResourceVersion = m.GetUID(), m.GetResourceVersion()
	}
	l.items.Undecodable(err)
}

func (l listItems[T]) Undecodable(u reflector.Undecodable) {
	ns, name, uid, rv := u.Identity()
	l.items.Undecodable(&informers.UndecodableObjectError{Key: types.NamespacedName{Namespace: ns, Name: name}, UID: uid, ResourceVersion: rv, Err: u})
}

// noCodecs decode nothing: a list of views in a format the view's
// decoders do not decode fails, naming its kind, rather than decoding
// into the full type.
var noCodecs = serializer.NewCodecFactory(runtime.NewScheme())

// viewListWatch is ListWatch with dec, a decoder of views: requests ask
// for protobuf, if dec decodes it, or JSON; lists and watches are decoded
// by dec, whose JSON event decoder keeps a bookmark's annotations whatever
// it skips.
func viewListWatch[T informers.Object](requests Requests, gvr schema.GroupVersionResource, kind string, dec *Decoder, newT func() T) (*informers.ListWatch[T, informers.List], error) {
	what := apiclient.ResourceName(gvr)
	if t := reflect.TypeOf(newT()); t != dec.typ {
		return nil, fmt.Errorf("adapter: list-watch of %s: objects of type %v for a decoder of views %v", what, t, dec.typ)
	}
	accept := runtime.ContentTypeJSON
	if dec.protobuf != nil {
		accept = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	viewRequests := func(opts *metav1.ListOptions) *rest.Request {
		return requests(opts).SetHeader("Accept", accept)
	}
	funcs, err := apiclient.RequestFuncs(viewRequests, gvr, kind, dec.protobuf, dec.json, newT, noCodecs)
	if err != nil {
		return nil, fmt.Errorf("adapter: list-watch of %s: %w", what, err)
	}
	jd, _ := dec.json() // never nil, never failing: made by NewViewDecoder
	jsonEvent := jsondec.EventDecoder(jd, newT)
	var protobufEvent decoded.EventFunc[T]
	if dec.protobuf != nil {
		protobufEvent = protodec.EventDecoder(dec.protobuf, newT)
	}
	check := func(context.Context) error { return nil }
	if dec.schema != nil {
		check = func(ctx context.Context) error { return dec.schema.run(ctx, dec.typ) }
	}
	lw := withStream(funcs, informers.NewListWatch[T](
		func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			return funcs.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			decoders := watchstream.Decoders[T]{JSON: jsonEvent, Protobuf: protobufEvent}
			if s := dec.schema; s != nil {
				decoders.JSON = apiclient.Rechecked(ctx, jsonEvent, func(ctx context.Context) error {
					return s.check.Recheck(ctx, s.openAPI, dec.typ, s.gvk, s.gvr)
				})
			}
			opts.Watch = true
			body, err := viewRequests(&opts).Throttle(nil).Stream(ctx)
			if err != nil {
				return nil, err
			}
			// The stream's format is told by its first bytes.
			w, err := watchstream.FromResponse(ctx, body, "", kind, decoders)
			if err != nil {
				return nil, fmt.Errorf("adapter: watch of %s: %w", what, err)
			}
			return w, nil
		}))
	if stream := lw.StreamFunc; stream != nil && dec.schema != nil {
		lw.StreamFunc = func(ctx context.Context, opts metav1.ListOptions, items informers.ListItems[T]) (metav1.ListMeta, error) {
			if err := check(ctx); err != nil {
				return metav1.ListMeta{}, err
			}
			return stream(ctx, opts, items)
		}
	}
	return lw, nil
}

// Undecodable returns the items of l, a list that a ListWatch's list
// function returned, that did not decode into their Go type and that the
// list leaves out, each an error that names the object (its namespace,
// name, UID and resource version), the field where decoding failed and
// why; nil if there are none. A watch event whose object did not decode
// carries such an error as its Object, with the event's type.
//
// The informers that an adapter builds on these lists report such objects
// themselves, through Tuning.OnError; Undecodable is for adapters that
// look at the lists on their own.
func Undecodable(l runtime.Object) []error {
	// The lists the decoders return are decoded.List[T], of the adapter's
	// T, which this function does not know: their field is read by name.
	v := reflect.ValueOf(l)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("Undecodable")
	if !f.IsValid() {
		return nil
	}
	items, ok := f.Interface().([]*decoded.Undecodable)
	if !ok {
		return nil
	}
	var errs []error
	for _, u := range items {
		errs = append(errs, u)
	}
	return errs
}

// Clearer zeroes the fields to skip in objects of one Go type decoded by
// other means than a Decoder (client-go's codecs, for a response in a
// format the Decoder leaves to them), so that they read as the objects a
// Decoder skipping the same fields decodes.
type Clearer struct {
	typ reflect.Type
	c   apiclient.Clearer
}

// NewClearer returns the Clearer of the fields that skip names in objects
// of type t, as NewDecoder takes them. It fails if a path names no field
// of t, or a field an informer needs (its name, namespace, UID or
// resource version).
func NewClearer(t reflect.Type, skip []string) (*Clearer, error) {
	c, err := apiclient.NewClearer(t, skip)
	if err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	return &Clearer{typ: t, c: c}, nil
}

// Clear zeroes the fields to skip of obj, in place; objects of another
// type than the Clearer's are left alone.
func (c *Clearer) Clear(obj runtime.Object) {
	if reflect.TypeOf(obj) == c.typ {
		c.c.Clear(reflect.ValueOf(obj).UnsafePointer())
	}
}
