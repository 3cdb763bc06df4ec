package jsondec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kind is how a node is decoded.
type kind uint8

const (
	kBool kind = iota
	kString
	kInt
	kUint
	kFloat
	kStruct
	kPointer
	kSlice
	kBytes // a slice of a type of kind uint8: base64 from a string
	kMap   // a map whose keys are of kind string
	kAny   // interface{}
	kTime  // metav1.Time, by a fast path of its UnmarshalJSON
	kMethod
	kFallback
)

// node is the plan of a Go type: how JSON decodes into it, as
// encoding/json with sigs.k8s.io/json's options decodes it.
type node struct {
	kind   kind
	typ    reflect.Type
	bits   int   // kInt, kUint, kFloat
	elem   *node // kPointer, kSlice, kBytes, kMap
	fields []*field
	byName map[string]*field
	// stringMap marks map[string]string, decoded without reflection.
	stringMap bool
	// pure marks the kMethod types whose UnmarshalJSON depends on their
	// bytes alone (pureMethods): equal encodings held by pointer are
	// shared, as parts are.
	pure bool
}

// field is a field of a struct as encoding/json sees it, promoted from
// embedded structs included.
type field struct {
	name  string
	index int // in node.fields
	steps []step
	n     *node
}

// step is one move from a struct to a field of it: by offset, then, for
// an embedded pointer, through the pointer (made if nil).
type step struct {
	off  uintptr
	elem reflect.Type // non-nil: the field is a pointer to a struct of this type
}

// maxFields bounds the fields of a struct the decoder tells duplicate
// keys apart for; a struct with more decodes by the fallback.
const maxFields = 256

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[metav1.Time]()
)

// pureMethods are the types whose UnmarshalJSON makes the same value of
// the same bytes, and that many objects hold by pointer: the managed
// fields of every object's metadata.
var pureMethods = map[reflect.Type]bool{
	reflect.TypeFor[metav1.FieldsV1](): true,
}

var plans sync.Map // reflect.Type → *node

// planFor returns the plan of t, made once.
func planFor(t reflect.Type) *node {
	if n, ok := plans.Load(t); ok {
		return n.(*node)
	}
	n := build(t, map[reflect.Type]*node{})
	actual, _ := plans.LoadOrStore(t, n)
	return actual.(*node)
}

// build makes the plan of t; building holds the plans under
// construction, for recursive types.
func build(t reflect.Type, building map[reflect.Type]*node) *node {
	if n, ok := building[t]; ok {
		return n
	}
	n := &node{typ: t}
	building[t] = n
	pt := reflect.PointerTo(t)
	switch {
	case t == timeType:
		n.kind = kTime
		return n
	case pt.Implements(unmarshalerType):
		n.kind = kMethod
		n.pure = pureMethods[t]
		return n
	case pt.Implements(textUnmarshalerType):
		n.kind = kFallback
		return n
	}
	switch t.Kind() {
	case reflect.Bool:
		n.kind = kBool
	case reflect.String:
		n.kind = kString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.kind, n.bits = kInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n.kind, n.bits = kUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		n.kind, n.bits = kFloat, t.Bits()
	case reflect.Pointer:
		n.kind, n.elem = kPointer, build(t.Elem(), building)
		if t.Elem().Kind() == reflect.Pointer || n.elem.kind == kFallback {
			// null stops at the innermost pointer: left to encoding/json.
			n.kind = kFallback
		}
	case reflect.Slice:
		n.kind, n.elem = kSlice, build(t.Elem(), building)
		if t.Elem().Kind() == reflect.Uint8 {
			n.kind = kBytes
		}
	case reflect.Map:
		kt := t.Key()
		if kt.Kind() != reflect.String || reflect.PointerTo(kt).Implements(textUnmarshalerType) {
			n.kind = kFallback
			break
		}
		n.kind, n.elem = kMap, build(t.Elem(), building)
		n.stringMap = t == reflect.TypeFor[map[string]string]()
	case reflect.Interface:
		n.kind = kFallback
		if t.NumMethod() == 0 {
			n.kind = kAny
		}
	case reflect.Struct:
		n.kind = kStruct
		fields, ok := structFields(t, building)
		if !ok || len(fields) > maxFields {
			n.kind = kFallback
			break
		}
		n.fields = fields
		n.byName = make(map[string]*field, len(fields))
		for i, f := range fields {
			f.index = i
			n.byName[f.name] = f
		}
	default:
		n.kind = kFallback
	}
	return n
}

// candidate is a field found in a struct or the structs it embeds.
type candidate struct {
	name   string
	tagged bool
	depth  int
	order  int
	steps  []step
	typ    reflect.Type
}

// structFields returns the fields of struct t as encoding/json finds
// them: tagged names, embedded structs promoted, the dominant field of
// each name by depth and tag, names in conflict dropped. ok is false for
// what the decoder leaves to the fallback: ",string" options, embedded
// pointers to unexported structs, a struct embedded twice at one depth.
func structFields(t reflect.Type, building map[reflect.Type]*node) (fields []*field, ok bool) {
	type level struct {
		typ   reflect.Type
		steps []step
	}
	var cands []candidate
	current := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		seen := map[reflect.Type]bool{}
		for _, lv := range current {
			if visited[lv.typ] {
				continue
			}
			visited[lv.typ] = true
			for i := range lv.typ.NumField() {
				sf := lv.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if slices.Contains(strings.Split(opts, ","), "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						return nil, false
					}
				}
				steps := append(slices.Clip(lv.steps), step{off: sf.Offset})
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					cands = append(cands, candidate{name: name, tagged: tagged, depth: depth, order: len(cands), steps: steps, typ: sf.Type})
					continue
				}
				if sf.Type.Kind() == reflect.Pointer {
					if !sf.IsExported() {
						return nil, false
					}
					steps[len(steps)-1].elem = ft
				}
				if seen[ft] {
					return nil, false
				}
				seen[ft] = true
				next = append(next, level{typ: ft, steps: steps})
			}
		}
		current = next
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return a.order - b.order
	})
	var kept []candidate
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && cands[j].name == cands[i].name {
			j++
		}
		group := cands[i:j]
		i = j
		if len(group) > 1 && group[0].depth == group[1].depth && group[0].tagged == group[1].tagged {
			continue // no dominant field
		}
		kept = append(kept, group[0])
	}
	slices.SortFunc(kept, func(a, b candidate) int { return a.order - b.order })
	for _, c := range kept {
		fields = append(fields, &field{name: c.name, steps: c.steps, n: build(c.typ, building)})
	}
	return fields, true
}

// validTag reports whether s is a name encoding/json accepts in a tag.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// String describes n, for errors.
func (n *node) String() string { return fmt.Sprint(n.typ) }
