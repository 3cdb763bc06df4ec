package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// Gadget is a custom resource with a Go type of its own.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec `json:"spec"`
}

type GadgetSpec struct {
	Size int `json:"size"`
}

// GadgetList is a list of gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (l *GadgetList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]Gadget, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*Gadget)
	}
	return &c
}

var gadgetGV = schema.GroupVersion{Group: "toys.example.com", Version: "v1"}

func gadgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	return gadgetSchemeOf(gadgetGV)
}

// gadgetSchemeOf is a scheme that knows the Go types of the gadgets of gv.
func gadgetSchemeOf(gv schema.GroupVersion) *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(gv, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(s, gv)
	return s
}

// createGadgetCRD creates the CustomResourceDefinition of gadgets in
// toys.example.com and waits until the server serves it.
func createGadgetCRD(t *testing.T, dyn dynamic.Interface, ctx context.Context) {
	t.Helper()
	createGadgetCRDIn(t, dyn, ctx, gadgetGV.Group)
}

// createGadgetCRDIn creates the CustomResourceDefinition of gadgets in
// group and waits until the server serves it.
func createGadgetCRDIn(t *testing.T, dyn dynamic.Interface, ctx context.Context, group string) {
	t.Helper()
	createGadgetCRDWith(t, dyn, ctx, group, map[string]any{
		"type":       "object",
		"properties": map[string]any{"size": map[string]any{"type": "integer"}},
	})
}

// createGadgetCRDWith creates the CustomResourceDefinition of gadgets in
// group whose spec has the schema spec, and waits until the server serves
// it; it returns their resource.
func createGadgetCRDWith(t *testing.T, dyn dynamic.Interface, ctx context.Context, group string, spec map[string]any) schema.GroupVersionResource {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"spec": spec},
				}},
			}},
		},
	}}
	crdRes := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err := dyn.Resource(crdRes).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dyn.Resource(crdRes).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil
	}, "the CRD is served")
	return gvr
}

func gadget(ns, name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "toys.example.com/v1",
		"kind":       "Gadget",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"size": size},
	}}
}

// A custom resource served through the factory, typed with a user scheme
// and as unstructured, requested before its CRD exists: WaitForSync says
// the server does not serve it, and the informers sync once it does.
func TestCustomResource(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ns := testutil.Namespace(t, admin)
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	ctx := testutil.Context(t, 2*time.Minute)

	w, cfg := recorded(env)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Scheme: gadgetScheme(t), Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	typed := informers.Informer[*Gadget](f)
	require.NoError(t, typed.LastError())
	untyped := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: gadgetGV.WithResource("gadgets")})
	require.NoError(t, untyped.LastError())
	testutil.StartFactory(t, f)

	short, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	err = informers.WaitForSync(short, f)
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Less(t, time.Since(start), 10*time.Second, "prompt")
	assert.Contains(t, err.Error(), "gadgets.v1.toys.example.com")

	createGadgetCRD(t, dyn, ctx)
	_, err = dyn.Resource(gadgetGV.WithResource("gadgets")).Namespace(ns).Create(ctx, gadget(ns, "g1", 3), metav1.CreateOptions{})
	require.NoError(t, err)
	testutil.EventuallyWithin(t, time.Minute, func() bool { return typed.HasSynced() && untyped.HasSynced() }, "synced once the CRD exists")
	require.NoError(t, informers.WaitForSync(ctx, f))
	testutil.EventuallyWithin(t, 30*time.Second, func() bool { return typed.Lister().Len() == 1 && untyped.Lister().Len() == 1 }, "the gadget arrived")
	g, err := typed.Lister().Namespace(ns).Get("g1")
	require.NoError(t, err)
	assert.Equal(t, 3, g.Spec.Size)
	u, err := untyped.Lister().Namespace(ns).Get("g1")
	require.NoError(t, err)
	assert.Equal(t, "Gadget", u.GetKind())

	// Custom resources travel as JSON: the server has no protobuf for them.
	for _, ex := range w.exchanges() {
		if ex.status == 200 && pathEndsWithURL(ex.url, "gadgets") {
			assert.Contains(t, ex.contentType, "application/json", ex.url)
		}
	}
}

// missingGadgets starts an informer of the gadgets of group, a resource
// whose CRD is not installed, with WaitForResource as given.
func missingGadgets(t *testing.T, group string, waitForResource bool) (context.Context, dynamic.Interface, *informers.SharedInformer[*unstructured.Unstructured]) {
	t.Helper()
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	ns := testutil.Namespace(t, clientset(t, env.Config()))
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: env.Config(), Tuning: informers.Tuning{Namespace: informers.Set(ns), OnError: informers.Set(func(error) {})}})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	inf := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: gvr, WaitForResource: waitForResource})
	require.NoError(t, inf.LastError())
	testutil.StartFactory(t, f)
	return testutil.Context(t, 2*time.Minute), dyn, inf
}

// installSyncsWithin installs the CRD of inf's gadgets and requires inf to
// sync within d of the install.
func installSyncsWithin(t *testing.T, ctx context.Context, dyn dynamic.Interface, inf *informers.SharedInformer[*unstructured.Unstructured], d time.Duration) {
	t.Helper()
	createGadgetCRDIn(t, dyn, ctx, inf.Resource().Group)
	served := time.Now()
	// Polled: without WaitForResource, WaitForSync would return the 404
	// of the last attempt at once, until the next one.
	testutil.EventuallyWithin(t, d, inf.HasSynced, "synced within %v of the resource being served", d)
	t.Logf("synced %v after the resource was served", time.Since(served))
}

// An informer with WaitForResource, requested before its CRD exists, waits
// for it (WaitForSync says so, and does not fail at once) and syncs within
// seconds of the resource being served (up to about 1.5 here; the bound leaves
// room for a busy machine).
func TestWaitForResource(t *testing.T) {
	ctx, dyn, later := missingGadgets(t, "later.example.com", true)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := informers.WaitForSync(short, later)
	var notSynced *informers.NotSyncedError
	require.ErrorAs(t, err, &notSynced)
	assert.True(t, notSynced.WaitingForResource, "%v", err)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "waited instead of failing at once")
	assert.Contains(t, err.Error(), "waiting for the resource to be served")
	installSyncsWithin(t, ctx, dyn, later, 5*time.Second)
}

// With default options, an informer requested before its CRD exists fails
// WaitForSync at once with the 404 that names its resource, keeps asking
// at a bounded interval rather than backing off, and so syncs within a
// few seconds of the CRD's install, however long it waited before
// (client-go's informer: 16 s and more, its backoff having grown).
func TestMissingResourceStartsPromptly(t *testing.T) {
	ctx, dyn, later := missingGadgets(t, "prompt.example.com", false)
	short, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	err := informers.WaitForSync(short, later)
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Less(t, time.Since(start), 10*time.Second, "prompt")
	assert.Contains(t, err.Error(), "gadgets.v1.prompt.example.com", "names the missing resource")

	// Long enough for a doubling backoff from 0.8 s to have grown past
	// the bound below.
	wait := time.NewTimer(10 * time.Second)
	defer wait.Stop()
	select {
	case <-wait.C:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	installSyncsWithin(t, ctx, dyn, later, 5*time.Second)
}
