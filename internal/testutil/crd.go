package testutil

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CreateCRD creates a namespaced CustomResourceDefinition of gvr, of kind
// kind, whose schema keeps every field, waits until the server serves it,
// and deletes it when the test ends.
func CreateCRD(t testing.TB, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": gvr.Resource + "." + gvr.Group},
		"spec": map[string]any{
			"group": gvr.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": gvr.Resource, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": gvr.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := Context(t, time.Minute)
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	EventuallyWithin(t, time.Minute, func() bool {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		return err == nil
	}, "the CRD of %s is served", gvr)
}
