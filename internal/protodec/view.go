package protodec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/kubetyped/informers/internal/decopt"
	"github.com/kubetyped/informers/internal/share"
	"github.com/kubetyped/informers/internal/wording"
)

// A view is a Go struct that a user declares with the fields of an API
// type they read, under the same JSON names: nested structs, slices, maps
// and pointers of their own, or the API's own types (metav1.Time,
// resource.Quantity, corev1.PodCondition...). A view is decoded straight
// from the API type's protobuf by a plan of the same structure as the API
// type's (plan.go), built from both types: each field of the view is
// paired with the field of the API type of the same JSON name, and takes
// its field number and wire kind from it, and its offset and Go type from
// the view. A field of the API type that the view lacks has no place in
// the plan, so that the decoder skips it on the wire, never building it.
// Where a view's field has the API field's own type, the API type's plan
// serves it whole.

// viewKey names the plan of a view struct type of an API struct type.
type viewKey struct{ view, api reflect.Type }

var (
	viewPlans sync.Map // viewKey → *message
	// viewMu serializes the building of view plans, which may refer to
	// each other. It is taken before planMu, never after.
	viewMu sync.Mutex
)

// NewView returns a Decoder of views of type view, a pointer to a struct
// whose fields name fields of api, a pointer to a generated API struct
// such as *corev1.Pod, by their JSON names. It fails, naming the field, if
// view has a field that api has not, or of a kind api's cannot be decoded
// into; o.Skip names fields by the view's JSON paths.
func NewView(view, api reflect.Type, o Options) (*Decoder, error) {
	m, err := viewPlan(view, api)
	if err != nil {
		return nil, err
	}
	dec := &Decoder{typ: view.Elem(), plan: m, d: newDecoder(o.Share), plain: newDecoder(false)}
	// The bytes are api's: its metadata names an object that does not
	// decode into the view.
	dec.metadata = metadataField(planFor(api.Elem()))
	if o.Share || len(o.Skip) > 0 {
		dec.root = &share.Place{}
	}
	if err := decopt.MarkSkipped(view, o.Skip, dec.markSkipped); err != nil {
		return nil, err
	}
	return dec, nil
}

// CheckView reports why view, a pointer to a struct, is not a view of
// api, a pointer to a generated API struct: the first field of view that
// api has not, or of a kind that api's cannot be decoded into. It returns
// nil if view is a view of api.
func CheckView(view, api reflect.Type) error {
	_, err := viewPlan(view, api)
	return err
}

// viewPlan checks that view, a pointer to a struct, is a view of api, a
// pointer to a generated API struct, and returns the plan that decodes
// it, made once per pair of types.
func viewPlan(view, api reflect.Type) (*message, error) {
	if !Supports(api) {
		return nil, fmt.Errorf("protodec: %v does not decode from protobuf", api)
	}
	if view == nil || view.Kind() != reflect.Pointer || view.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("protodec: view %v is not a pointer to a struct", view)
	}
	key := viewKey{view.Elem(), api.Elem()}
	if m, ok := viewPlans.Load(key); ok {
		return m.(*message), nil
	}
	viewMu.Lock()
	defer viewMu.Unlock()
	b := viewBuilder{building: map[viewKey]*message{}}
	m, err := b.plan(view.Elem(), api.Elem(), view.Elem().Name())
	if err != nil {
		return nil, fmt.Errorf("view %v of %v: %w", view, api, err)
	}
	for k, p := range b.building {
		viewPlans.LoadOrStore(k, p)
	}
	return m, nil
}

// viewBuilder builds the plans of a view and of the view structs it
// holds; building holds the plans under construction, found again by
// types that hold themselves.
type viewBuilder struct {
	building map[viewKey]*message
}

// viewField is a field of a view struct, found as encoding/json finds
// it: through embedded structs, at its offset from the struct's start.
type viewField = decopt.Field

