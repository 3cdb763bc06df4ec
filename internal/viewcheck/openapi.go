package viewcheck

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Document is an OpenAPI v3 document of one group version, as the API
// server publishes it at /openapi/v3/apis/<group>/<version> (or
// /openapi/v3/api/v1): the schemas of its kinds, and of the types they
// hold, under components.schemas. It is safe for concurrent use.
type Document struct {
	components map[string]*rawSchema

	mu    sync.Mutex
	built map[string]*Schema // by component name
}

// rawSchema is an OpenAPI v3 schema object, of the parts the check reads.
type rawSchema struct {
	Type                 string                `json:"type"`
	Format               string                `json:"format"`
	Ref                  string                `json:"$ref"`
	AllOf                []*rawSchema          `json:"allOf"`
	OneOf                []*rawSchema          `json:"oneOf"`
	AnyOf                []*rawSchema          `json:"anyOf"`
	Properties           map[string]*rawSchema `json:"properties"`
	Items                *rawSchema            `json:"items"`
	AdditionalProperties json.RawMessage       `json:"additionalProperties"`
	PreserveUnknown      bool                  `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString          bool                  `json:"x-kubernetes-int-or-string"`
	GVK                  []struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	} `json:"x-kubernetes-group-version-kind"`
}

// ParseOpenAPI parses data, an OpenAPI v3 document in JSON.
func ParseOpenAPI(data []byte) (*Document, error) {
	var doc struct {
		Components struct {
			Schemas map[string]*rawSchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing an OpenAPI v3 document: %w", err)
	}
	return &Document{components: doc.Components.Schemas, built: map[string]*Schema{}}, nil
}

// Kind returns the schema of kind gvk, the component whose
// x-kubernetes-group-version-kind names it, and false if d has none.
func (d *Document) Kind(gvk schema.GroupVersionKind) (*Schema, bool) {
	for name, r := range d.components {
		for _, k := range r.GVK {
			if k.Group == gvk.Group && k.Version == gvk.Version && k.Kind == gvk.Kind {
				d.mu.Lock()
				defer d.mu.Unlock()
				return d.component(name), true
			}
		}
	}
	return nil, false
}

// component returns the schema of the component name, built once; Any
// if d has no such component.
func (d *Document) component(name string) *Schema {
	if s, ok := d.built[name]; ok {
		return s
	}
	s := &Schema{Name: name}
	d.built[name] = s
	if r := d.components[name]; r != nil {
		*s = *d.convert(r, name)
	}
	return s
}

const refPrefix = "#/components/schemas/"

// convert returns the schema of r, named name.
func (d *Document) convert(r *rawSchema, name string) *Schema {
	if r.Ref != "" {
		return d.component(strings.TrimPrefix(r.Ref, refPrefix))
	}
	if len(r.Properties) == 0 && r.Items == nil && len(r.AllOf) == 1 {
		return d.convert(r.AllOf[0], name)
	}
	s := &Schema{Name: name}
	if r.IntOrString || r.Format == "int-or-string" {
		s.Kind = IntOrString
		return s
	}
	if alt := alternatives(r); alt != "" {
		switch alt {
		case "integer|string":
			s.Kind = IntOrString
		case "number|string":
			s.Kind = Quantity
		}
		return s // Any for other alternatives
	}
	switch r.Type {
	case "string":
		s.Kind = String
	case "integer":
		s.Kind = Integer
	case "number":
		s.Kind = Number
	case "boolean":
		s.Kind = Boolean
	case "array":
		s.Kind = Array
		if r.Items != nil {
			s.Elem = d.convert(r.Items, name+"[]")
		} else {
			s.Elem = &Schema{Name: name + "[]"}
		}
	case "object", "":
		switch {
		case len(r.Properties) > 0:
			s.Kind, s.Open, s.Fields = Object, r.PreserveUnknown, make(map[string]*Schema, len(r.Properties))
			for field, fr := range r.Properties {
				s.Fields[field] = d.convert(fr, name+"."+field)
			}
		case len(r.AdditionalProperties) > 0 && r.AdditionalProperties[0] == '{':
			var elem rawSchema
			if json.Unmarshal(r.AdditionalProperties, &elem) == nil {
				s.Kind, s.Elem = Map, d.convert(&elem, name+"[]")
			}
		}
		// Otherwise Any: an object that says nothing of its fields.
	}
	return s
}

// alternatives returns the types that r's oneOf or anyOf allow, sorted
// and joined by "|", or "" if it has neither.
func alternatives(r *rawSchema) string {
	alts := r.OneOf
	if len(alts) == 0 {
		alts = r.AnyOf
	}
	if len(alts) == 0 {
		return ""
	}
	var types []string
	for _, a := range alts {
		types = append(types, a.Type)
	}
	if len(types) == 2 && types[0] > types[1] {
		types[0], types[1] = types[1], types[0]
	}
	return strings.Join(types, "|")
}
