package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// The views of CustomResourceDefinitions, a type the factory's scheme
// (client-go's) does not know, checked against the server's schema of
// io.k8s.apiextensions-apiserver...CustomResourceDefinition.
type crdMisspelt struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Grup string `json:"grup"`
	} `json:"spec"`
}

type crdWrongKind struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Names struct {
			Kind int `json:"kind"`
		} `json:"names"`
	} `json:"spec"`
}

type crdView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
		} `json:"versions"`
	} `json:"spec"`
}

func (v *crdMisspelt) DeepCopyObject() runtime.Object  { return informers.DeepCopyView(v) }
func (v *crdWrongKind) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }
func (v *crdView) DeepCopyObject() runtime.Object      { return informers.DeepCopyView(v) }

// The views of widgets and gadgets, custom resources: widgets have no Go
// type, gadgets the JSON-only Go type Gadget in the factory's scheme.
type widgetMisspelt struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Sise int64 `json:"sise"`
	} `json:"spec"`
}

type widgetWrongKind struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Color int `json:"color"`
	} `json:"spec"`
}

type widgetView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Size  int64  `json:"size"`
		Color string `json:"color"`
	} `json:"spec"`
}

// widgetV2View reads the widgets' version v2, whose size is a string.
type widgetV2View struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Size string `json:"size"`
	} `json:"spec"`
}

type gadgetMisspelt struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Sise int `json:"sise"`
	} `json:"spec"`
}

type gadgetWrongKind struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Size string `json:"size"`
	} `json:"spec"`
}

func (v *widgetMisspelt) DeepCopyObject() runtime.Object  { return informers.DeepCopyView(v) }
func (v *widgetWrongKind) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }
func (v *widgetView) DeepCopyObject() runtime.Object      { return informers.DeepCopyView(v) }
func (v *widgetV2View) DeepCopyObject() runtime.Object    { return informers.DeepCopyView(v) }
func (v *gadgetMisspelt) DeepCopyObject() runtime.Object  { return informers.DeepCopyView(v) }
func (v *gadgetWrongKind) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }

// createWidgetCRD creates the CRD of widgets in group, labelled
// label=value, served in v1 (spec.size an integer, spec.color a string)
// and v2 (spec.size a string), stored in v1 and converted by nothing, and
// waits until both versions are served.
func createWidgetCRD(t *testing.T, ctx context.Context, dyn dynamic.Interface, group, label, value string) {
	t.Helper()
	version := func(name string, storage bool, size string) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object",
				"properties": map[string]any{"spec": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"size":  map[string]any{"type": size},
						"color": map[string]any{"type": "string"},
						"extra": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					}}},
			}}}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + group, "labels": map[string]any{label: value}},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names":    map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{version("v1", true, "integer"), version("v2", false, "string")},
		},
	}}
	_, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dyn.Resource(crdResource).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
	})
	for _, v := range []string{"v1", "v2"} {
		gvr := schema.GroupVersionResource{Group: group, Version: v, Resource: "widgets"}
		testutil.EventuallyWithin(t, time.Minute, func() bool {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil
		}, "%s is served", gvr)
	}
}

// refusingOpenAPI answers every request for the server's OpenAPI with 403
// Forbidden, as a server whose RBAC keeps /openapi/v3 from the user does,
// and passes the others, discovery among them, on.
type refusingOpenAPI struct{ next http.RoundTripper }

func (r refusingOpenAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, "/openapi/") {
		return r.next.RoundTrip(req)
	}
	body, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: fmt.Sprintf("forbidden: User cannot get path %q", req.URL.Path)})
	return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Request: req, ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(string(body)))}, nil
}

// notSynced starts f and returns the error of its WaitForSync, which must
// come well before ctx's deadline: a mismatch is permanent.
func notSynced(t *testing.T, ctx context.Context, f *informers.Factory) error {
	t.Helper()
	testutil.StartFactory(t, f)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := informers.WaitForSync(wctx, f)
	require.Error(t, err)
	require.NoError(t, wctx.Err(), "WaitForSync returned the mismatch before its deadline")
	return err
}

