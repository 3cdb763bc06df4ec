package viewcheck

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// widgetDoc is the OpenAPI v3 document of a group version as the API
// server publishes a custom resource's structural schema.
const widgetDoc = `{"components":{"schemas":{
"com.example.v1.Widget":{"type":"object","x-kubernetes-group-version-kind":[{"group":"example.com","version":"v1","kind":"Widget"}],
 "properties":{
  "apiVersion":{"type":"string"},"kind":{"type":"string"},
  "metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
  "spec":{"type":"object","properties":{
    "group":{"type":"string"},
    "replicas":{"type":"integer","format":"int64"},
    "ratio":{"type":"number"},
    "enabled":{"type":"boolean"},
    "port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
    "memory":{"anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true},
    "tags":{"type":"array","items":{"type":"string"}},
    "labels":{"type":"object","additionalProperties":{"type":"string"}},
    "config":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
    "open":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"string"}}},
    "when":{"type":"string","format":"date-time"}
  }}}},
"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{"type":"object","properties":{
  "name":{"type":"string"},"namespace":{"type":"string"},"uid":{"type":"string"},"resourceVersion":{"type":"string"},
  "generation":{"type":"integer"},"creationTimestamp":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
  "deletionTimestamp":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
  "labels":{"type":"object","additionalProperties":{"type":"string","default":""}},
  "annotations":{"type":"object","additionalProperties":{"type":"string","default":""}},
  "ownerReferences":{"type":"array","items":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"}},
  "finalizers":{"type":"array","items":{"type":"string","default":""}}}},
"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference":{"type":"object","properties":{
  "apiVersion":{"type":"string"},"kind":{"type":"string"},"name":{"type":"string"},"uid":{"type":"string"},
  "controller":{"type":"boolean"},"blockOwnerDeletion":{"type":"boolean"}}},
"io.k8s.apimachinery.pkg.apis.meta.v1.Time":{"type":"string","format":"date-time"}
}}}`

