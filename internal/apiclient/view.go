package apiclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// A view is a struct of some of the fields of a resource's type, under
// the same JSON names, with metadata (see the library's ViewMeta). Its
// objects are decoded straight into it by the library's decoders: from
// protobuf by a view plan of the built-in type of the resource's kind
// (protodec.NewView), from JSON by the view's own plan, which skips the
// fields it does not name. Views are asked for in protobuf when the
// scheme knows the resource as a built-in type and in JSON otherwise,
// never in CBOR, which no decoder of the library decodes.
//
// Over a Server or client-go's fake clientset, which hand out objects of
// the full type, each object is encoded to JSON and decoded into the view
// as from a server.

var objectMetaInterface = reflect.TypeFor[metav1.Object]()

// IsView reports whether t can be a view: a pointer to a struct whose
// field named "metadata" in JSON (its own, or one of a struct it embeds)
// implements metav1.Object through a pointer, as a ViewMeta or a
// metav1.ObjectMeta does.
func IsView(t reflect.Type) bool {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	m, ok := metadataField(t.Elem())
	return ok && reflect.PointerTo(m.Type).Implements(objectMetaInterface)
}

// metadataField returns the field of struct t named "metadata" in JSON.
func metadataField(t reflect.Type) (reflect.StructField, bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "metadata" {
			return sf, true
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			if m, ok := metadataField(sf.Type); ok {
				return m, true
			}
		}
	}
	return reflect.StructField{}, false
}

// resolveView resolves T, a view, to resource: to the resource's kind
// and Go type if sch knows them, against which a view of a protobuf type
// is checked; to the resource alone otherwise, whose kind discovery tells
// when it is first listed.
func resolveView[T Object](sch *runtime.Scheme, resource schema.GroupVersionResource) (Target, error) {
	typ := reflect.TypeFor[T]()
	if resource.Empty() {
		return Target{}, fmt.Errorf("%v is not registered in the scheme: register it (FactoryOptions.Scheme), or, for a view, set Options.Resource", typ)
	}
	t := Target{Shape: View, GVK: resource.GroupVersion().WithKind(""), GVR: resource}
	if gvk, api, ok := kindOfResource(sch, resource); ok {
		t.GVK, t.API = gvk, api
		if protodec.Supports(api) {
			if err := protodec.CheckView(typ, api); err != nil {
				return Target{}, fmt.Errorf("%s: %w", ResourceName(resource), err)
			}
		}
	}
	return t, nil
}

// kindOfResource returns the kind of resource in sch and a pointer to its
// Go type, if sch knows one: the first kind, by name, of the resource's
// group version whose resource is resource.
func kindOfResource(sch *runtime.Scheme, resource schema.GroupVersionResource) (schema.GroupVersionKind, reflect.Type, bool) {
	var kinds []string
	for kind := range sch.KnownTypes(resource.GroupVersion()) {
		if ResourceFor(resource.GroupVersion().WithKind(kind)) == resource {
			kinds = append(kinds, kind)
		}
	}
	if len(kinds) == 0 {
		return schema.GroupVersionKind{}, nil, false
	}
	gvk := resource.GroupVersion().WithKind(slices.Min(kinds))
	return gvk, reflect.PointerTo(sch.KnownTypes(resource.GroupVersion())[gvk.Kind]), true
}

