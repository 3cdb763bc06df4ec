package jsondec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The custom resource types of the tests use every feature the decoder
// has: embedded and inline structs, pointers to structs, maps of
// structs, interface{} values and the types with their own UnmarshalJSON.

// Widget is a custom resource.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec    `json:"spec"`
	Status            *WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is a Widget's spec.
type WidgetSpec struct {
	Common   `json:",inline"`
	*Extra   `json:",inline"`
	Replicas *int32                       `json:"replicas,omitempty"`
	Size     resource.Quantity            `json:"size"`
	Limits   map[string]resource.Quantity `json:"limits,omitempty"`
	Port     intstr.IntOrString           `json:"port"`
	Ports    []intstr.IntOrString         `json:"ports,omitempty"`
	Template runtime.RawExtension         `json:"template"`
	Schema   *JSON                        `json:"schema,omitempty"`
	Raw      json.RawMessage              `json:"raw,omitempty"`
	Data     []byte                       `json:"data,omitempty"`
	Parts    map[string]Part              `json:"parts,omitempty"`
	PartPtrs map[string]*Part             `json:"partPtrs,omitempty"`
	Items    []Part                       `json:"items,omitempty"`
	Values   map[string]any               `json:"values,omitempty"`
	Anything any                          `json:"anything,omitempty"`
	Color    Color                        `json:"color"`
	Colors   []Color                      `json:"colors,omitempty"`
	Ratio    float64                      `json:"ratio"`
	Small    float32                      `json:"small"`
	Tiny     int8                         `json:"tiny"`
	Count    uint16                       `json:"count"`
	Big      uint64                       `json:"big"`
	Enabled  *bool                        `json:"enabled,omitempty"`
	Note     *string                      `json:"note,omitempty"`
	Since    *metav1.Time                 `json:"since,omitempty"`
	Until    *metav1.Time                 `json:"until,omitempty"`
	Times    map[string]metav1.Time       `json:"times,omitempty"`
	Micro    metav1.MicroTime             `json:"micro"`
	Duration metav1.Duration              `json:"duration"`
	Untagged string
	Ignored  string `json:"-"`
}

// Common is embedded inline in WidgetSpec.
type Common struct {
	Owner  string            `json:"owner"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Extra is embedded by pointer in WidgetSpec.
type Extra struct {
	Zone string `json:"zone,omitempty"`
	// Owner is shadowed by Common's, at a shallower depth.
	Owner string `json:"owner,omitempty"`
}

// Part is a struct held in maps and slices.
type Part struct {
	Name       string             `json:"name"`
	Weight     int64              `json:"weight"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Next       *Part              `json:"next,omitempty"`
}

// WidgetStatus is a Widget's status.
type WidgetStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Observed   int64              `json:"observedGeneration,omitempty"`
	Phase      string             `json:"phase,omitempty"`
}

// Color has its own UnmarshalJSON: upper-cases a string, or names a
// number.
type Color struct{ Name string }

// UnmarshalJSON decodes a Color.
func (c *Color) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("color: %w", err)
		}
		s = fmt.Sprint("#", n)
	}
	c.Name = strings.ToUpper(s)
	return nil
}

// MarshalJSON encodes a Color.
func (c Color) MarshalJSON() ([]byte, error) { return json.Marshal(strings.ToLower(c.Name)) }

// DeepCopyObject makes Widget a runtime.Object: a copy through JSON,
// which the tests' values survive.
func (w *Widget) DeepCopyObject() runtime.Object {
	var out Widget
	b, _ := json.Marshal(w)
	_ = json.Unmarshal(b, &out)
	return &out
}

// JSON is apiextensionsv1.JSON (a CRD's schema values), with its
// UnmarshalJSON, written here to spare the module a dependency on
// k8s.io/apiextensions-apiserver.
type JSON struct {
	Raw []byte `json:"-"`
}

// UnmarshalJSON keeps the bytes, as apiextensionsv1.JSON does.
func (s *JSON) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && !bytes.Equal(data, []byte("null")) {
		s.Raw = append(s.Raw[0:0], data...)
	}
	return nil
}

// MarshalJSON returns the bytes kept, as apiextensionsv1.JSON does.
func (s JSON) MarshalJSON() ([]byte, error) {
	if len(s.Raw) > 0 {
		return s.Raw, nil
	}
	return []byte("null"), nil
}
