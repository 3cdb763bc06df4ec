package jsondec

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	sigsjson "sigs.k8s.io/json"

	"github.com/kubetyped/informers/internal/share"
)

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// value decodes the JSON value that starts at b[i] into the value of
// plan n at p, and returns the index after it. It decodes as
// encoding/json decodes into the zero value, with sigs.k8s.io/json's
// options: case-sensitive names, integers of interface{} values as
// int64.
func (d *decoder) value(n *node, pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	c := b[i]
	switch n.kind {
	case kTime:
		end, err := d.time(n, p, b, i)
		if loc := d.local(b); loc != nil && err == nil && d.temporary == 0 {
			// A time held by pointer elsewhere in the object may be
			// this one.
			loc.Put(timeKind, d.sh.Hash(b[i:end]), i, end, share.Found{P: p, Interior: true})
		}
		return end, err
	case kMethod:
		end := skip(b, i)
		u := reflect.NewAt(n.typ, p).Interface().(json.Unmarshaler)
		if err := u.UnmarshalJSON(b[i:end]); err != nil {
			return 0, atOffset(err, i)
		}
		return end, nil
	case kFallback:
		end := skip(b, i)
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b[i:end], reflect.NewAt(n.typ, p).Interface()); err != nil {
			return 0, atOffset(err, i)
		}
		return end, nil
	case kAny:
		v, end, err := d.any(pl, b, i)
		if err != nil {
			return 0, err
		}
		*(*any)(p) = v
		return end, nil
	}
	if c == 'n' { // null: nil for pointers, maps and slices, else nothing
		switch n.kind {
		case kPointer, kMap:
			*(*unsafe.Pointer)(p) = nil
		case kSlice, kBytes:
			*(*sliceHeader)(p) = sliceHeader{}
		}
		return i + 4, nil
	}
	switch n.kind {
	case kString:
		if c != '"' {
			return 0, mismatch(b, i, n)
		}
		raw, end := readString(b, i)
		*(*string)(p) = d.str(pl, raw)
		return end, nil
	case kBool:
		if c != 't' && c != 'f' {
			return 0, mismatch(b, i, n)
		}
		*(*bool)(p) = c == 't'
		return literalEnd(b, i), nil
	case kInt, kUint, kFloat:
		if c != '-' && (c < '0' || c > '9') {
			return 0, mismatch(b, i, n)
		}
		end := literalEnd(b, i)
		if !setNumber(n, p, unsafeString(b[i:end])) {
			return 0, mismatch(b, i, n)
		}
		return end, nil
	case kStruct:
		if c != '{' {
			return 0, mismatch(b, i, n)
		}
		return d.object(n, pl, p, b, i)
	case kPointer:
		return d.pointer(n, pl, p, b, i)
	case kSlice, kBytes:
		if c == '"' && n.kind == kBytes {
			return d.base64(pl, p, b, i)
		}
		if c != '[' {
			return 0, mismatch(b, i, n)
		}
		return d.slice(n, pl, p, b, i)
	case kMap:
		if c != '{' {
			return 0, mismatch(b, i, n)
		}
		return d.mapping(n, pl, p, b, i)
	}
	return 0, mismatch(b, i, n)
}

// setNumber stores the number s at p as encoding/json does, and reports
// whether it fits.
func setNumber(n *node, p unsafe.Pointer, s string) bool {
	switch n.kind {
	case kInt:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || (n.bits < 64 && (v < -1<<(n.bits-1) || v >= 1<<(n.bits-1))) {
			return false
		}
		switch n.bits {
		case 8:
			*(*int8)(p) = int8(v)
		case 16:
			*(*int16)(p) = int16(v)
		case 32:
			*(*int32)(p) = int32(v)
		default:
			*(*int64)(p) = v
		}
	case kUint:
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || (n.bits < 64 && v >= 1<<n.bits) {
			return false
		}
		switch n.bits {
		case 8:
			*(*uint8)(p) = uint8(v)
		case 16:
			*(*uint16)(p) = uint16(v)
		case 32:
			*(*uint32)(p) = uint32(v)
		default:
			*(*uint64)(p) = v
		}
	case kFloat:
		v, err := strconv.ParseFloat(s, n.bits)
		if err != nil {
			return false
		}
		if n.bits == 32 {
			if math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
				return false
			}
			*(*float32)(p) = float32(v)
		} else {
			*(*float64)(p) = v
		}
	}
	return true
}

