package apiclient

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/decopt"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// An informer whose objects hold nothing but their metadata (a view of
// metadata alone, or a full type whose skipped fields leave only its
// metadata) needs no more of each object than the server's metadata
// endpoint sends: the server is asked for PartialObjectMetadata and
// PartialObjectMetadataList (as=PartialObjectMetadata), as client-go's
// metadata client asks, in protobuf where the informer's type decodes
// from it (a view of metadata alone always does, custom resources
// included: the server encodes their metadata in protobuf) and in JSON
// otherwise, and decodes that into the informer's type. A list of large
// objects (config maps of a megabyte) then costs the server and the
// client their metadata only.
//
// The requests accept nothing but the projection, so that a server that
// cannot project refuses them (406 Not Acceptable, or 415) rather than
// answering with whole objects of another kind; the informer then reads
// whole objects, as it would without the projection, from then on.

// projectedMedia are the media types of projected requests: protobuf and
// JSON, or JSON alone, and never whole objects.
var (
	projectedProtobuf = metadataMedia{
		list:  "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		watch: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
	}
	projectedJSON = metadataMedia{
		list:  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		watch: "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
	}
)

var partialObjectMetadataType = reflect.TypeFor[*metav1.PartialObjectMetadata]()

// metadataOnly reports whether objects of type t, a pointer to a struct,
// hold nothing but their metadata once the fields that skip names (by
// their JSON paths) are left out: every field JSON names at its top level
// is "metadata", "kind" or "apiVersion" (metav1.TypeMeta), or is skipped.
func metadataOnly(t reflect.Type, skip []string) bool {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	names, ok := topLevelFields(t.Elem())
	if !ok || !slices.Contains(names, "metadata") {
		return false
	}
	for _, name := range names {
		switch {
		case name == "metadata" || name == "kind" || name == "apiVersion":
		case slices.Contains(skip, name):
		default:
			return false
		}
	}
	return true
}

// topLevelFields returns the JSON names of the fields of struct t, as
// encoding/json finds them, through the structs it embeds without a name;
// ok is false if t embeds a pointer, whose fields are not looked into, or
// two fields conflict.
func topLevelFields(t reflect.Type) (names []string, ok bool) {
	fields, err := decopt.Fields(t, t.Name(), func(sf reflect.StructField, goPath string) (bool, error) {
		if sf.Type.Kind() == reflect.Pointer {
			return false, fmt.Errorf("%s: an embedded pointer", goPath)
		}
		return true, nil
	})
	if err != nil {
		return nil, false
	}
	for _, f := range fields {
		names = append(names, f.JSON)
	}
	return names, true
}

// metadataIsFieldOne reports whether struct pointer t holds its metadata
// in protobuf field 1, as PartialObjectMetadata does, so that T's own
// protobuf decoder decodes a PartialObjectMetadata: true of every
// generated API type.
func metadataIsFieldOne(t reflect.Type) bool {
	sf, ok := metadataField(t.Elem())
	return ok && strings.HasPrefix(sf.Tag.Get("protobuf"), "bytes,1,")
}

