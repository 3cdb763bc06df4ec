package protodec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A plan says how to decode one Go type from protobuf: for a generated
// struct, each field by its number, kind and offset, all read from the
// `protobuf:` struct tags; for the types whose encoding is written by hand
// (times, quantities, FieldsV1), a codec of their own. Plans are made once
// per type and shared by every decoder.

// codec is how a message type is decoded.
type codec uint8

const (
	// structCodec decodes the fields of the plan.
	structCodec codec = iota
	// timeCodec decodes a metav1.Time or metav1.MicroTime from a
	// Timestamp, as their hand-written Unmarshal methods do.
	timeCodec
	microTimeCodec
	// quantityCodec parses a resource.Quantity from its string.
	quantityCodec
	// fieldsV1Codec sets a metav1.FieldsV1's raw bytes.
	fieldsV1Codec
	// delegateCodec calls the type's own Unmarshal method: the way out
	// for a shape the plans do not know, should one appear.
	delegateCodec
)

// message is the plan of a message type.
type message struct {
	typ    reflect.Type
	codec  codec
	fields []*field // by field number; nil where the type has none
	list   []*field // in declaration order
	// strings says the message is a named slice of strings.
	strings bool
	// small says a value is cheaper to decode than to look up: numbers
	// and times, but no string, slice, map or pointer.
	small bool
}

// kind is how a field is decoded.
type kind uint8

const (
	kString kind = iota + 1
	kStringPtr
	kBytes
	kInt32
	kInt64
	kBool
	kInt32Ptr
	kInt64Ptr
	kBoolPtr
	kRepString
	kRepInt32
	kRepInt64
	kRepBool
	kMessage    // a message held by value
	kMessagePtr // a pointer to a message
	kRepMessage // a slice of messages
	kMap        // a map from strings to strings, bytes or messages
)

// field is the plan of one field.
type field struct {
	num    int32
	kind   kind
	off    uintptr
	name   string       // the Go name, for errors
	json   string       // the JSON name, for field paths; "" if inline
	typ    reflect.Type // the field's Go type
	msg    *message     // message kinds and maps of messages: the message
	elem   reflect.Type // repeated kinds: the element type; maps: the value type
	mapVal kind         // maps: kString, kBytes or kMessage
	maps   *mapOps      // maps: how to fill one
}

var plans sync.Map // reflect.Type → *message

// planFor returns the plan of message type t.
func planFor(t reflect.Type) *message {
	if m, ok := plans.Load(t); ok {
		return m.(*message)
	}
	planMu.Lock()
	defer planMu.Unlock()
	building := map[reflect.Type]*message{}
	m := build(t, building)
	for typ, p := range building {
		plans.LoadOrStore(typ, p)
	}
	got, _ := plans.Load(t)
	_ = m
	return got.(*message)
}

// planMu serializes the building of plans, which may refer to each other.
var planMu sync.Mutex

// The types with hand-written encodings.
var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	quantityType  = reflect.TypeFor[resource.Quantity]()
	fieldsV1Type  = reflect.TypeFor[metav1.FieldsV1]()
)

// unmarshaler is implemented by every message type of the API.
type unmarshaler interface {
	Unmarshal([]byte) error
}

var unmarshalerType = reflect.TypeFor[unmarshaler]()

// isMessage reports whether values of t are messages: *t decodes itself.
func isMessage(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(unmarshalerType)
}

// build returns the plan of message type t, adding it and the plans it
// needs to building, where the plans under construction are found again
// by types that hold themselves.
func build(t reflect.Type, building map[reflect.Type]*message) *message {
	if m, ok := plans.Load(t); ok {
		return m.(*message)
	}
	if m, ok := building[t]; ok {
		return m
	}
	m := &message{typ: t}
	building[t] = m
	switch t {
	case timeType:
		m.codec, m.small = timeCodec, true
		return m
	case microTimeType:
		m.codec, m.small = microTimeCodec, true
		return m
	case quantityType:
		m.codec = quantityCodec
		return m
	case fieldsV1Type:
		m.codec = fieldsV1Codec
		return m
	}
	var err error
	switch t.Kind() {
	case reflect.Struct:
		err = m.buildStruct(building)
	case reflect.Slice:
		// A named slice of strings with a message of its own, such as
		// authentication's ExtraValue: its items are field 1.
		if t.Elem().Kind() != reflect.String {
			err = fmt.Errorf("slice message %v", t)
			break
		}
		f := &field{num: 1, kind: kRepString, name: "Items", typ: t, elem: t.Elem()}
		m.fields = []*field{nil, f}
		m.list = []*field{f}
		m.strings = true
	default:
		err = fmt.Errorf("message of kind %v", t.Kind())
	}
	if err != nil {
		m.codec, m.fields, m.list = delegateCodec, nil, nil
	}
	return m
}