// object decodes a JSON object into the struct of plan n at p. A key met
// twice in one object makes the Decoder decode the whole object by
// encoding/json's rules instead (errDuplicate): encoding/json merges the
// second value into the first, which values shared between objects must
// never see.
func (d *decoder) object(n *node, pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	var seen [maxFields / 64]uint64
	j := ws(b, i+1)
	if b[j] == '}' {
		return j + 1, nil
	}
	for {
		key, vj := readKey(b, j)
		j = vj
		f := n.byName[unsafeString(key)]
		fpl := pl.Child(indexOf(f), len(n.fields), d.sh.On() && f != nil)
		if f == nil || fpl != nil && fpl.Skip {
			j = skip(b, j)
		} else {
			if seen[f.index/64]&(1<<(f.index%64)) != 0 {
				return 0, errDuplicate
			}
			seen[f.index/64] |= 1 << (f.index % 64)
			fp := p
			for _, s := range f.steps {
				fp = unsafe.Add(fp, s.off)
				if s.elem != nil {
					pp := (*unsafe.Pointer)(fp)
					if *pp == nil {
						*pp = reflect.New(s.elem).UnsafePointer()
					}
					fp = *pp
				}
			}
			var err error
			if j, err = d.value(f.n, fpl, fp, b, j); err != nil {
				return 0, inField(err, f.name)
			}
		}
		var last bool
		if j, last = nextMember(b, j); last {
			return j, nil
		}
	}
}

// indexOf returns the index of f, or 0 for no field.
func indexOf(f *field) int {
	if f == nil {
		return 0
	}
	return f.index
}

// timeKind is the kind by which the object's memory knows times, held by
// value or by pointer: a pointer to a time may point to an equal time the
// object holds by value.
var timeKind = unsafe.Pointer(new(byte))

// pointer decodes a value held by pointer: shared with an equal one met
// at pl if the decoder shares there, else into a new value.
func (d *decoder) pointer(n *node, pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	pp := (*unsafe.Pointer)(p)
	switch e := n.elem; e.kind {
	case kString:
		if b[i] == '"' {
			if t, loc := d.table(pl), d.localStrings(); t != nil || loc != nil {
				raw, end := readString(b, i)
				*(**string)(p) = d.sh.StrPtrLocal(t, loc, raw)
				return end, nil
			}
		}
	case kStruct, kSlice, kMap, kBytes, kTime, kMethod:
		if e.kind == kMethod && !e.pure {
			break
		}
		end := skip(b, i)
		kind := kindOf(n, pl)
		if e.kind == kTime {
			kind = timeKind
		}
		if v, hit, m, ok := d.lookup(pl, kind, b, i, end); ok {
			if hit {
				*pp = v.P
				return end, nil
			}
			q := reflect.New(e.typ).UnsafePointer()
			if _, err := d.value(e, pl.Elem(d.sh.On()), q, b, i); err != nil {
				return 0, err
			}
			*pp = q
			d.remember(m, share.Found{P: q})
			return end, nil
		}
	}
	if *pp == nil {
		*pp = reflect.New(n.elem.typ).UnsafePointer()
	}
	return d.value(n.elem, pl.Elem(d.sh.On()), *pp, b, i)
}

// slice decodes an array into a slice of its length, or shares it whole
// with an equal one met at pl.
func (d *decoder) slice(n *node, pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	h := (*sliceHeader)(p)
	count, end := countElements(b, i)
	v, hit, m, sharing := d.lookup(pl, kindOf(n, pl), b, i, end)
	if hit {
		*h = sliceHeader{v.P, v.N, v.C}
		return end, nil
	}
	s := reflect.MakeSlice(n.typ, count, count)
	*h = sliceHeader{s.UnsafePointer(), count, count}
	epl := pl.Elem(d.sh.On())
	size := n.elem.typ.Size()
	j := ws(b, i+1)
	for k := range count {
		var err error
		if j, err = d.value(n.elem, epl, unsafe.Add(h.data, uintptr(k)*size), b, j); err != nil {
			return 0, inElement(err, k)
		}
		j = ws(b, ws(b, j)+1) // past the comma or the bracket
	}
	if sharing {
		d.remember(m, share.Found{P: h.data, N: h.len, C: h.cap})
	}
	return end, nil
}