// metadataProjected returns the functions that list and watch t's
// resource in namespace ns as metadata, decoded into T, if T holds
// nothing but metadata once dec's fields are skipped (metadataOnly) and
// the library decodes it; whole are the functions of whole objects that
// take over if the server refuses the projection. It returns whole
// otherwise.
func metadataProjected[T Object](a *Client, t Target, ns string, dec Decoding, whole *Funcs) (*Funcs, error) {
	typ := reflect.TypeFor[T]()
	if dec.Disabled || a.rest == nil || !metadataOnly(typ, dec.Skip) {
		return whole, nil
	}
	var pd *protodec.Decoder
	switch {
	case t.Shape == View:
		// A view of metadata alone is a view of PartialObjectMetadata,
		// built-in or custom resource alike; one that names fields it
		// skips is not, and is projected in JSON.
		if protodec.CheckView(typ, partialObjectMetadataType) == nil {
			var err error
			pd, err = sharedDecoder(a, dec, decoderKey{typ: typ, api: partialObjectMetadataType}, func(o Decoding) (*protodec.Decoder, error) {
				return protodec.NewView(typ, partialObjectMetadataType, protodec.Options{Share: true, Skip: o.Skip})
			})
			if err != nil {
				return nil, err
			}
		}
	case protodec.Supports(typ) && metadataIsFieldOne(typ):
		var err error
		if pd, err = decoderOf[T](a, dec); err != nil {
			return nil, err
		}
	}
	jd, err := jsonDecoderOf[T](a, dec)
	if err != nil {
		return nil, err
	}
	if pd == nil && jd == nil {
		return whole, nil
	}
	newT, _ := watchstream.NewFunc(*new(T))
	decoders := &wireDecoders[T]{gvr: t.GVR, kind: "PartialObjectMetadata", listKind: "PartialObjectMetadataList", newT: newT,
		protobuf: pd, json: func() (*jsondec.Decoder, error) { return jd, nil }, codecs: noCodecs}
	media := projectedJSON
	if pd != nil {
		media = projectedProtobuf
	}
	return withFallback[T](metadataDecoded(a, t.GVR, ns, decoders, media), whole, t.GVR), nil
}

// withFallback returns the functions of projected, which hand out objects
// decoded from PartialObjectMetadata with their kind cleared, until the
// server refuses a projected list (406 Not Acceptable or 415 Unsupported
// Media Type), or answers it with whole objects, as a server that ignores
// the projection does: that request, and every one after it, goes to
// whole. (A watch-list of whole objects fails, and the informer lists.)
func withFallback[T Object](projected, whole *Funcs, gvr schema.GroupVersionResource) *Funcs {
	var refused atomic.Bool
	// use reports whether a request goes to projected; refusal tells if
	// err, a projected request's, is the server's refusal, which it logs
	// the first time.
	use := func() bool { return !refused.Load() }
	refusal := func(ctx context.Context, err error) bool {
		kind, ok := errors.AsType[*decoded.KindError](err)
		ignored := ok && kind.Want == "PartialObjectMetadataList" // the server sent whole objects
		if !ignored && !apierrors.IsNotAcceptable(err) && !apierrors.IsUnsupportedMediaType(err) {
			return false
		}
		if !refused.Swap(true) {
			klog.FromContext(ctx).Info("The server does not send the metadata of these objects alone; reading whole objects",
				"resource", ResourceName(gvr), "err", err)
		}
		return true
	}
	out := newFuncs(
		func(ctx context.Context, opts metav1.ListOptions) (List, error) {
			if use() {
				l, err := projected.List(ctx, opts)
				if !refusal(ctx, err) {
					if dl, ok := l.(*decoded.List[T]); ok {
						for _, obj := range dl.Items {
							clearKind(obj)
						}
					}
					return l, err
				}
			}
			return whole.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if use() {
				w, err := projected.Watch(ctx, opts)
				if !refusal(ctx, err) {
					return w, err
				}
			}
			return whole.Watch(ctx, opts)
		})
	out.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		if use() {
			// A refused request hands out no item.
			meta, err := projected.Stream(ctx, opts, kindCleared{items})
			if !refusal(ctx, err) {
				return meta, err
			}
		}
		if whole.Stream == nil {
			l, err := whole.List(ctx, opts)
			if err != nil {
				return metav1.ListMeta{}, err
			}
			return putEach[T](l, items)
		}
		return whole.Stream(ctx, opts, items)
	}
	out.DisableWatchList = whole.DisableWatchList
	return out
}

// clearKind clears the kind of obj, decoded from a PartialObjectMetadata:
// a list in JSON names its items' kind, PartialObjectMetadata, which is
// not the kind of the informer's objects. Watch events clear theirs as
// they are decoded (jsondec.EventDecoder); protobuf names none.
func clearKind(obj runtime.Object) {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
}

// kindCleared are items whose kinds are cleared as they are put.
type kindCleared struct{ reflector.ListItems }

func (k kindCleared) Put(obj runtime.Object) {
	clearKind(obj)
	k.ListItems.Put(obj)
}
