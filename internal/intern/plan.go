package intern

import (
	"reflect"
	"unsafe"
)

// kind is what a node of a plan does with the value it describes.
type kind uint8

const (
	// opaque values are hashed and compared by their bytes and never
	// changed: numbers, booleans, and whatever the plan does not enter
	// (interfaces, channels, functions, and the pointers, slices and maps
	// of unexported fields, which may lead outside the object, such as a
	// time.Time's location).
	opaque kind = iota
	// str is a string, interned.
	str
	// strct is a struct, whose fields have nodes of their own.
	strct
	// array is a fixed-size array.
	array
	// slice, mapping and pointer are shared whole with an equal value
	// seen before, or else entered.
	slice
	mapping
	pointer
)

// node describes how to intern the values of one place in a type: a field
// path, such as Pod.Spec.Containers[].Image. Each place keeps its own
// statistics and table, so that a place whose values do not repeat (names,
// UIDs, IP addresses) is soon left alone while its neighbours are shared.
type node struct {
	kind   kind
	typ    reflect.Type
	size   uintptr
	fields []field // strct: every field, in order
	elem   *node   // array, slice, pointer: the element; mapping: the value
	key    *node   // mapping: the key
	len    int     // array
	// padded says the value has padding bytes, which copies of equal
	// values need not share: it is hashed and compared field by field.
	padded bool

	// ops hashes, compares and interns the maps of a mapping.
	ops mapOps
	// keyed holds the places of the values of each key of a
	// map[string]string; see valuePlace.
	keyed map[string]*place

	// hot is the place's sharing state; nil where nothing is shared
	// (opaque, strct, array).
	hot *place
}

// field is a struct field and its offset.
type field struct {
	off uintptr
	n   *node
}

// maxDepth bounds how deep a plan follows a recursive type (a JSON schema
// holds itself): below it, values are opaque.
const maxDepth = 24

// planFor returns the plan of the values of type t. exported says whether
// the path to t went only through exported fields: the plan enters
// pointers, slices and maps only then, and only strings otherwise.
func planFor(t reflect.Type, exported bool, depth int) *node {
	n := &node{kind: opaque, typ: t, size: t.Size()}
	if depth > maxDepth {
		return n
	}
	switch t.Kind() {
	case reflect.String:
		n.kind = str
		n.hot = newPlace()
	case reflect.Struct:
		n.kind = strct
		var size uintptr
		for i := range t.NumField() {
			f := t.Field(i)
			fn := planFor(f.Type, exported && f.IsExported(), depth+1)
			n.fields = append(n.fields, field{off: f.Offset, n: fn})
			n.padded = n.padded || fn.padded
			size += f.Type.Size()
		}
		n.padded = n.padded || size != t.Size()
	case reflect.Array:
		n.kind = array
		n.len = t.Len()
		n.elem = planFor(t.Elem(), exported, depth+1)
		n.padded = n.elem.padded
	case reflect.Slice:
		if exported {
			n.kind = slice
			n.elem = planFor(t.Elem(), exported, depth+1)
			n.hot = newPlace()
		}
	case reflect.Map:
		if exported {
			n.kind = mapping
			n.ops = opsFor(t)
			n.key = planFor(t.Key(), exported, depth+1)
			n.elem = planFor(t.Elem(), exported, depth+1)
			n.hot = newPlace()
		}
	case reflect.Pointer:
		if exported {
			n.kind = pointer
			n.elem = planFor(t.Elem(), exported, depth+1)
			n.hot = newPlace()
		}
	}
	if n.kind == strct || n.kind == array {
		n.flatten()
	}
	return n
}

// flatten makes a struct or array that holds only opaque values, and no
// padding, opaque itself, so that it is hashed and compared in one piece.
func (n *node) flatten() {
	if n.padded {
		return
	}
	if n.kind == array && n.elem.kind == opaque {
		n.kind, n.elem = opaque, nil
		return
	}
	for _, f := range n.fields {
		if f.n.kind != opaque {
			return
		}
	}
	if n.kind == strct {
		n.kind, n.fields = opaque, nil
	}
}

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}