// base64 decodes a string into a byte slice as encoding/json does.
func (d *decoder) base64(pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	raw, end := readString(b, i)
	out := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(out, raw)
	if err != nil {
		return 0, atOffset(err, i)
	}
	var bs []byte
	if t := d.table(pl); t != nil {
		bs = d.sh.Bytes(t, out[:n])
	} else {
		bs = out[:n:n]
	}
	*(*[]byte)(p) = bs
	return end, nil
}

// mapping decodes an object into a map whose keys are strings.
func (d *decoder) mapping(n *node, pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	var m memo
	sharing := false
	if *(*unsafe.Pointer)(p) == nil {
		end := skip(b, i)
		var v share.Found
		var hit bool
		if v, hit, m, sharing = d.lookup(pl, kindOf(n, pl), b, i, end); hit {
			*(*unsafe.Pointer)(p) = v.P
			return end, nil
		}
	}
	kpl := pl.Key(d.sh.On())
	var end int
	var err error
	if n.stringMap {
		end, err = d.stringMap(pl, kpl, (*map[string]string)(p), b, i)
	} else {
		end, err = d.anyMap(n, pl, kpl, p, b, i)
	}
	if err == nil && sharing {
		d.remember(m, share.Found{P: *(*unsafe.Pointer)(p)})
	}
	return end, err
}

// stringMap decodes an object into a map[string]string.
func (d *decoder) stringMap(pl, kpl *share.Place, m *map[string]string, b []byte, i int) (int, error) {
	if *m == nil {
		*m = make(map[string]string)
	}
	j := ws(b, i+1)
	if b[j] == '}' {
		return j + 1, nil
	}
	for {
		key, vj := readKey(b, j)
		k := d.str(kpl, key)
		j = vj
		var v string
		var err error
		if j, err = d.value(stringNode, pl.Value(k, d.sh.On()), unsafe.Pointer(&v), b, j); err != nil {
			return 0, inField(err, k)
		}
		(*m)[k] = v
		var last bool
		if j, last = nextMember(b, j); last {
			return j, nil
		}
	}
}

var stringNode = &node{kind: kString, typ: reflect.TypeFor[string]()}

// anyMap decodes an object into a map of plan n, whose keys are of kind
// string, through reflection: each value into a zero element, then stored.
func (d *decoder) anyMap(n *node, pl, kpl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	m := reflect.NewAt(n.typ, p).Elem()
	if m.IsNil() {
		m.Set(reflect.MakeMap(n.typ))
	}
	elem := reflect.New(n.typ.Elem()).Elem()
	key := reflect.New(n.typ.Key()).Elem()
	j := ws(b, i+1)
	if b[j] == '}' {
		return j + 1, nil
	}
	for {
		raw, vj := readKey(b, j)
		k := d.str(kpl, raw)
		j = vj
		elem.SetZero()
		var err error
		d.temporary++ // elem is copied into the map, then reused
		j, err = d.value(n.elem, pl.Value(k, d.sh.On()), elem.Addr().UnsafePointer(), b, j)
		d.temporary--
		if err != nil {
			return 0, inField(err, k)
		}
		key.SetString(k)
		m.SetMapIndex(key, elem)
		var last bool
		if j, last = nextMember(b, j); last {
			return j, nil
		}
	}
}

// time decodes a metav1.Time as its UnmarshalJSON does, without the
// detour through encoding/json for a plain string.
func (d *decoder) time(n *node, p unsafe.Pointer, b []byte, i int) (int, error) {
	if b[i] == '"' {
		end, plain := stringEnd(b, i)
		if plain {
			t, err := time.Parse(time.RFC3339, unsafeString(b[i+1:end-1]))
			if err != nil {
				return 0, atOffset(err, i)
			}
			*(*time.Time)(p) = t.Local()
			return end, nil
		}
	}
	end := skip(b, i)
	u := reflect.NewAt(n.typ, p).Interface().(json.Unmarshaler)
	if err := u.UnmarshalJSON(b[i:end]); err != nil {
		return 0, atOffset(err, i)
	}
	return end, nil
}

