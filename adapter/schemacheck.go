package adapter

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

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

// viewSchema is the check of a decoder's views against the server's
// schema of the kind they view, one per informer.
type viewSchema struct {
	openAPI *apiclient.OpenAPI
	check   *apiclient.SchemaCheck
	gvk     schema.GroupVersionKind
	gvr     schema.GroupVersionResource
}

// run checks the views of type view, unless they were checked against the
// same version of the schema.
func (s *viewSchema) run(ctx context.Context, view reflect.Type) error {
	return s.check.CheckServer(ctx, s.openAPI, view, s.gvk, s.gvr)
}

// CheckedBy returns a copy of d, a decoder of views of a resource whose Go
// type the adapter does not know (NewViewDecoder with api nil), whose
// views are checked against the server's schema of kind gvk, the kind of
// resource gvr, as a Factory checks its informers' views: the lists,
// streamed lists and watches of a ListWatch made with it check first, and
// fail with the mismatch, naming the field, the view and the schema's
// type, while the view does not match; a watch checks again when an
// object does not decode into the view (at most once a second), in case
// the schema changed while the informer runs. Where the server publishes
// no schema the views run unchecked, and the log says so once. Each
// informer takes a copy of its own: the copy keeps what its check found.
func (d *Decoder) CheckedBy(sc *SchemaChecker, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource) (*Decoder, error) {
	if d == nil || !d.view {
		return nil, fmt.Errorf("adapter: only a decoder of views is checked against a schema, not %v", d)
	}
	if sc == nil {
		return nil, fmt.Errorf("adapter: views %v of %s checked by no SchemaChecker", d.typ, apiclient.ResourceName(gvr))
	}
	out := *d
	out.schema = &viewSchema{openAPI: sc.openAPI, check: apiclient.NewSchemaCheck(apiclient.SchemaDefault), gvk: gvk, gvr: gvr}
	return &out, nil
}

// String describes the decoder by the type it decodes.
func (d *Decoder) String() string {
	switch {
	case d == nil:
		return "no decoder"
	case d.unstructured != nil:
		return "the decoder of unstructured objects"
	case d.view:
		return fmt.Sprintf("the decoder of views %v", d.typ)
	}
	return fmt.Sprintf("the decoder of %v", d.typ)
}

// checkGo checks view against api, a JSON-only Go type of the resource it
// views (a custom resource's), as a Factory does.
func checkGo(view, api reflect.Type) error {
	if _, err := viewcheck.Check(view, viewcheck.FromGo(api)); err != nil {
		return fmt.Errorf("adapter: view %v of %v: %w", view, api, err)
	}
	return nil
}
