package informers

import (
	"context"
	"fmt"
	"io"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/store"
	"github.com/kubetyped/informers/internal/watchstream"
)

// ResourceFor exposes resourceFor to the tests.
var ResourceFor = apiclient.ResourceFor

// WireListWatch returns a ListWatch of T over a source in protobuf, for
// the benchmarks: list returns a page as the server sends it, and frames,
// if set, the stream of a watch. Objects are decoded as a Factory's
// informer with opts decodes them: by the library's decoder, or, with
// opts.DisableDecoder, lists by client-go's codecs and watches by the
// generated code. Without frames, WatchFunc is left to the caller.
func WireListWatch[T Object](opts Options[T], list func(metav1.ListOptions) ([]byte, error), frames func() io.ReadCloser) (*ListWatch[T, List], error) {
	gvk, err := apiclient.KindOf[T](scheme.Scheme)
	if err != nil {
		return nil, err
	}
	dec, err := apiclient.NewDecoder[T](apiclient.Decoding{Disabled: opts.DisableDecoder.value, Skip: opts.SkipFields})
	if err != nil {
		return nil, err
	}
	newT, _ := watchstream.NewFunc(*new(T))
	lw := NewListWatch[T](
		func(_ context.Context, o metav1.ListOptions) (List, error) {
			body, err := list(o)
			if err != nil {
				return nil, err
			}
			return apiclient.DecodeList(body, dec, gvk.Kind+"List", newT)
		}, nil)
	if frames != nil {
		decode := watchstream.Generated(newT)
		if dec != nil {
			decode = protodec.EventDecoder(dec, newT)
		}
		lw.WatchFunc = func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			return watchstream.FromStream(ctx, frames(), gvk.Kind, decode, nil), nil
		}
	}
	return lw, nil
}

// JSONListWatch returns a ListWatch of T over a source in JSON, for the
// benchmarks: list returns a list body as the server sends it, and stream
// the body of a watch. Objects are decoded as a Factory's informer of T
// decodes them from JSON, by the library's JSON decoder, one decoder for
// both.
func JSONListWatch[T Object](list func(metav1.ListOptions) ([]byte, error), stream func() io.ReadCloser) (*ListWatch[T, List], error) {
	dec, err := apiclient.NewJSONDecoder[T](apiclient.Decoding{})
	if err != nil {
		return nil, err
	}
	if dec == nil {
		return nil, fmt.Errorf("the JSON decoder does not decode %T", *new(T))
	}
	newT, _ := watchstream.NewFunc(*new(T))
	kind := reflect.TypeFor[T]().Elem().Name()
	return NewListWatch[T](
		func(_ context.Context, o metav1.ListOptions) (List, error) {
			body, err := list(o)
			if err != nil {
				return nil, err
			}
			return jsondec.DecodeList(dec, body, kind+"List", newT)
		},
		func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			return watchstream.FromResponse(ctx, stream(), "application/json", kind, watchstream.Decoders[T]{JSON: jsondec.EventDecoder(dec, newT)})
		}), nil
}

// StoreNamespaceIndex is the store's name of its namespace index, which
// NamespaceIndex spells out for go doc.
const StoreNamespaceIndex = store.NamespaceIndex

// MostlyUndecodable exposes the rule of UndecodableTypeError to the tests.
var MostlyUndecodable = mostlyUndecodable

// UndecodableField exposes fieldOf to the tests.
var UndecodableField = fieldOf
