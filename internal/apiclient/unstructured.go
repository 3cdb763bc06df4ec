package apiclient

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/watchstream"
)

// unstructuredDecoded lists and watches gvr in namespace ns as the
// dynamic client does, its requests sent through a.rest, and decodes them
// with dec, the library's JSON decoder, in one pass, as client-go's
// UnstructuredJSONScheme decodes them, sharing keys and repeated values.
// T is *unstructured.Unstructured.
func unstructuredDecoded[T Object](a *Client, gvr schema.GroupVersionResource, ns string, dec *jsondec.Unstructured) *Funcs {
	bodies := new(decoded.Bodies)
	listRequest := func(ctx context.Context, opts metav1.ListOptions) (*rest.Request, string, error) {
		res, err := a.resource(ctx, gvr, "")
		if err != nil {
			return nil, "", err
		}
		req := a.rest.Get().AbsPath(pathOf(gvr.GroupVersion(), res, ns)...).
			SpecificallyVersionedParams(&opts, paramCodec, schema.GroupVersion{Version: "v1"})
		return req, res.Kind, nil
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (List, error) {
		req, _, err := listRequest(ctx, opts)
		if err != nil {
			return nil, err
		}
		l, err := listUnstructured(ctx, req, bodies, dec, ResourceName(gvr))
		a.forgetOnNotFound(gvr.GroupVersion(), err)
		return l, err
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		res, err := a.resource(ctx, gvr, "")
		if err != nil {
			return nil, err
		}
		req := a.rest.Get().AbsPath(pathOf(gvr.GroupVersion(), res, ns)...).
			SpecificallyVersionedParams(&opts, paramCodec, schema.GroupVersion{Version: "v1"}).
			SetHeader("Accept", "application/json")
		w, err := watchstream.WatchJSON(ctx, req, res.Kind, jsondec.UnstructuredEventDecoder[T](dec))
		a.forgetOnNotFound(gvr.GroupVersion(), err)
		return w, err
	}
	lw := newFuncs(list, watchFn)
	lw.Stream = func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		req, kind, err := listRequest(ctx, opts)
		if err != nil {
			return metav1.ListMeta{}, err
		}
		meta, err := streamUnstructured(ctx, req, dec, gvr, kind, items)
		a.forgetOnNotFound(gvr.GroupVersion(), err)
		return meta, err
	}
	return lw
}
