package protodec

import (
	"fmt"
	"io"
	"reflect"
	"unsafe"

	"github.com/kubetyped/informers/internal/share"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// Every slice the decoder makes has its length as capacity, so that
// appending to it, should a later field of the same number come, makes a
// new array: slices may be shared between objects. For the same reason a
// map that already exists when more of its entries come is copied first,
// and a message held by pointer that comes again (the encoding merges it)
// is copied before it is decoded into.

// message decodes message m from b into the value at p, merging into what
// p holds, as the generated Unmarshal does; pl is the place of the value,
// or nil.
func (d *decoder) message(m *message, pl *share.Place, p unsafe.Pointer, b []byte) error {
	switch m.codec {
	case structCodec:
		if m.strings {
			// The generated code makes a message that is a slice, such
			// as authentication's ExtraValue, empty rather than nil.
			if h := (*sliceHeader)(p); h.data == nil {
				*(*[]string)(p) = []string{}
			}
		}
		return d.fields(m, pl, p, b)
	case timeCodec:
		return decodeTime(&(*metav1.Time)(p).Time, b, false)
	case microTimeCodec:
		return decodeTime(&(*metav1.MicroTime)(p).Time, b, true)
	case quantityCodec:
		return decodeQuantity((*resource.Quantity)(p), b)
	case fieldsV1Codec:
		return decodeFieldsV1((*metav1.FieldsV1)(p), b)
	}
	return reflect.NewAt(m.typ, p).Interface().(unmarshaler).Unmarshal(b)
}

// fields decodes the struct message m.
func (d *decoder) fields(m *message, pl *share.Place, p unsafe.Pointer, b []byte) error {
	l := len(b)
	i := 0
	for i < l {
		pre := i
		wire, next, err := uvarint(b, i)
		if err != nil {
			return err
		}
		i = next
		num, wt := int32(wire>>3), int(wire&7)
		if wt == wireEndGroup {
			return fmt.Errorf("proto: %s: wiretype end group for non-group", m.typ.Name())
		}
		if num <= 0 {
			return fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", m.typ.Name(), num, wire)
		}
		var f *field
		if int(num) < len(m.fields) {
			f = m.fields[num]
		}
		var fp *share.Place
		if f != nil {
			fp = pl.Child(int(num), len(m.fields), d.sh.On())
		}
		if f == nil || fp != nil && fp.Skip {
			if i, err = skipAt(b, pre, l); err != nil {
				return err
			}
			continue
		}
		if i, err = d.field(f, fp, unsafe.Add(p, f.off), b, pre, i, wt); err != nil {
			return inField(err, f)
		}
	}
	return nil
}

// field decodes one field of f's plan whose tag is at b[pre:] and whose
// value starts at b[i:], into the field at p, and returns where it ends.
func (d *decoder) field(f *field, pl *share.Place, p unsafe.Pointer, b []byte, pre, i, wt int) (int, error) {
	if wt != f.kind.wireType() && (wt != wireBytes || f.kind < kRepInt32 || f.kind > kRepBool) {
		return 0, wrongWireType(wt, f.name)
	}
	switch f.kind {
	case kString, kStringPtr, kBytes:
		s, e, err := span(b, i)
		if err != nil {
			return 0, err
		}
		switch f.kind {
		case kString:
			*(*string)(p) = d.str(pl, b[s:e])
		case kStringPtr:
			*(**string)(p) = d.strPtr(pl, b[s:e])
		default:
			*(*[]byte)(p) = d.bytes(pl, b[s:e])
		}
		return e, nil
	case kInt32, kInt64, kBool, kInt32Ptr, kInt64Ptr, kBoolPtr:
		v, e, err := uvarint(b, i)
		if err != nil {
			return 0, err
		}
		switch f.kind {
		case kInt32:
			*(*int32)(p) = int32(v)
		case kInt64:
			*(*int64)(p) = int64(v)
		case kBool:
			*(*bool)(p) = v != 0
		case kInt32Ptr:
			*(**int32)(p) = numPtr(d, pl, int32(v), uint64(uint32(v)))
		case kInt64Ptr:
			*(**int64)(p) = numPtr(d, pl, int64(v), v)
		default:
			*(**bool)(p) = numPtr(d, pl, v != 0, b2u(v != 0))
		}
		return e, nil
	case kRepInt32:
		return repeatedNumbers(b, i, wt, (*[]int32)(p), 0, func(v uint64) int32 { return int32(v) })
	case kRepInt64:
		return repeatedNumbers(b, i, wt, (*[]int64)(p), 0, func(v uint64) int64 { return int64(v) })
	case kRepBool:
		return repeatedNumbers(b, i, wt, (*[]bool)(p), 1, func(v uint64) bool { return v != 0 })
	case kMessage:
		s, e, err := span(b, i)
		if err != nil {
			return 0, err
		}
		return e, d.message(f.msg, pl, p, b[s:e])
	case kMessagePtr:
		return d.messagePtr(f, pl, p, b, i)
	case kRepString, kRepMessage:
		return d.slice(f, pl, (*sliceHeader)(p), b, pre)
	case kMap:
		return d.mapRun(f, pl, p, b, pre)
	}
	return 0, fmt.Errorf("protodec: field %s of unknown kind %d", f.name, f.kind)
}

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// messagePtr decodes a message held by pointer: shared with an equal one
// met at pl, or decoded into a new value; merged into a copy of the value
// the pointer holds, if it holds one.
func (d *decoder) messagePtr(f *field, pl *share.Place, p unsafe.Pointer, b []byte, i int) (int, error) {
	s, e, err := span(b, i)
	if err != nil {
		return 0, err
	}
	enc := b[s:e]
	ptr := (*unsafe.Pointer)(p)
	if *ptr != nil {
		c := reflect.New(f.elem)
		c.Elem().Set(reflect.NewAt(f.elem, *ptr).Elem())
		*ptr = c.UnsafePointer()
		return e, d.message(f.msg, pl, *ptr, enc)
	}
	var v share.Found
	var hit, ok bool
	var h uint64
	if !f.msg.small {
		v, hit, h, ok = d.lookup(pl, enc)
		if hit {
			*ptr = v.P
			return e, nil
		}
	}
	*ptr = reflect.New(f.elem).UnsafePointer()
	if err := d.message(f.msg, pl, *ptr, enc); err != nil {
		return 0, err
	}
	if ok {
		d.remember(pl, enc, h, share.Found{P: *ptr})
	}
	return e, nil
}

// runOf returns how many length-delimited fields of number num follow each
// other from b[pre:], and where they end.
func runOf(b []byte, pre int, num int32) (n, end int) {
	j := pre
	for j < len(b) {
		wire, k, err := uvarint(b, j)
		if err != nil || int32(wire>>3) != num || wire&7 != wireBytes {
			break
		}
		_, e, err := span(b, k)
		if err != nil {
			break
		}
		n, j = n+1, e
	}
	return n, j
}

// grow makes room in the slice at h, of type t, for n more elements, in a
// new array with no room left after them.
func grow(h *sliceHeader, t reflect.Type, n int) {
	if h.cap-h.len >= n {
		return
	}
	s := reflect.MakeSlice(t, h.len, h.len+n)
	if h.len > 0 {
		reflect.Copy(s, reflect.NewAt(t, unsafe.Pointer(h)).Elem())
	}
	*h = sliceHeader{s.UnsafePointer(), h.len, h.len + n}
}

// slice decodes the run of repeated fields of f that starts at b[pre:]:
// shared whole with an equal run met at pl, or decoded element by element
// into a slice of the run's length.
func (d *decoder) slice(f *field, pl *share.Place, h *sliceHeader, b []byte, pre int) (int, error) {
	n, end := runOf(b, pre, f.num)
	if n == 0 {
		// The first element is malformed: decode it to fail as the
		// generated code does.
		n, end = 1, len(b)
	}
	var v share.Found
	var hit, ok bool
	var hash uint64
	if h.len == 0 && end <= len(b) {
		v, hit, hash, ok = d.lookup(pl, b[pre:end])
		if hit {
			*h = sliceHeader{v.P, v.N, v.C}
			return end, nil
		}
	}
	fresh := h.len == 0
	grow(h, f.typ, n)
	var ep *share.Place
	if pl != nil {
		ep = pl.Elem(d.sh.On())
	}
	var size uintptr
	if f.kind == kRepMessage {
		size = f.elem.Size()
	}
	j := pre
	for k := range n {
		wire, next, err := uvarint(b, j)
		if err != nil {
			return 0, err
		}
		if k > 0 && (int32(wire>>3) != f.num || wire&7 != wireBytes) {
			break // cannot happen: runOf read the same
		}
		s, e, err := span(b, next)
		if err != nil {
			return 0, err
		}
		if h.len == h.cap {
			grow(h, f.typ, 1)
		}
		h.len++
		elem := unsafe.Add(h.data, uintptr(h.len-1)*size)
		if f.kind == kRepString {
			*(*string)(unsafe.Add(h.data, uintptr(h.len-1)*unsafe.Sizeof(""))) = d.str(ep, b[s:e])
		} else if err := d.element(f, ep, elem, b[s:e]); err != nil {
			return 0, inElement(err, int(h.len-1))
		}
		j = e
	}
	if ok && fresh && h.len == n && h.cap == n {
		d.remember(pl, b[pre:j], hash, share.Found{P: h.data, N: h.len, C: h.cap})
	}
	return j, nil
}

// element decodes an element of a slice of messages: a copy of an equal
// element met at pl, or decoded. Elements are never decoded into again,
// so pl may remember where they are.
func (d *decoder) element(f *field, pl *share.Place, p unsafe.Pointer, enc []byte) error {
	if f.msg.small {
		return d.message(f.msg, pl, p, enc)
	}
	v, hit, h, ok := d.lookup(pl, enc)
	if hit {
		reflect.NewAt(f.elem, p).Elem().Set(reflect.NewAt(f.elem, v.P).Elem())
		return nil
	}
	if err := d.message(f.msg, pl, p, enc); err != nil {
		return err
	}
	if ok {
		d.remember(pl, enc, h, share.Found{P: p})
	}
	return nil
}

// repeatedNumbers decodes one field of a repeated number, sent alone or
// packed, and appends to the slice at s. perByte says packed elements
// take one byte each (booleans); otherwise they are counted by the bytes
// that end a varint, as the generated code counts them.
func repeatedNumbers[N any](b []byte, i, wt int, s *[]N, perByte int, conv func(uint64) N) (int, error) {
	defer func() { *s = (*s)[:len(*s):len(*s)] }()
	if wt == wireVarint {
		v, e, err := uvarint(b, i)
		if err != nil {
			return 0, err
		}
		*s = append(*s, conv(v))
		return e, nil
	}
	n, i, err := uvarint(b, i)
	if err != nil {
		return 0, err
	}
	packedLen := int(n)
	if packedLen < 0 {
		return 0, errInvalidLength
	}
	end := i + packedLen
	if end < 0 {
		return 0, errInvalidLength
	}
	if end > len(b) {
		return 0, io.ErrUnexpectedEOF
	}
	count := packedLen
	if perByte == 0 {
		count = 0
		for _, c := range b[i:end] {
			if c < 0x80 {
				count++
			}
		}
	}
	if count != 0 && len(*s) == 0 {
		*s = make([]N, 0, count)
	}
	for i < end {
		v, next, err := uvarint(b, i)
		if err != nil {
			return 0, err
		}
		i = next
		*s = append(*s, conv(v))
	}
	return i, nil
}

// mapRun decodes the run of map entries of f that starts at b[pre:]: the
// map is shared whole with an equal run met at pl, or filled entry by
// entry.
func (d *decoder) mapRun(f *field, pl *share.Place, p unsafe.Pointer, b []byte, pre int) (int, error) {
	n, end := runOf(b, pre, f.num)
	if n == 0 {
		n = 1
	}
	m := (*unsafe.Pointer)(p)
	var v share.Found
	var hit, ok bool
	var hash uint64
	fresh := *m == nil
	if fresh && end > pre {
		v, hit, hash, ok = d.lookup(pl, b[pre:end])
		if hit {
			*m = v.P
			return end, nil
		}
		f.maps.make(p, n)
	} else if !fresh {
		f.maps.clone(p)
	}
	clean := true
	j := pre
	for k := range n {
		wire, next, err := uvarint(b, j)
		if err != nil {
			return 0, err
		}
		if k > 0 && (int32(wire>>3) != f.num || wire&7 != wireBytes) {
			break
		}
		s, e, err := span(b, next)
		if err != nil {
			return 0, err
		}
		within, err := d.mapEntry(f, pl, p, b, s, e)
		if err != nil {
			return 0, err
		}
		clean = clean && within
		j = e
	}
	if ok && fresh && clean {
		d.remember(pl, b[pre:j], hash, share.Found{P: *m})
	}
	return j, nil
}

// mapEntry decodes the map entry at b[start:end] into the map at p, as the
// generated code does: key and value are read against the end of the
// enclosing message, b, not of the entry, so that a malformed entry may
// read past its end; within says it did not.
func (d *decoder) mapEntry(f *field, pl *share.Place, p unsafe.Pointer, b []byte, start, end int) (within bool, err error) {
	var key, val []byte
	var msg unsafe.Pointer
	newValue := func() unsafe.Pointer {
		v := reflect.New(f.elem).UnsafePointer()
		if f.msg.strings {
			*(*[]string)(v) = []string{} // as the generated code's T{}
		}
		return v
	}
	if f.mapVal == kMessage {
		msg = newValue()
	}
	var vp *share.Place
	if pl != nil {
		vp = pl.Elem(d.sh.On())
	}
	within = true
	j := start
	for j < end {
		pre := j
		wire, next, err := uvarint(b, j)
		if err != nil {
			return false, err
		}
		j = next
		switch int32(wire >> 3) {
		case 1, 2:
			s, e, err := span(b, j)
			if err != nil {
				return false, err
			}
			within = within && e <= end
			j = e
			switch {
			case int32(wire>>3) == 1:
				key = b[s:e]
			case f.mapVal == kMessage:
				msg = newValue()
				if err := d.message(f.msg, vp, msg, b[s:e]); err != nil {
					if key != nil {
						return false, inKey(err, string(key))
					}
					return false, err
				}
			default:
				val = b[s:e]
			}
		default:
			if j, err = skipAt(b, pre, end); err != nil {
				return false, err
			}
		}
	}
	var kp *share.Place
	if pl != nil {
		kp = pl.Key(d.sh.On())
	}
	k := d.str(kp, key)
	switch f.mapVal {
	case kString:
		var s string
		if pl != nil {
			s = d.str(pl.Value(k, d.sh.On()), val)
		} else {
			s = string(val)
		}
		f.maps.set(p, k, unsafe.Pointer(&s))
	case kBytes:
		v := append([]byte{}, val...)
		v = v[:len(v):len(v)]
		f.maps.set(p, k, unsafe.Pointer(&v))
	default:
		f.maps.set(p, k, msg)
	}
	return within, nil
}

// scan reads the fields of message b, of type name, as the generated code
// does: fields of the numbers that fn decodes (known) go to fn, which
// decodes the value at b[i:] sent in wire type wt and returns where it
// ends; the others are skipped.
func scan(b []byte, name string, known func(num int32) bool, fn func(num int32, wt, i int) (int, error)) error {
	for i := 0; i < len(b); {
		pre := i
		wire, next, err := uvarint(b, i)
		if err != nil {
			return err
		}
		num, wt := int32(wire>>3), int(wire&7)
		if wt == wireEndGroup {
			return fmt.Errorf("proto: %s: wiretype end group for non-group", name)
		}
		if num <= 0 {
			return fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", name, num, wire)
		}
		if known(num) {
			i, err = fn(num, wt, next)
		} else {
			i, err = skipAt(b, pre, len(b))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