// any decodes a value into an interface{} as sigs.k8s.io/json does:
// objects as map[string]interface{}, arrays as []interface{}, integers
// as int64, other numbers as float64. Keys and strings met at pl before
// are shared, and so are whole objects and arrays.
func (d *decoder) any(pl *share.Place, b []byte, i int) (any, int, error) {
	switch c := b[i]; c {
	case 'n':
		return nil, i + 4, nil
	case 't':
		return true, i + 4, nil
	case 'f':
		return false, i + 5, nil
	case '"':
		raw, end := readString(b, i)
		return d.anyString(pl, raw), end, nil
	case '{', '[':
		wpl := pl.Whole(d.sh.On()) // the place of the objects and arrays at pl
		var m memo
		sharing := false
		if d.sh.On() {
			end := skip(b, i)
			var v share.Found
			var hit bool
			if v, hit, m, sharing = d.lookup(wpl, anyKind, b, i, end); hit {
				if c == '{' {
					return *(*map[string]any)(unsafe.Pointer(&v.P)), end, nil
				}
				return box(sliceType, v.P), end, nil
			}
		}
		if c == '{' {
			m2, end, err := d.anyObject(pl, b, i, false)
			if err == nil && sharing {
				d.remember(m, share.Found{P: *(*unsafe.Pointer)(unsafe.Pointer(&m2))})
			}
			return m2, end, err
		}
		s, end, err := d.anyArray(pl, b, i)
		if err != nil || !sharing {
			return s, end, err
		}
		sp := &s // the slice boxed once, however often shared
		d.remember(m, share.Found{P: unsafe.Pointer(sp)})
		return box(sliceType, unsafe.Pointer(sp)), end, nil
	default:
		end := literalEnd(b, i)
		s := unsafeString(b[i:end])
		if !strings.Contains(s, ".") {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				return v, end, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, 0, &Error{Offset: i, Err: &json.UnmarshalTypeError{Value: "number " + s, Type: reflect.TypeFor[float64](), Offset: int64(i)}}
		}
		return f, end, nil
	}
}

// anyKind is the kind by which the object's memory knows the objects
// and arrays of interface{} values.
var anyKind = unsafe.Pointer(new(byte))

// anyString returns raw as a string in an interface{}: a boxed string
// shared with an equal one at pl or in the object, boxed once.
func (d *decoder) anyString(pl *share.Place, raw []byte) any {
	if len(raw) == 0 {
		return ""
	}
	t, loc := d.table(pl), d.localStrings()
	if t == nil && loc == nil {
		return string(raw)
	}
	return box(stringType, unsafe.Pointer(d.sh.StrPtrLocal(t, loc, raw)))
}

// eface is the layout of an interface{} value.
type eface struct {
	typ, data unsafe.Pointer
}

// typeWord returns the type word of v.
func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	stringType = typeWord("")
	sliceType  = typeWord([]any(nil))
)

// box returns the interface{} value of type typ (a type word) whose
// value is at data, which must hold a value of that type, never changed.
func box(typ, data unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, data
	return v
}

// anyObject decodes an object into a map[string]interface{}; top stops it
// with errList at a member named "items" (see Unstructured.Decode).
func (d *decoder) anyObject(pl *share.Place, b []byte, i int, top bool) (map[string]any, int, error) {
	m := make(map[string]any)
	kpl := pl.Key(d.sh.On())
	j := ws(b, i+1)
	if b[j] == '}' {
		return m, j + 1, nil
	}
	for {
		raw, vj := readKey(b, j)
		if top && string(raw) == "items" {
			return nil, 0, errList
		}
		k := d.str(kpl, raw)
		j = vj
		v, end, err := d.any(pl.Value(k, d.sh.On()), b, j)
		if err != nil {
			return nil, 0, inField(err, k)
		}
		m[k] = v
		var last bool
		if j, last = nextMember(b, end); last {
			return m, j, nil
		}
	}
}

// anyArray decodes an array into a []interface{} of its length.
func (d *decoder) anyArray(pl *share.Place, b []byte, i int) ([]any, int, error) {
	count, end := countElements(b, i)
	s := make([]any, count)
	epl := pl.Elem(d.sh.On())
	j := ws(b, i+1)
	for k := range count {
		v, e, err := d.any(epl, b, j)
		if err != nil {
			return nil, 0, inElement(err, k)
		}
		s[k] = v
		j = ws(b, ws(b, e)+1)
	}
	return s, end, nil
}