// TestViewCheckedAgainstServerSchema checks views of resources whose type
// the scheme does not know (CustomResourceDefinitions, a custom resource)
// against the schema the server publishes, and views of a custom resource
// whose JSON-only Go type it knows against that type: a misspelt field and
// a field of the wrong JSON kind fail, naming the field and the schema's
// type, with no object on the server that could fail to decode; a correct
// view syncs what the server has. A CRD's two versions are checked each
// against its own schema; a schema changed under a running informer fails
// it; a server that refuses its OpenAPI leaves a view running unchecked,
// and saying so, unless the check is required.
func TestViewCheckedAgainstServerSchema(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ns := testutil.Namespace(t, admin)
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	ctx := testutil.Context(t, 4*time.Minute)
	group := ns + ".schema.example.com"
	createWidgetCRD(t, ctx, dyn, group, "schemacheck", ns)
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	gadgetGroup := ns + ".gadgets.example.com"
	gadgets := createGadgetCRDWith(t, dyn, ctx, gadgetGroup, map[string]any{
		"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}}})
	nothing := "schemacheck=none" // selects no CustomResourceDefinition
	factory := func(o informers.FactoryOptions) *informers.Factory {
		o.RESTConfig, o.Namespace, o.Backoff = cmpConfig(o.RESTConfig, env), informers.Set(ns), informers.Set(fastBackoff)
		return informers.NewFactoryWith(nil, o)
	}

	t.Run("CRDs misspelt", func(t *testing.T) {
		f := factory(informers.FactoryOptions{})
		v := informers.InformerWith(f, informers.Options[*crdMisspelt]{Resource: crdResource, LabelSelector: nothing})
		require.NoError(t, v.LastError(), "the type is not known when asked for")
		err := notSynced(t, ctx, f)
		assert.ErrorContains(t, err, `field "spec.grup" (crdMisspelt.Spec.Grup)`)
		assert.ErrorContains(t, err, `object io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec has no field "grup" (did you mean "group"?)`)
		assert.ErrorContains(t, err, "*integration.crdMisspelt")
		assert.ErrorContains(t, v.LastError(), "grup")
		assert.ErrorContains(t, informers.ReadyCheck(f)(nil), "grup")
		assert.Equal(t, 0, v.Lister().Len())
	})
	t.Run("CRDs wrong kind", func(t *testing.T) {
		f := factory(informers.FactoryOptions{})
		v := informers.InformerWith(f, informers.Options[*crdWrongKind]{Resource: crdResource, LabelSelector: nothing})
		err := notSynced(t, ctx, f)
		assert.ErrorContains(t, err, `field "spec.names.kind" (crdWrongKind.Spec.Names.Kind): Go type int cannot hold the schema's string`)
		assert.ErrorContains(t, v.LastError(), "spec.names.kind")
	})
	t.Run("CRDs correct", func(t *testing.T) {
		f := factory(informers.FactoryOptions{})
		v := informers.InformerWith(f, informers.Options[*crdView]{Resource: crdResource, LabelSelector: "schemacheck=" + ns})
		testutil.StartFactory(t, f)
		require.NoError(t, informers.WaitForSync(ctx, f))
		require.Equal(t, 1, v.Lister().Len())
		got, err := v.Lister().Get("widgets." + group)
		require.NoError(t, err)
		server, err := dyn.Resource(crdResource).Get(ctx, "widgets."+group, metav1.GetOptions{})
		require.NoError(t, err)
		serverGroup, _, _ := unstructured.NestedString(server.Object, "spec", "group")
		assert.Equal(t, serverGroup, got.Spec.Group)
		assert.Equal(t, "Widget", got.Spec.Names.Kind)
		require.Len(t, got.Spec.Versions, 2)
		assert.Equal(t, server.GetResourceVersion(), got.ResourceVersion)
		assert.Contains(t, v.Stats().SchemaCheck, "checked against the server's schema of apiextensions.k8s.io/v1, Kind=CustomResourceDefinition")
	})

	t.Run("custom resource without a Go type", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			inf  func(*informers.Factory) informers.AnyInformer
			want []string
		}{
			{"misspelt", func(f *informers.Factory) informers.AnyInformer {
				return informers.InformerWith(f, informers.Options[*widgetMisspelt]{Resource: widgets})
			}, []string{`field "spec.sise" (widgetMisspelt.Spec.Sise)`, `object ` + reverse(group) + `.v1.Widget.spec has no field "sise" (did you mean "size"?)`}},
			{"wrong kind", func(f *informers.Factory) informers.AnyInformer {
				return informers.InformerWith(f, informers.Options[*widgetWrongKind]{Resource: widgets})
			}, []string{`field "spec.color" (widgetWrongKind.Spec.Color): Go type int cannot hold the schema's string`, "*integration.widgetWrongKind"}},
			{"v2 read as v1", func(f *informers.Factory) informers.AnyInformer {
				return informers.InformerWith(f, informers.Options[*widgetView]{Resource: widgets.GroupResource().WithVersion("v2")})
			}, []string{`field "spec.size" (widgetView.Spec.Size): Go type int64 cannot hold the schema's string`, "Kind=Widget"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := factory(informers.FactoryOptions{})
				inf := tc.inf(f)
				require.NoError(t, inf.LastError())
				err := notSynced(t, ctx, f)
				for _, want := range tc.want {
					assert.ErrorContains(t, err, want)
				}
				assert.Error(t, informers.ReadyCheck(f)(nil))
			})
		}
	})

	t.Run("custom resource without a Go type correct", func(t *testing.T) {
		for i := range 3 {
			w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
				"metadata": map[string]any{"namespace": ns, "name": fmt.Sprintf("w%d", i)},
				"spec":     map[string]any{"size": int64(i), "color": "red", "extra": map[string]any{"any": []any{1, "x"}}}}}
			_, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		f := factory(informers.FactoryOptions{})
		v1 := informers.InformerWith(f, informers.Options[*widgetView]{Resource: widgets})
		v2 := informers.InformerWith(f, informers.Options[*widgetV2View]{Resource: widgets.GroupResource().WithVersion("v2")})
		testutil.StartFactory(t, f)
		require.NoError(t, informers.WaitForSync(ctx, v1))
		// v2 objects are v1's, converted by nothing: their size is an
		// integer that v2's schema says is a string. None decodes, so the
		// v2 informer is unhealthy once synced: its view fits the schema,
		// not the objects the server stores.
		var undecodable *informers.UndecodableTypeError
		require.ErrorAs(t, informers.WaitForSync(ctx, v2), &undecodable)
		assert.Equal(t, "spec.size", undecodable.Field)
		list, err := dyn.Resource(widgets).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 3)
		require.Equal(t, 3, v1.Lister().Len())
		for _, u := range list.Items {
			got, err := v1.Lister().Namespace(ns).Get(u.GetName())
			require.NoError(t, err)
			size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			assert.Equal(t, size, got.Spec.Size)
			assert.Equal(t, "red", got.Spec.Color)
			assert.Equal(t, u.GetResourceVersion(), got.ResourceVersion)
		}
		assert.Equal(t, "checked against the server's schema of "+group+"/v1, Kind=Widget", v1.Stats().SchemaCheck)
		assert.Equal(t, "checked against the server's schema of "+group+"/v2, Kind=Widget", v2.Stats().SchemaCheck)
		assert.Equal(t, 3, v2.Stats().Undecodable)
	})

	t.Run("custom resource with a JSON-only Go type", func(t *testing.T) {
		sch := gadgetSchemeOf(gadgets.GroupVersion())
		f := factory(informers.FactoryOptions{Scheme: sch})
		misspelt := informers.InformerWith(f, informers.Options[*gadgetMisspelt]{Resource: gadgets})
		require.Error(t, misspelt.LastError())
		assert.ErrorContains(t, misspelt.LastError(), `field "spec.sise" (gadgetMisspelt.Spec.Sise): object integration.GadgetSpec has no field "sise" (did you mean "size"?)`)
		assert.ErrorContains(t, misspelt.LastError(), "the scheme's *integration.Gadget")
		wrong := informers.InformerWith(f, informers.Options[*gadgetWrongKind]{Resource: gadgets})
		require.Error(t, wrong.LastError())
		assert.ErrorContains(t, wrong.LastError(), `field "spec.size" (gadgetWrongKind.Spec.Size): Go type string cannot hold the schema's integer`)

		g := gadget(ns, "g", 4)
		g.SetAPIVersion(gadgets.GroupVersion().String())
		_, err := dyn.Resource(gadgets).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		require.NoError(t, err)
		f = factory(informers.FactoryOptions{Scheme: sch})
		correct := informers.InformerWith(f, informers.Options[*gadgetView]{Resource: gadgets})
		require.NoError(t, correct.LastError())
		testutil.StartFactory(t, f)
		require.NoError(t, informers.WaitForSync(ctx, f))
		got, err := correct.Lister().Namespace(ns).Get("g")
		require.NoError(t, err)
		assert.Equal(t, int64(4), got.Spec.Size)
		assert.Equal(t, "checked against the scheme's *integration.Gadget", correct.Stats().SchemaCheck)
	})

	t.Run("schema changed while running", func(t *testing.T) {
		f := factory(informers.FactoryOptions{})
		v := informers.InformerWith(f, informers.Options[*widgetView]{Resource: widgets})
		testutil.StartFactory(t, f)
		require.NoError(t, informers.WaitForSync(ctx, f))
		require.NoError(t, informers.ReadyCheck(f)(nil))
		before := openAPIHash(t, ctx, admin, widgets.GroupVersion())

		// color becomes an integer in v1.
		crd, err := dyn.Resource(crdResource).Get(ctx, "widgets."+group, metav1.GetOptions{})
		require.NoError(t, err)
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		require.NoError(t, unstructured.SetNestedField(versions[0].(map[string]any),
			map[string]any{"type": "integer"}, "schema", "openAPIV3Schema", "properties", "spec", "properties", "color"))
		require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
		_, err = dyn.Resource(crdResource).Update(ctx, crd, metav1.UpdateOptions{})
		require.NoError(t, err)
		testutil.EventuallyWithin(t, time.Minute, func() bool {
			return openAPIHash(t, ctx, admin, widgets.GroupVersion()) != before
		}, "the server publishes the new schema")

		// A widget of the new schema does not decode into the view: the
		// check runs again and finds the view no longer matches.
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": ns, "name": "blue"}, "spec": map[string]any{"size": int64(1), "color": int64(3)}}}
		testutil.CreateValid(t, ctx, dyn.Resource(widgets).Namespace(ns), w)
		testutil.EventuallyWithin(t, time.Minute, func() bool {
			err := v.LastError()
			return err != nil && strings.Contains(err.Error(), `field "spec.color" (widgetView.Spec.Color): Go type string cannot hold the schema's integer`)
		}, "the informer's lists fail with the mismatch")
		assert.ErrorContains(t, informers.ReadyCheck(f)(nil), `"spec.color"`)
	})

	t.Run("OpenAPI refused", func(t *testing.T) {
		refused := env.Config()
		refused.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return refusingOpenAPI{next: rt} }
		f := factory(informers.FactoryOptions{RESTConfig: refused})
		v := informers.InformerWith(f, informers.Options[*widgetMisspelt]{Resource: widgets})
		testutil.StartFactory(t, f)
		require.NoError(t, informers.WaitForSync(ctx, f), "unchecked, the view syncs")
		assert.Positive(t, v.Lister().Len())
		assert.Contains(t, v.Stats().SchemaCheck, "unchecked: the server's OpenAPI v3 schema of "+group+"/v1 cannot be read")
		assert.Contains(t, v.Stats().SchemaCheck, "forbidden")

		f = factory(informers.FactoryOptions{RESTConfig: refused, Tuning: informers.Tuning{SchemaCheck: informers.Set(informers.SchemaCheckRequire)}})
		informers.InformerWith(f, informers.Options[*widgetView]{Resource: widgets})
		err := notSynced(t, ctx, f)
		assert.ErrorContains(t, err, "the view must be checked (SchemaCheck), but is unchecked")
	})
}

// cmpConfig returns cfg, or env's configuration if cfg is nil.
func cmpConfig(cfg *rest.Config, env *testenv.Env) *rest.Config {
	if cfg != nil {
		return cfg
	}
	return env.Config()
}

// reverse returns the reverse-domain name of group, as OpenAPI names the
// schemas of its custom resources.
func reverse(group string) string {
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".")
}

// openAPIHash returns the path, with its hash, of the server's OpenAPI v3
// document of gv.
func openAPIHash(t *testing.T, ctx context.Context, cs kubernetes.Interface, gv schema.GroupVersion) string {
	t.Helper()
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/openapi/v3").Do(ctx).Raw()
	require.NoError(t, err)
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &index))
	return index.Paths["apis/"+gv.Group+"/"+gv.Version].URL
}
