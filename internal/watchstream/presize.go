package watchstream

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kubetyped/informers/internal/protodec"
)

// The generated Unmarshal methods append a repeated field's elements one
// by one, so a slice of n elements is allocated ⌈log2 n⌉+1 times, and the
// last allocation is kept with its unused capacity: a pod's conditions,
// volumes and container statuses grow through 1, 2, 4 and 8 elements.
// Before Unmarshal, a sizePlan counts the elements in the encoding and
// makes each slice with the capacity it will need; Unmarshal then appends
// into it. It reaches the slices of the object and of the structs it holds
// by value (a pod's metadata, spec and status), not those inside slice
// elements, which Unmarshal makes itself.

// sizePlan is what presizing does for one struct type: its fields by
// protobuf field number.
type sizePlan struct {
	fields []sizeField
}

// sizeField is the presizing of one field.
type sizeField struct {
	kind sizeKind
	off  uintptr
	typ  reflect.Type // repeated and mapped: the field's type
	plan *sizePlan    // nested: the plan of the struct held
}

type sizeKind uint8

const (
	sizeNone     sizeKind = iota
	sizeRepeated          // a slice of messages or strings
	sizeMapped            // a map
	sizeNested            // a struct held by value
)

// mapGroup is how many entries a map holds before it first grows: smaller
// maps gain nothing from a size hint.
const mapGroup = 8

// maxCountedFields bounds the field numbers whose elements presize counts
// without allocating.
const maxCountedFields = 64

var sizePlans sync.Map // reflect.Type → *sizePlan

// sizePlanFor returns the plan of struct type t, or nil if it has nothing
// to presize.
func sizePlanFor(t reflect.Type) *sizePlan {
	if p, ok := sizePlans.Load(t); ok {
		return p.(*sizePlan)
	}
	p, _ := sizePlans.LoadOrStore(t, buildSizePlan(t))
	return p.(*sizePlan)
}

// buildSizePlan returns the plan of struct type t, nil if it has nothing to
// presize; the structs it holds by value share their plans through
// sizePlanFor. A struct cannot hold itself by value, so the recursion
// ends.
func buildSizePlan(t reflect.Type) *sizePlan {
	var p sizePlan
	for i := range t.NumField() {
		f := t.Field(i)
		num, ok := protobufBytesField(f.Tag.Get("protobuf"))
		if !ok || num >= maxCountedFields {
			continue
		}
		var sf sizeField
		switch {
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() != reflect.Uint8:
			sf = sizeField{kind: sizeRepeated, off: f.Offset, typ: f.Type}
		case f.Type.Kind() == reflect.Map:
			sf = sizeField{kind: sizeMapped, off: f.Offset, typ: f.Type}
		case f.Type.Kind() == reflect.Struct:
			sub := sizePlanFor(f.Type)
			if sub == nil {
				continue
			}
			sf = sizeField{kind: sizeNested, off: f.Offset, plan: sub}
		default:
			continue
		}
		if len(p.fields) <= num {
			p.fields = append(p.fields, make([]sizeField, num+1-len(p.fields))...)
		}
		p.fields[num] = sf
	}
	if p.fields == nil {
		return nil
	}
	return &p
}

// protobufBytesField returns the field number in a generated struct tag
// of a length-delimited field, such as `bytes,2,rep,name=containers`. Some
// repeated fields are tagged "opt": the Go type tells them.
func protobufBytesField(tag string) (num int, ok bool) {
	n, err := protodec.TagNumber(tag)
	if !strings.HasPrefix(tag, "bytes,") || err != nil {
		return 0, false
	}
	return int(n), true
}

// presize gives the slices and maps of the zero struct at base the
// capacity that b, its encoding, asks for. A malformed encoding stops it
// where it is: Unmarshal reports the error.
func (p *sizePlan) presize(base unsafe.Pointer, b []byte) {
	var counts [maxCountedFields]int32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if int(num) >= len(p.fields) {
			continue
		}
		f := &p.fields[num]
		switch f.kind {
		case sizeRepeated, sizeMapped:
			counts[num]++
		case sizeNested:
			if counts[num] == 0 { // a message sent twice merges: the first one sizes it
				f.plan.presize(unsafe.Add(base, f.off), v)
			}
			counts[num]++
		}
	}
	for num, c := range counts[:len(p.fields)] {
		f := &p.fields[num]
		switch {
		case f.kind == sizeRepeated && c > 1:
			reflect.NewAt(f.typ, unsafe.Add(base, f.off)).Elem().Grow(int(c))
		case f.kind == sizeMapped && c > mapGroup:
			reflect.NewAt(f.typ, unsafe.Add(base, f.off)).Elem().Set(reflect.MakeMapWithSize(f.typ, int(c)))
		}
	}
}
