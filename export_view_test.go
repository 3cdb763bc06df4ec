package informers

import (
	"context"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/watchstream"
)

// WireViewListWatch returns a ListWatch of V, a view of the built-in
// resource gvr, over a source of lists in protobuf, for the benchmarks:
// list returns a page as the server sends it, decoded into views as a
// Factory's informer of V decodes it, by the view's protobuf decoder.
// WatchFunc is left to the caller.
func WireViewListWatch[V Object](opts Options[V], gvr schema.GroupVersionResource, list func(metav1.ListOptions) ([]byte, error)) (*ListWatch[V, List], error) {
	target, err := apiclient.Resolve[V](scheme.Scheme, gvr)
	if err != nil {
		return nil, err
	}
	dec, err := protodec.NewView(reflect.TypeFor[V](), target.API, protodec.Options{Share: true, Skip: opts.SkipFields})
	if err != nil {
		return nil, err
	}
	newT, _ := watchstream.NewFunc(*new(V))
	return NewListWatch[V](
		func(_ context.Context, o metav1.ListOptions) (List, error) {
			body, err := list(o)
			if err != nil {
				return nil, err
			}
			return apiclient.DecodeList(body, dec, target.GVK.Kind+"List", newT)
		}, nil), nil
}