// plan returns the plan of view struct type view as a view of api, a
// message type; path is the Go path of the view's values, for errors.
func (b *viewBuilder) plan(view, api reflect.Type, path string) (*message, error) {
	if view == api {
		return planFor(api), nil
	}
	am := planFor(api)
	if am.codec != structCodec || am.strings || view.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is %s, which must be %s", path, wording.A(view.String()), wording.A(api.String()))
	}
	key := viewKey{view, api}
	if m, ok := viewPlans.Load(key); ok {
		return m.(*message), nil
	}
	if m, ok := b.building[key]; ok {
		return m, nil
	}
	m := &message{typ: view, codec: structCodec}
	b.building[key] = m
	fields, err := viewFields(view, path)
	if err != nil {
		return nil, err
	}
	if err := b.fill(m, fields, am); err != nil {
		return nil, err
	}
	return m, nil
}

// fill sets the fields of m, the plan of a view struct, to fields, those
// of the view named in the API message am. A field that am holds inline
// (a VolumeSource in a Volume) goes to a message of its own that the
// inline field's number decodes into the view struct itself: JSON names
// no inline field, protobuf does.
func (b *viewBuilder) fill(m *message, fields []viewField, am *message) error {
	var inline []*field // am's inline fields that lead to view fields, in order met
	through := map[*field][]viewField{}
	for _, vf := range fields {
		chain := am.lookup(vf.JSON)
		if chain == nil {
			return fmt.Errorf("%s: %v has no field %q%s", vf.GoPath, am.typ, vf.JSON, suggest(am, vf.JSON))
		}
		if len(chain) > 1 {
			if through[chain[0]] == nil {
				inline = append(inline, chain[0])
			}
			through[chain[0]] = append(through[chain[0]], vf)
			continue
		}
		f, err := b.field(vf, chain[0])
		if err != nil {
			return err
		}
		if err := m.add(f); err != nil {
			return err
		}
	}
	for _, in := range inline {
		sub := &message{typ: m.typ, codec: structCodec}
		if err := b.fill(sub, through[in], in.msg); err != nil {
			return err
		}
		f := &field{num: in.num, kind: kMessage, name: in.name, typ: m.typ, msg: sub}
		if err := m.add(f); err != nil {
			return err
		}
	}
	m.small = true
	for _, f := range m.list {
		switch f.kind {
		case kInt32, kInt64, kBool:
		case kMessage:
			m.small = m.small && f.msg.small
		default:
			m.small = false
		}
	}
	return nil
}

// add adds f to the fields of m.
func (m *message) add(f *field) error {
	if int(f.num) >= len(m.fields) {
		m.fields = append(m.fields, make([]*field, int(f.num)+1-len(m.fields))...)
	}
	if m.fields[f.num] != nil {
		return fmt.Errorf("%v: field number %d twice", m.typ, f.num)
	}
	m.fields[f.num] = f
	m.list = append(m.list, f)
	return nil
}

// suggest returns a hint naming the field of am whose JSON name is
// closest to name, if one is close enough (decopt.DidYouMean): JSON names
// are case-sensitive, and a field without a json tag is named as it is
// spelled in Go.
func suggest(am *message, name string) string {
	names := make([]string, 0, len(am.list))
	for _, f := range am.list {
		names = append(names, f.json)
	}
	return decopt.DidYouMean(name, names)
}

var jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// ownJSON reports whether the values of t have a JSON encoding of their
// own (metav1.Time, resource.Quantity, intstr.IntOrString...), which a
// view can only hold in t itself.
func ownJSON(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(jsonUnmarshalerType)
}