// viewListWatch builds the list and watch functions of an informer of
// views of type T, resolved to t.
func viewListWatch[T Object](a *Client, t Target, ns string, dec Decoding) (*Funcs, error) {
	if dec.Disabled {
		return nil, errors.New("views are decoded by the library's decoders only: DisableDecoder cannot be set")
	}
	if dec.Schema == nil {
		dec.Schema = NewSchemaCheck(SchemaDefault)
	}
	if t.API != nil {
		if protodec.Supports(t.API) {
			dec.Schema.set("checked against the scheme's "+t.API.String(), nil) // by resolveView
		} else if err := dec.Schema.checkGo(reflect.TypeFor[T](), t.API, t.GVR); err != nil {
			return nil, err
		}
	}
	jd, err := jsonDecoderOf[T](a, dec)
	if err != nil {
		return nil, err
	}
	if jd == nil {
		return nil, fmt.Errorf("%v does not decode from JSON", reflect.TypeFor[T]())
	}
	var lw *Funcs
	switch {
	case a.server != nil:
		lw = serverListWatch[T](a.server, t.GVR, ns)
	case a.fake != nil:
		if t.API == nil {
			return nil, fmt.Errorf("client-go's fake clientset serves no custom resource such as %s", ResourceName(t.GVR))
		}
		lw = fakeListWatch[T](a, t, ns)
	case a.rest == nil:
		return nil, errors.New("the factory has no client to reach the server")
	default:
		whole, err := viewDecoded[T](a, t, ns, dec, jd)
		if err != nil {
			return nil, err
		}
		return metadataProjected[T](a, t, ns, dec, whole)
	}
	bookmarks, err := jsondec.New(reflect.TypeFor[T](), jsondec.Options{})
	if err != nil {
		return nil, err
	}
	return projectedListWatch[T](lw, jd, bookmarks, t.GVR), nil
}

// viewDecoded lists and watches views of t's resource in namespace ns, in
// protobuf if t's type is built-in and in JSON otherwise, and decodes them
// with the library's decoders: the view decoder of the built-in type, or
// jd, the JSON decoder of T.
func viewDecoded[T Object](a *Client, t Target, ns string, dec Decoding, jd *jsondec.Decoder) (*Funcs, error) {
	builtIn := t.API != nil && protodec.Supports(t.API) && scheme.Scheme.Recognizes(t.GVK)
	view := reflect.TypeFor[T]()
	newT, _ := watchstream.NewFunc(*new(T))
	var pd *protodec.Decoder
	if builtIn {
		var err error
		pd, err = sharedDecoder(a, dec, decoderKey{typ: view, api: t.API}, func(o Decoding) (*protodec.Decoder, error) {
			return protodec.NewView(view, t.API, protodec.Options{Share: true, Skip: o.Skip})
		})
		if err != nil {
			return nil, err
		}
	}
	// A bookmark keeps its annotations whatever the fields skipped (see
	// jsondec.EventDecoder): the reflector reads the one that ends a
	// watch-list's initial events there.
	jsonEvent := jsondec.EventDecoder(jd, newT)
	// The decoders of the responses, made once the kind is known: the
	// scheme's, or the one discovery tells.
	var mu sync.Mutex
	var wd *wireDecoders[T]
	decodersOf := func(kind string) *wireDecoders[T] {
		mu.Lock()
		defer mu.Unlock()
		if wd == nil {
			wd = &wireDecoders[T]{gvr: t.GVR, kind: kind, listKind: kind + "List", newT: newT, protobuf: pd,
				json:   func() (*jsondec.Decoder, error) { return jd, nil },
				codecs: noCodecs}
		}
		return wd
	}
	request := func(ctx context.Context, opts metav1.ListOptions) (*rest.Request, *wireDecoders[T], error) {
		res, err := a.resource(ctx, t.GVR, t.GVK.Kind)
		if err != nil {
			return nil, nil, err
		}
		kind := cmp.Or(t.GVK.Kind, res.Kind)
		if kind == "" {
			return nil, nil, fmt.Errorf("the kind of %s is unknown: discovery does not tell it", ResourceName(t.GVR))
		}
		if t.API == nil {
			if err := dec.Schema.CheckServer(ctx, a.openAPI, view, t.GVR.GroupVersion().WithKind(kind), t.GVR); err != nil {
				return nil, nil, err
			}
		}
		req := a.rest.Get().AbsPath(pathOf(t.GVR.GroupVersion(), res, ns)...).
			SpecificallyVersionedParams(&opts, paramCodec, schema.GroupVersion{Version: "v1"})
		if builtIn {
			req = req.UseProtobufAsDefault()
		} else {
			req = req.SetHeader("Accept", "application/json")
		}
		return req, decodersOf(kind), nil
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (List, error) {
		req, d, err := request(ctx, opts)
		if err != nil {
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return nil, err
		}
		l, err := d.list(ctx, req)
		a.forgetOnNotFound(t.GVR.GroupVersion(), err)
		return l, err
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		req, d, err := request(ctx, opts)
		if err != nil {
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return nil, err
		}
		decoders := watchstream.Decoders[T]{JSON: jsonEvent}
		if t.API == nil {
			decoders.JSON = Rechecked(ctx, jsonEvent, func(ctx context.Context) error {
				return dec.Schema.Recheck(ctx, a.openAPI, view, t.GVR.GroupVersion().WithKind(d.kind), t.GVR)
			})
		}
		if pd != nil {
			decoders.Protobuf = protodec.EventDecoder(pd, newT)
		}
		body, contentType, err := stream(ctx, req.Throttle(nil))
		if err != nil {
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return nil, err
		}
		w, err := watchstream.FromResponse(ctx, body, contentType, d.kind, decoders)
		if err != nil {
			return nil, fmt.Errorf("watch of %s: %w", ResourceName(t.GVR), err)
		}
		return w, nil
	}
	lw := newFuncs(list, watchFn)
	lw.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		req, d, err := request(ctx, opts)
		if err != nil {
			a.forgetOnNotFound(t.GVR.GroupVersion(), err)
			return metav1.ListMeta{}, err
		}
		meta, err := d.stream(ctx, req, items, nil)
		a.forgetOnNotFound(t.GVR.GroupVersion(), err)
		return meta, err
	}
	return lw, nil
}

