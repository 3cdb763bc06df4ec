package adapter

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/viewcheck"
)

// SchemaChecker checks views of resources whose Go type an adapter's
// scheme does not know against the OpenAPI v3 schemas the server
// publishes, as a Factory checks its informers' views (see
// informers.SchemaCheck). It reads each group version's document once per
// version of it, and is safe for concurrent use.
type SchemaChecker struct{ openAPI *apiclient.OpenAPI }

// NewSchemaChecker returns a SchemaChecker that reads the server's
// OpenAPI through discovery, a client of its discovery paths (such as a
// discovery client's RESTClient).
func NewSchemaChecker(discovery rest.Interface) *SchemaChecker {
	return &SchemaChecker{openAPI: apiclient.NewOpenAPI(discovery)}
}

// Checked returns lw, whose lists, streamed lists and watches first check
// view against the server's schema of kind gvk, the kind of resource gvr,
// and fail with the mismatch, naming the field, the view and the schema's
// type, while the view does not match it. Where the server publishes no
// schema the view runs unchecked, and the log says so once.
func Checked[T informers.Object](sc *SchemaChecker, lw *informers.ListWatch[T, informers.List], view reflect.Type, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) *informers.ListWatch[T, informers.List] {
	check := apiclient.NewSchemaCheck(apiclient.SchemaDefault)
	run := func(ctx context.Context) error { return check.CheckServer(ctx, sc.openAPI, view, gvk, gvr) }
	out := *lw
	out.ListFunc = func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) {
		if err := run(ctx); err != nil {
			return nil, err
		}
		return lw.ListFunc(ctx, opts)
	}
	out.WatchFunc = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		if err := run(ctx); err != nil {
			return nil, err
		}
		return lw.WatchFunc(ctx, opts)
	}
	if lw.StreamFunc != nil {
		out.StreamFunc = func(ctx context.Context, opts metav1.ListOptions, items informers.ListItems[T]) (metav1.ListMeta, error) {
			if err := run(ctx); err != nil {
				return metav1.ListMeta{}, err
			}
			return lw.StreamFunc(ctx, opts, items)
		}
	}
	return &out
}

// checkGo checks view against api, a JSON-only Go type of the resource it
// views (a custom resource's), as a Factory does.
func checkGo(view, api reflect.Type) error {
	if _, err := viewcheck.Check(view, viewcheck.FromGo(api)); err != nil {
		return fmt.Errorf("adapter: view %v of %v: %w", view, api, err)
	}
	return nil
}