// field returns the plan of view field vf, decoded as api field af.
func (b *viewBuilder) field(vf viewField, af *field) (*field, error) {
	vt := vf.Type
	f := &field{num: af.num, off: vf.Offset, name: vf.GoPath, json: vf.JSON, typ: vt}
	if vt == af.typ {
		f.kind, f.msg, f.elem, f.mapVal, f.maps = af.kind, af.msg, af.elem, af.mapVal, af.maps
		return f, nil
	}
	mismatch := func() error {
		return fmt.Errorf("%s is %s, which cannot hold %s %v", vf.GoPath, wording.A(vt.String()), wording.Possessive(vf.JSON), af.typ)
	}
	// The API type whose values the view's values are: the field's, or
	// its elements' or its map values'.
	api := af.typ
	if af.elem != nil {
		api = af.elem
	}
	if ownJSON(api) && base(vt) != api {
		return nil, fmt.Errorf("%s is %s, which must hold %s %v, whose JSON is its own", vf.GoPath, wording.A(vt.String()), wording.Possessive(vf.JSON), api)
	}
	f.kind = af.kind
	switch af.kind {
	case kString, kInt32, kInt64, kBool:
		if vt.Kind() != af.typ.Kind() {
			return nil, mismatch()
		}
	case kStringPtr, kInt32Ptr, kInt64Ptr, kBoolPtr:
		if vt.Kind() != reflect.Pointer || vt.Elem().Kind() != af.elem.Kind() {
			return nil, mismatch()
		}
		f.elem = vt.Elem()
	case kBytes:
		if vt.Kind() != reflect.Slice || vt.Elem().Kind() != reflect.Uint8 {
			return nil, mismatch()
		}
	case kRepString, kRepInt32, kRepInt64, kRepBool:
		if vt.Kind() != reflect.Slice || vt.Elem().Kind() != af.elem.Kind() {
			return nil, mismatch()
		}
		f.elem = vt.Elem()
	case kMessage, kMessagePtr:
		var err error
		switch {
		case vt.Kind() == reflect.Struct:
			f.kind = kMessage
			f.msg, err = b.plan(vt, af.msg.typ, vf.GoPath)
		case vt.Kind() == reflect.Pointer && vt.Elem().Kind() == reflect.Struct:
			f.kind, f.elem = kMessagePtr, vt.Elem()
			f.msg, err = b.plan(vt.Elem(), af.msg.typ, vf.GoPath)
		default:
			return nil, mismatch()
		}
		if err != nil {
			return nil, err
		}
	case kRepMessage:
		if vt.Kind() != reflect.Slice {
			return nil, mismatch()
		}
		f.elem = vt.Elem()
		msg, err := b.plan(vt.Elem(), af.elem, vf.GoPath+"[]")
		if err != nil {
			return nil, err
		}
		f.msg = msg
	case kMap:
		if vt.Kind() != reflect.Map || vt.Key().Kind() != reflect.String {
			return nil, mismatch()
		}
		v := vt.Elem()
		switch af.mapVal {
		case kString:
			if v.Kind() != reflect.String {
				return nil, mismatch()
			}
		case kBytes:
			if v.Kind() != reflect.Slice || v.Elem().Kind() != reflect.Uint8 {
				return nil, mismatch()
			}
		default:
			msg, err := b.plan(v, af.elem, vf.GoPath+"[]")
			if err != nil {
				return nil, err
			}
			f.msg = msg
		}
		f.mapVal, f.elem, f.maps = af.mapVal, v, mapOpsFor(vt)
	default:
		return nil, mismatch()
	}
	return f, nil
}

// base returns the type of the values t holds: t's elements if it is a
// pointer, a slice or a map, or t.
func base(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return t.Elem()
	}
	return t
}

// viewFields returns the fields of view struct t by their JSON names, as
// encoding/json finds them: exported fields, and the fields of embedded
// structs without a JSON name, the shallower of two of the same name
// winning. TypeMeta is left out: it is not encoded in protobuf. path is
// t's Go path, for errors.
func viewFields(t reflect.Type, path string) ([]viewField, error) {
	fields, err := decopt.Fields(t, path, func(sf reflect.StructField, goPath string) (bool, error) {
		switch {
		case sf.Type.Kind() == reflect.Pointer:
			return false, fmt.Errorf("%s: a view cannot embed a pointer", goPath)
		case sf.Name == "TypeMeta":
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return fields, nil
}