// Rechecked returns decode, but that an object it cannot decode has
// check run: if the view's schema changed so that the view no longer
// matches it, the mismatch ends the watch, and the lists that follow fail
// with it, rather than objects being contained one by one.
func Rechecked[T Object](ctx context.Context, decode decoded.EventFunc[T], check func(context.Context) error) decoded.EventFunc[T] {
	return func(data []byte, bookmark bool) (T, error) {
		obj, err := decode(data, bookmark)
		if err != nil && !bookmark {
			if cerr := check(ctx); cerr != nil {
				return obj, cerr
			}
		}
		return obj, err
	}
}

// noCodecs decode nothing: a list of views in a format the library's
// decoders do not decode (CBOR) fails, naming its kind, rather than
// decoding into the full type.
var noCodecs = serializer.NewCodecFactory(runtime.NewScheme())

// projectedListWatch returns lw, whose lists and watches hand out objects
// of the full type of resource gvr, with each object made a view of type T:
// encoded to JSON and decoded by jd, or for a bookmark by bookmarks, which
// skips nothing.
func projectedListWatch[T Object](lw *Funcs, jd, bookmarks *jsondec.Decoder, gvr schema.GroupVersionResource) *Funcs {
	newT, _ := watchstream.NewFunc(*new(T))
	project := func(obj runtime.Object, dec *jsondec.Decoder) (T, error) {
		b, err := json.Marshal(obj)
		if err != nil {
			var zero T
			return zero, fmt.Errorf("encoding a %T of %s: %w", obj, ResourceName(gvr), err)
		}
		return decoded.Object(dec, b, newT)
	}
	out := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			l, err := lw.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			lm, err := meta.ListAccessor(l)
			if err != nil {
				return nil, fmt.Errorf("list of %s: %w", ResourceName(gvr), err)
			}
			views := &decoded.List[T]{ListMeta: metav1.ListMeta{
				ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue(), RemainingItemCount: lm.GetRemainingItemCount(),
			}}
			err = meta.EachListItem(l, func(obj runtime.Object) error {
				v, err := project(obj, jd)
				if err != nil {
					return err
				}
				views.Items = append(views.Items, v)
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("list of %s: %w", ResourceName(gvr), err)
			}
			return views, nil
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := lw.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if ev.Type == watch.Error || ev.Object == nil {
					return ev, true
				}
				dec := jd
				if ev.Type == watch.Bookmark {
					dec = bookmarks
				}
				v, err := project(ev.Object, dec)
				if err != nil {
					return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
				}
				ev.Object = v
				return ev, true
			}), nil
		})
	out.DisableWatchList = lw.DisableWatchList
	return out
}
