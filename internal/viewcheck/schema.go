package viewcheck

import (
	"fmt"
	"maps"
	"slices"
)

// Kind is the JSON kind of the values of a Schema.
type Kind uint8

const (
	// Any is an untyped schema: any JSON value, which says nothing of
	// its fields or kind, so that a view's field under it is unchecked.
	Any Kind = iota
	String
	Integer
	Number
	Boolean
	// Object is a JSON object of known fields (Schema.Fields).
	Object
	Array
	// Map is a JSON object of any keys, each a Schema.Elem.
	Map
	// IntOrString is an integer or a string (x-kubernetes-int-or-string,
	// intstr.IntOrString).
	IntOrString
	// Quantity is a resource.Quantity: a string or a number.
	Quantity
)

var kindNames = [...]string{Any: "any value", String: "string", Integer: "integer", Number: "number", Boolean: "boolean",
	Object: "object", Array: "array", Map: "map", IntOrString: "int-or-string", Quantity: "quantity"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Schema is the JSON shape of a type: its kind, its fields if it is an
// Object, its elements' or values' if it is an Array or a Map.
type Schema struct {
	Kind Kind
	// Name names the type for errors: a Go type, an OpenAPI component,
	// or the path of an inline schema from its component.
	Name string
	// Fields are an Object's fields, by JSON name.
	Fields map[string]*Schema
	// Open says an Object may also hold fields that Fields does not name
	// (x-kubernetes-preserve-unknown-fields), which cannot be checked.
	Open bool
	// Elem is an Array's elements or a Map's values.
	Elem *Schema
}

// String describes s for errors: its kind, and the type it is.
func (s *Schema) String() string {
	switch {
	case s == nil:
		return "nothing"
	case s.Kind == Array && s.Elem != nil:
		return "array of " + s.Elem.String()
	case s.Kind == Map && s.Elem != nil:
		return "map of " + s.Elem.String()
	case s.Name != "" && (s.Kind == Object || s.Kind == Any):
		return fmt.Sprintf("%s %s", s.Kind, s.Name)
	}
	return s.Kind.String()
}

// fieldNames returns the names of s's fields, sorted.
func (s *Schema) fieldNames() []string {
	return slices.Sorted(maps.Keys(s.Fields))
}
