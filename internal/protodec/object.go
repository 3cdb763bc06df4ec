package protodec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/decopt"
	"github.com/kubetyped/informers/internal/share"
)

// Options configure a Decoder, as they configure every decoder of the
// library.
type Options = decopt.Options

// Decoder decodes objects of one API type from protobuf. It is safe for
// use by several goroutines, which it serializes: it remembers what it
// decoded, so that objects decoded later share it.
type Decoder struct {
	typ  reflect.Type // the object's struct type
	plan *message

	// metadata is the number of the field that holds the object's
	// metav1.ObjectMeta, which names an object that does not decode; 0
	// if the type has none.
	metadata int32

	mu    sync.Mutex
	root  *share.Place // nil: nothing shared or skipped
	d     decoder
	plain decoder
}

// Supports reports whether objects of type t, a pointer to a generated
// API struct, decode with a Decoder.
func Supports(t reflect.Type) bool {
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct &&
		isMessage(t.Elem()) && planFor(t.Elem()).codec == structCodec
}

// New returns a Decoder of objects of type t, a pointer to a generated API
// struct, such as *corev1.Pod.
func New(t reflect.Type, o Options) (*Decoder, error) {
	if !Supports(t) {
		return nil, fmt.Errorf("protodec: %v does not decode from protobuf", t)
	}
	dec := &Decoder{typ: t.Elem(), plan: planFor(t.Elem()), d: newDecoder(o.Share), plain: newDecoder(false)}
	dec.metadata = metadataField(dec.plan)
	if o.Share || len(o.Skip) > 0 {
		dec.root = &share.Place{}
	}
	if err := decopt.MarkSkipped(t, o.Skip, dec.markSkipped); err != nil {
		return nil, err
	}
	return dec, nil
}

// Decode decodes b, the encoding of one object, into the zero object at p.
func (dec *Decoder) Decode(p unsafe.Pointer, b []byte) error {
	dec.mu.Lock()
	defer dec.mu.Unlock()
	return finish(dec.d.message(dec.plan, dec.root, p, b), reflect.PointerTo(dec.typ))
}

// DecodePlain is Decode without sharing or skipping anything, for objects
// that are not cached, such as bookmarks.
func (dec *Decoder) DecodePlain(p unsafe.Pointer, b []byte) error {
	return finish(dec.plain.message(dec.plan, nil, p, b), reflect.PointerTo(dec.typ))
}

// EventDecoder returns the function that decodes the object of a watch
// event with dec into a new object made by newT: shared and skipped as
// dec says, but whole and on its own for a bookmark, which is not cached.
// An object that does not decode fails with its *decoded.Undecodable, if
// its metadata names it.
func EventDecoder[T any](dec *Decoder, newT func() T) decoded.EventFunc[T] {
	return func(data []byte, bookmark bool) (T, error) {
		var obj T
		var err error
		if bookmark {
			obj = newT()
			err = dec.DecodePlain(decoded.Pointer(obj), data)
		} else {
			obj, err = decoded.Object(dec, data, newT)
		}
		if err != nil {
			var zero T
			return zero, dec.orUndecodable(data, err)
		}
		return obj, nil
	}
}

// magic starts every object in kube-apiserver's protobuf envelope.
var magic = []byte{0x6b, 0x38, 0x73, 0x00}

// IsProtobuf reports whether body is in the protobuf envelope.
func IsProtobuf(body []byte) bool { return bytes.HasPrefix(body, magic) }

// Unwrap returns the kind and the encoding of the object in the protobuf
// envelope body: the magic prefix, then a runtime.Unknown with the
// object's TypeMeta (field 1: apiVersion 1, kind 2), its encoding (field
// 2) and its content encoding (field 3), which must be empty.
func Unwrap(body []byte) (kind, raw []byte, err error) {
	if !IsProtobuf(body) {
		return nil, nil, errors.New("not in the protobuf envelope")
	}
	err = EachBytesField(body[len(magic):], func(num int32, v []byte) error {
		switch num {
		case 1:
			return EachBytesField(v, func(num int32, v []byte) error {
				if num == 2 {
					kind = v
				}
				return nil
			})
		case 2:
			raw = v
		case 3:
			if len(v) > 0 {
				return fmt.Errorf("object in content encoding %q", v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("decoding the protobuf envelope: %w", err)
	}
	return kind, raw, nil
}

// EachBytesField calls fn with each length-delimited field of message b,
// and skips the others.
func EachBytesField(b []byte, fn func(num int32, v []byte) error) error {
	malformed := func(err error) error { return fmt.Errorf("malformed protobuf: %w", err) }
	for i := 0; i < len(b); {
		pre := i
		wire, next, err := uvarint(b, i)
		if err != nil {
			return malformed(err)
		}
		if wire&7 != wireBytes {
			if i, err = skipAt(b, pre, len(b)); err != nil {
				return malformed(err)
			}
			continue
		}
		s, e, err := span(b, next)
		if err != nil {
			return malformed(err)
		}
		if err := fn(int32(wire>>3), b[s:e]); err != nil {
			return err
		}
		i = e
	}
	return nil
}

var listMetaPlan = planFor(reflect.TypeFor[metav1.ListMeta]())

// DecodeList decodes body, a list response in the protobuf envelope whose
// kind must be listKind (PodList), into a List of new objects made by
// newT, which must make objects of the decoder's type. An item that does
// not decode is left out of the items and named in the list's
// Undecodable, if its metadata names it; else the list fails.
func DecodeList[T runtime.Object](dec *Decoder, body []byte, listKind string, newT func() T) (*decoded.List[T], error) {
	kind, raw, err := Unwrap(body)
	if err != nil {
		return nil, err
	}
	if string(kind) != listKind {
		return nil, &decoded.KindError{Got: string(kind), Want: listKind}
	}
	l := &decoded.List[T]{}
	if n, _ := runOf(raw, itemsStart(raw), 2); n > 0 {
		l.Items = make([]T, 0, n)
	}
	dec.mu.Lock()
	defer dec.mu.Unlock()
	err = EachBytesField(raw, func(num int32, v []byte) error {
		switch num {
		case 1:
			return dec.plain.message(listMetaPlan, nil, unsafe.Pointer(&l.ListMeta), v)
		case 2:
			obj := newT()
			if err := dec.d.message(dec.plan, dec.root, decoded.Pointer(obj), v); err != nil {
				err = finish(err, reflect.PointerTo(dec.typ))
				u := dec.undecodable(v, err)
				if u == nil {
					return fmt.Errorf("item %d: %w", len(l.Items)+len(l.Undecodable), err)
				}
				l.Undecodable = append(l.Undecodable, u)
				return nil
			}
			l.Items = append(l.Items, obj)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", listKind, err)
	}
	return l, nil
}

// itemsStart returns where the items (field 2) of list message b start,
// after its metadata (field 1).
func itemsStart(b []byte) int {
	wire, i, err := uvarint(b, 0)
	if err != nil || wire != 1<<3|wireBytes {
		return 0
	}
	_, e, err := span(b, i)
	if err != nil {
		return 0
	}
	return e
}
