package controllerruntime_test

import (
	"context"
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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testutil"
)

// The views of widgets, a custom resource with no Go type in any scheme:
// they are checked against the server's schema.
type widgetMisspelt struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Sise int64 `json:"sise"`
	} `json:"spec"`
}

type widgetView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Size  int64  `json:"size"`
		Color string `json:"color"`
	} `json:"spec"`
}

func (v *widgetMisspelt) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }
func (v *widgetView) DeepCopyObject() runtime.Object     { return informers.DeepCopyView(v) }

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// createWidgetCRD creates the CRD of widgets in group (spec.size an
// integer, spec.color a string) and waits until they are served.
func createWidgetCRD(t *testing.T, ctx context.Context, dyn dynamic.Interface, group string) schema.GroupVersionResource {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"size":  map[string]any{"type": "integer"},
							"color": map[string]any{"type": "string"},
						}}},
				}}}},
		},
	}}
	_, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dyn.Resource(crds).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil
	}, "%s is served", gvr)
	return gvr
}

// lastError returns the last list or watch failure of the cache's
// informer of obj.
func lastError(t *testing.T, ctx context.Context, c *controllerruntime.Cache, obj client.Object) func() error {
	t.Helper()
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	require.NoError(t, err)
	shared, ok := inf.(interface {
		Informer() *informers.SharedInformer[client.Object]
	})
	require.True(t, ok, "the informer of %T is a %T", obj, inf)
	return shared.Informer().LastError
}

// TestCacheViewCheckedAgainstServerSchema checks that the cache's views of
// a custom resource no scheme knows are checked against the server's
// schema: a misspelt field fails the informer's lists, naming the field,
// with no object on the server to fail to decode; a correct view syncs,
// and fails once the schema changes under it so that it no longer matches
// (the server ends the watches of a resource whose CRD changed, and the
// next watch checks; an object that does not decode on a watch makes it
// check too).
func TestCacheViewCheckedAgainstServerSchema(t *testing.T) {
	env, cs := sharedServer(t)
	cfg := env.Config()
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := testutil.Context(t, 3*time.Minute)
	ns := testutil.Namespace(t, cs)
	widgets := createWidgetCRD(t, ctx, dyn, ns+".crcheck.example.com")

	sch := viewScheme()
	sch.AddKnownTypeWithName(viewsGV.WithKind("WidgetMisspelt"), &widgetMisspelt{})
	sch.AddKnownTypeWithName(viewsGV.WithKind("WidgetView"), &widgetView{})
	c, err := controllerruntime.NewWithOptions(cfg, cache.Options{Scheme: sch, DefaultNamespaces: map[string]cache.Config{ns: {}}}, controllerruntime.Options{
		Views: map[client.Object]schema.GroupVersionResource{&widgetMisspelt{}: widgets, &widgetView{}: widgets},
	})
	require.NoError(t, err)
	startCache(t, c)

	misspelt := lastError(t, ctx, c, &widgetMisspelt{})
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		err := misspelt()
		return err != nil && strings.Contains(err.Error(), `"sise"`) && strings.Contains(err.Error(), `did you mean "size"?`)
	}, "the misspelt view fails its lists, naming the field")

	_, err = dyn.Resource(widgets).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": "red"}, "spec": map[string]any{"size": int64(2), "color": "red"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	view := lastError(t, ctx, c, &widgetView{})
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		var red widgetView
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "red"}, &red) == nil && red.Spec.Color == "red"
	}, "the correct view syncs")
	require.NoError(t, view())

	// color becomes an integer.
	crd, err := dyn.Resource(crds).Get(ctx, "widgets."+widgets.Group, metav1.GetOptions{})
	require.NoError(t, err)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, unstructured.SetNestedField(versions[0].(map[string]any),
		map[string]any{"type": "integer"}, "schema", "openAPIV3Schema", "properties", "spec", "properties", "color"))
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	_, err = dyn.Resource(crds).Update(ctx, crd, metav1.UpdateOptions{})
	require.NoError(t, err)

	// A widget of the new schema does not decode into the view: the watch
	// checks again, once the server publishes the new schema.
	blue := &unstructured.Unstructured{Object: map[string]any{"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": "blue"}, "spec": map[string]any{"size": int64(1), "color": int64(3)}}}
	testutil.CreateValid(t, ctx, dyn.Resource(widgets).Namespace(ns), blue)
	n := 0
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		err := view()
		if err != nil && strings.Contains(err.Error(), `"spec.color"`) && strings.Contains(err.Error(), "integer") {
			return true
		}
		// The server may publish the schema after the widget's event:
		// another write, every half second, brings the view's check back.
		if n++; n%25 != 0 {
			return false
		}
		blue.Object["spec"].(map[string]any)["size"] = int64(n)
		_, err = dyn.Resource(widgets).Namespace(ns).Update(ctx, blue, metav1.UpdateOptions{})
		if err != nil {
			blue, err = dyn.Resource(widgets).Namespace(ns).Get(ctx, "blue", metav1.GetOptions{})
			assert.NoError(t, err)
		}
		return false
	}, "the view fails with the changed schema's mismatch")
}
