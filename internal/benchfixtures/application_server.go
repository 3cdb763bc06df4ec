package benchfixtures

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// CreateApplicationCRD installs the CustomResourceDefinition of
// Application on a real API server, as Argo CD's has it: namespaced, no
// status subresource, spec and status kept whole
// (x-kubernetes-preserve-unknown-fields). It waits until the server
// serves the resource; a CRD already installed is kept.
func CreateApplicationCRD(ctx context.Context, dyn dynamic.Interface) error {
	preserved := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": ApplicationResource.Resource + "." + ApplicationGV.Group},
		"spec": map[string]any{
			"group": ApplicationGV.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": ApplicationResource.Resource, "singular": "application", "kind": "Application", "listKind": "ApplicationList"},
			"versions": []any{map[string]any{
				"name": ApplicationGV.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"spec": preserved, "status": preserved},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("benchfixtures: creating the CRD of applications: %w", err)
	}
	served := func() bool {
		_, err := dyn.Resource(ApplicationResource).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := PollUntil(ctx, served); err != nil {
		return fmt.Errorf("benchfixtures: the CRD of applications is not served: %w", err)
	}
	return nil
}

// CreateApplications creates count applications (NewApplication with
// seed 1, status included) in a new namespace ns of a real API server
// whose Application CRD is installed (CreateApplicationCRD), their JSON
// posted as it is.
func CreateApplications(ctx context.Context, cs kubernetes.Interface, ns string, count int) error {
	if err := CreateNamespace(ctx, cs, ns); err != nil {
		return err
	}
	path := fmt.Sprintf("/apis/%s/namespaces/%s/%s", ApplicationGV, ns, ApplicationResource.Resource)
	return CreateAll(count, func(i int) error {
		a := NewApplication(i, 1)
		a.Namespace, a.UID, a.ResourceVersion = ns, types.UID(""), ""
		body, err := json.Marshal(a)
		if err != nil {
			return err
		}
		return cs.CoreV1().RESTClient().Post().AbsPath(path).SetHeader("Content-Type", "application/json").
			Body(body).Do(ctx).Error()
	})
}
