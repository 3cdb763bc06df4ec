package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Greeting is a custom resource: spec.name says whom to greet, and the
// controller writes the greeting to status.message.
//
// A project with many types would generate DeepCopy with controller-gen;
// here they are written by hand.
type Greeting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GreetingSpec   `json:"spec"`
	Status            GreetingStatus `json:"status,omitempty"`
}

type GreetingSpec struct {
	Name string `json:"name"`
}

type GreetingStatus struct {
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the metadata.generation (it counts changes
	// of spec) that Message was written for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// GreetingList is what listing greetings returns.
type GreetingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Greeting `json:"items"`
}

// DeepCopy returns a deep copy of g. Spec and Status hold no pointers,
// maps or slices, so copying them by value is deep.
func (g *Greeting) DeepCopy() *Greeting {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (g *Greeting) DeepCopyObject() runtime.Object { return g.DeepCopy() }

func (l *GreetingList) DeepCopyObject() runtime.Object {
	c := *l
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	c.Items = make([]Greeting, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopy()
	}
	return &c
}

var (
	groupVersion = schema.GroupVersion{Group: "demo.example.com", Version: "v1"}
	// greetings is the resource the CustomResourceDefinition below serves.
	greetings = groupVersion.WithResource("greetings")
)

// newScheme returns a scheme that maps Greeting to its kind, for the
// informers' factory. It holds nothing else: a factory that also serves
// built-in types needs them added, with
// k8s.io/client-go/kubernetes/scheme.AddToScheme.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(groupVersion, &Greeting{}, &GreetingList{})
	metav1.AddToGroupVersion(s, groupVersion)
	return s
}

// greetingCRD is the CustomResourceDefinition of Greeting. It is
// unstructured to spare a dependency on k8s.io/apiextensions-apiserver,
// whose Go types would be the usual way to write it.
func greetingCRD() *unstructured.Unstructured {
	str := map[string]any{"type": "string"}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": greetings.Resource + "." + greetings.Group},
		"spec": map[string]any{
			"group": greetings.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "greetings", "singular": "greeting", "kind": "Greeting", "listKind": "GreetingList"},
			"versions": []any{map[string]any{
				"name": greetings.Version, "served": true, "storage": true,
				// With a status subresource, writes to the object ignore
				// .status and writes to /status ignore everything else.
				"subresources": map[string]any{"status": map[string]any{}},
				"additionalPrinterColumns": []any{
					map[string]any{"name": "Message", "type": "string", "jsonPath": ".status.message"},
				},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{"name": str}},
						"status": map[string]any{"type": "object", "properties": map[string]any{
							"message":            str,
							"observedGeneration": map[string]any{"type": "integer"},
						}},
					},
				}},
			}},
		},
	}}
}

// newGreeting returns a Greeting for whom, as the dynamic client takes it.
func newGreeting(namespace, name, whom string) *unstructured.Unstructured {
	g := &Greeting{
		TypeMeta:   metav1.TypeMeta{APIVersion: groupVersion.String(), Kind: "Greeting"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       GreetingSpec{Name: whom},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(g)
	if err != nil {
		panic(err) // cannot happen: Greeting converts
	}
	return &unstructured.Unstructured{Object: u}
}