// meta is the metadata of the views of the tests: the fields the
// library's ViewMeta has.
type meta struct {
	Name              string                  `json:"name"`
	UID               string                  `json:"uid"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp"`
	Labels            map[string]string       `json:"labels"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
}

func widgetSchema(t *testing.T) *Schema {
	doc, err := ParseOpenAPI([]byte(widgetDoc))
	require.NoError(t, err)
	s, ok := doc.Kind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	require.True(t, ok)
	_, ok = doc.Kind(schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"})
	require.False(t, ok)
	return s
}

// goWidget is a Go type of the widgets, whose schema FromGo makes.
type goWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Group    string             `json:"group"`
		Replicas int64              `json:"replicas"`
		Ratio    float64            `json:"ratio"`
		Enabled  bool               `json:"enabled"`
		Port     intstr.IntOrString `json:"port"`
		Memory   resource.Quantity  `json:"memory"`
		Tags     []string           `json:"tags"`
		Labels   map[string]string  `json:"labels"`
		Config   map[string]any     `json:"config"`
		When     *metav1.Time       `json:"when"`
	} `json:"spec"`
}

// TestCheck checks views against a published schema and against a Go
// type's: fields the schema has not, with hints; every JSON kind against
// the Go kinds that hold it and those that do not; and what falls under
// preserved unknown fields, reported unchecked.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		view      any
		want      string // the error; "" for none
		unchecked []string
		fromGo    bool // also against goWidget's schema, with the same result
	}{
		{name: "correct", view: &struct {
			Metadata meta `json:"metadata"`
			Spec     struct {
				Group    string             `json:"group"`
				Replicas int32              `json:"replicas"`
				Ratio    float64            `json:"ratio"`
				Enabled  *bool              `json:"enabled"`
				Port     intstr.IntOrString `json:"port"`
				Memory   resource.Quantity  `json:"memory"`
				Tags     []string           `json:"tags"`
				Labels   map[string]string  `json:"labels"`
				When     metav1.Time        `json:"when"`
			} `json:"spec"`
		}{}, fromGo: true},
		{name: "misspelt", view: &struct {
			Spec struct {
				Grup string `json:"grup"`
			} `json:"spec"`
		}{}, want: `field "spec.grup" (.Spec.Grup): object com.example.v1.Widget.spec has no field "grup" (did you mean "group"?)`},
		{name: "case", view: &struct {
			Spec struct{ Group string } `json:"spec"`
		}{}, want: `field "spec.Group" (.Spec.Group): object com.example.v1.Widget.spec has no field "Group" (names are case-sensitive: did you mean "group"?)`},
		{name: "no hint", view: &struct {
			Status struct{} `json:"status"`
		}{}, want: `field "status" (.Status): object com.example.v1.Widget has no field "status"`},
		{name: "int for string", view: &struct {
			Spec struct {
				Group int `json:"group"`
			} `json:"spec"`
		}{}, want: `field "spec.group" (.Spec.Group): Go type int cannot hold the schema's string`, fromGo: true},
		{name: "string for integer", view: &struct {
			Spec struct {
				Replicas string `json:"replicas"`
			} `json:"spec"`
		}{}, want: `field "spec.replicas" (.Spec.Replicas): Go type string cannot hold the schema's integer`, fromGo: true},
		{name: "int for number", view: &struct {
			Spec struct {
				Ratio int `json:"ratio"`
			} `json:"spec"`
		}{}, want: `cannot hold the schema's number`, fromGo: true},
		{name: "string for boolean", view: &struct {
			Spec struct {
				Enabled string `json:"enabled"`
			} `json:"spec"`
		}{}, want: `cannot hold the schema's boolean`, fromGo: true},
		{name: "string for int-or-string", view: &struct {
			Spec struct {
				Port string `json:"port"`
			} `json:"spec"`
		}{}, want: `cannot hold the schema's int-or-string`, fromGo: true},
		{name: "int-or-string for quantity", view: &struct {
			Spec struct {
				Memory intstr.IntOrString `json:"memory"`
			} `json:"spec"`
		}{}, want: "", fromGo: false},
		{name: "string for array", view: &struct {
			Spec struct {
				Tags string `json:"tags"`
			} `json:"spec"`
		}{}, want: `cannot hold the schema's array of string`, fromGo: true},
		{name: "ints for strings", view: &struct {
			Spec struct {
				Tags []int `json:"tags"`
			} `json:"spec"`
		}{}, want: `field "spec.tags[]" (.Spec.Tags[]): Go type int cannot hold the schema's string`, fromGo: true},
		{name: "struct for string", view: &struct {
			Spec struct {
				Group struct{} `json:"group"`
			} `json:"spec"`
		}{}, want: `Go type struct {} cannot hold the schema's string`, fromGo: true},
		{name: "map for map", view: &struct {
			Spec struct {
				Labels map[string]int `json:"labels"`
			} `json:"spec"`
		}{}, want: `field "spec.labels[]" (.Spec.Labels[]): Go type int cannot hold the schema's string`, fromGo: true},
		{name: "struct of a map", view: &struct {
			Spec struct {
				Labels struct {
					App string `json:"app"`
				} `json:"labels"`
			} `json:"spec"`
		}{}, fromGo: true},
		{name: "map of an object", view: &struct {
			Spec map[string]string `json:"spec"`
		}{}, want: `field "spec.enabled" (.Spec[enabled]): Go type string cannot hold the schema's boolean`, unchecked: []string{"spec.config"}},
		{name: "string for time", view: &struct {
			Metadata struct {
				CreationTimestamp int64 `json:"creationTimestamp"`
			} `json:"metadata"`
		}{}, want: `field "metadata.creationTimestamp" (.Metadata.CreationTimestamp): Go type int64 cannot hold the schema's string`, fromGo: true},
		{name: "preserved", view: &struct {
			Spec struct {
				Config struct {
					Anything []int `json:"anything"`
				} `json:"config"`
				Open struct {
					Known   string `json:"known"`
					Unknown int    `json:"unknown"`
				} `json:"open"`
			} `json:"spec"`
		}{}, unchecked: []string{"spec.config", "spec.open.unknown"}},
		{name: "preserved wrong kind", view: &struct {
			Spec struct {
				Open struct {
					Known int `json:"known"`
				} `json:"open"`
			} `json:"spec"`
		}{}, want: `field "spec.open.known" (.Spec.Open.Known): Go type int cannot hold the schema's string`},
		{name: "any", view: &struct {
			Spec any `json:"spec"`
		}{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vt := reflect.TypeOf(tc.view)
			check := func(s *Schema) {
				report, err := Check(vt, s)
				if tc.want == "" {
					require.NoError(t, err)
				} else {
					require.ErrorContains(t, err, tc.want)
					var e *Error
					require.ErrorAs(t, err, &e)
					assert.Equal(t, vt, e.View)
					assert.NotEmpty(t, e.Schema)
				}
				assert.Equal(t, tc.unchecked, report.Unchecked)
			}
			check(widgetSchema(t))
			if tc.fromGo {
				check(FromGo(reflect.TypeFor[*goWidget]()))
			}
		})
	}
}

// TestFromGo checks the schema of a Go type: kinds, inline embedding,
// types with a JSON of their own, and a type that holds itself.
func TestFromGo(t *testing.T) {
	type node struct {
		Name     string  `json:"name"`
		Children []*node `json:"children,omitempty"`
		Skipped  string  `json:"-"`
		hidden   string
	}
	s := FromGo(reflect.TypeFor[*goWidget]())
	require.Equal(t, Object, s.Kind)
	assert.ElementsMatch(t, []string{"apiVersion", "kind", "metadata", "spec"}, s.fieldNames())
	spec := s.Fields["spec"]
	for field, want := range map[string]Kind{"group": String, "replicas": Integer, "ratio": Number, "enabled": Boolean,
		"port": IntOrString, "memory": Quantity, "tags": Array, "labels": Map, "config": Map, "when": String} {
		assert.Equal(t, want, spec.Fields[field].Kind, field)
	}
	assert.Equal(t, Any, spec.Fields["config"].Elem.Kind)

	n := FromGo(reflect.TypeFor[node]())
	assert.Equal(t, []string{"children", "name"}, n.fieldNames())
	assert.Same(t, n, n.Fields["children"].Elem)
	_ = node{}.hidden
}
