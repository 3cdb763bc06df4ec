package viewcheck

import (
	"encoding/json"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubetyped/informers/internal/decopt"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	// ownJSON are the kinds of the Go types with a JSON of their own
	// that a view may hold and a schema may name.
	ownJSON = map[reflect.Type]Kind{
		reflect.TypeFor[metav1.Time]():          String,
		reflect.TypeFor[metav1.MicroTime]():     String,
		reflect.TypeFor[metav1.Duration]():      String,
		reflect.TypeFor[resource.Quantity]():    Quantity,
		reflect.TypeFor[intstr.IntOrString]():   IntOrString,
		reflect.TypeFor[runtime.RawExtension](): Any,
		reflect.TypeFor[json.RawMessage]():      Any,
	}
	goSchemas sync.Map // reflect.Type → *Schema
	goMu      sync.Mutex
)

// FromGo returns the schema of Go type t as encoding/json, and
// apimachinery, decode it: its structs' fields by their json tags,
// embedded structs' inline. A type with a JSON of its own is the kind
// it is in JSON if the check knows it (metav1.Time, resource.Quantity,
// intstr.IntOrString...), Any otherwise. Schemas are made once per type.
func FromGo(t reflect.Type) *Schema {
	if s, ok := goSchemas.Load(t); ok {
		return s.(*Schema)
	}
	goMu.Lock()
	defer goMu.Unlock()
	building := map[reflect.Type]*Schema{}
	s := fromGo(t, building, "")
	for bt, bs := range building {
		goSchemas.LoadOrStore(bt, bs)
	}
	return s
}

// fromGo returns the schema of t, building those of the types it holds;
// building holds the schemas under construction, found again by types
// that hold themselves. A type without a name (an anonymous struct) is
// named by path, its place in the named type that holds it.
func fromGo(t reflect.Type, building map[reflect.Type]*Schema, path string) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := goSchemas.Load(t); ok {
		return s.(*Schema)
	}
	if s, ok := building[t]; ok {
		return s
	}
	s := &Schema{Name: t.String()}
	if t.Name() == "" && path != "" {
		s.Name = path
	}
	building[t] = s
	if k, ok := ownJSON[t]; ok {
		s.Kind = k
		return s
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return s // Any: its JSON is its own
	}
	switch t.Kind() {
	case reflect.String:
		s.Kind = String
	case reflect.Bool:
		s.Kind = Boolean
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s.Kind = Integer
	case reflect.Float32, reflect.Float64:
		s.Kind = Number
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			s.Kind = String // base64
			break
		}
		s.Kind, s.Elem = Array, fromGo(t.Elem(), building, s.Name+"[]")
	case reflect.Map:
		s.Kind, s.Elem = Map, fromGo(t.Elem(), building, s.Name+"[]")
	case reflect.Struct:
		s.Kind, s.Fields = Object, map[string]*Schema{}
		fields, _ := jsonFields(t, "")
		for _, f := range fields {
			s.Fields[f.JSON] = fromGo(f.Type, building, s.Name+"."+f.JSON)
		}
	}
	return s
}

// jsonFields returns the fields of struct t by their JSON names, as
// encoding/json finds them: exported fields, and the fields of embedded
// structs and pointers to structs without a JSON name, the shallower of
// two of the same name winning. path is t's Go path, for errors.
func jsonFields(t reflect.Type, path string) ([]decopt.Field, error) {
	return decopt.Fields(t, path, decopt.InlineAll)
}