// buildStruct fills the fields of m, a generated struct, from their tags.
func (m *message) buildStruct(building map[reflect.Type]*message) error {
	t := m.typ
	small := true
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("protobuf")
		if tag == "" {
			// TypeMeta is not encoded; neither is a RawExtension's Object.
			if sf.Anonymous && sf.Name == "TypeMeta" || sf.Type.Kind() == reflect.Interface {
				continue
			}
			return fmt.Errorf("%v.%s has no protobuf tag", t, sf.Name)
		}
		num, err := TagNumber(tag)
		if err != nil {
			return fmt.Errorf("%v.%s: %w", t, sf.Name, err)
		}
		f := &field{num: num, off: sf.Offset, name: sf.Name, typ: sf.Type}
		f.json, _, _ = strings.Cut(sf.Tag.Get("json"), ",")
		if err := f.classify(building); err != nil {
			return fmt.Errorf("%v.%s: %w", t, sf.Name, err)
		}
		switch f.kind {
		case kInt32, kInt64, kBool:
		case kMessage:
			small = small && f.msg.small
		default:
			small = false
		}
		if int(num) >= len(m.fields) {
			if num > maxFieldNumber {
				return fmt.Errorf("%v.%s: field number %d", t, sf.Name, num)
			}
			m.fields = append(m.fields, make([]*field, int(num)+1-len(m.fields))...)
		}
		if m.fields[num] != nil {
			return fmt.Errorf("%v: field number %d twice", t, num)
		}
		m.fields[num] = f
		m.list = append(m.list, f)
	}
	m.small = small
	return nil
}

// maxFieldNumber bounds the field numbers of a plan, which is a slice
// indexed by them.
const maxFieldNumber = 1 << 12

// TagNumber returns the field number of a protobuf struct tag such as
// "bytes,2,rep,name=containers". The kind word of the tag is not trusted:
// the Go type tells how a field is encoded.
func TagNumber(tag string) (int32, error) {
	_, rest, _ := strings.Cut(tag, ",")
	digits, _, _ := strings.Cut(rest, ",")
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 || n >= 1<<29 {
		return 0, fmt.Errorf("bad protobuf tag %q", tag)
	}
	return int32(n), nil
}

// classify sets how f is decoded from its Go type.
func (f *field) classify(building map[reflect.Type]*message) error {
	t := f.typ
	if isMessage(t) {
		f.kind, f.msg = kMessage, build(t, building)
		return nil
	}
	if k, ok := scalarKinds[t.Kind()]; ok {
		f.kind = k.value
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		e := t.Elem()
		f.elem = e
		if isMessage(e) {
			f.kind, f.msg = kMessagePtr, build(e, building)
			break
		}
		k, ok := scalarKinds[e.Kind()]
		if !ok {
			return fmt.Errorf("pointer to %v", e)
		}
		f.kind = k.ptr
	case reflect.Slice:
		e := t.Elem()
		f.elem = e
		switch k, ok := scalarKinds[e.Kind()]; {
		case isMessage(e):
			f.kind, f.msg = kRepMessage, build(e, building)
		case e.Kind() == reflect.Uint8:
			f.kind = kBytes
		case ok:
			f.kind = k.rep
		default:
			return fmt.Errorf("slice of %v", e)
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("map key %v", t.Key())
		}
		v := t.Elem()
		f.kind, f.elem = kMap, v
		switch {
		case isMessage(v):
			f.mapVal, f.msg = kMessage, build(v, building)
		case v.Kind() == reflect.String:
			f.mapVal = kString
		case v.Kind() == reflect.Slice && v.Elem().Kind() == reflect.Uint8:
			f.mapVal = kBytes
		default:
			return fmt.Errorf("map value %v", v)
		}
		f.maps = mapOpsFor(t)
	default:
		return fmt.Errorf("type %v", t)
	}
	return nil
}

// scalarKinds are the kinds of fields of strings, numbers and booleans:
// held by value, by pointer, or repeated.
var scalarKinds = map[reflect.Kind]struct{ value, ptr, rep kind }{
	reflect.String: {kString, kStringPtr, kRepString},
	reflect.Int32:  {kInt32, kInt32Ptr, kRepInt32},
	reflect.Int64:  {kInt64, kInt64Ptr, kRepInt64},
	reflect.Bool:   {kBool, kBoolPtr, kRepBool},
}

// wireType returns the wire type a field of kind k is sent in; repeated
// numbers may also come packed.
func (k kind) wireType() int {
	switch k {
	case kInt32, kInt64, kBool, kInt32Ptr, kInt64Ptr, kBoolPtr, kRepInt32, kRepInt64, kRepBool:
		return wireVarint
	}
	return wireBytes
}
