package decoded

import (
	"reflect"
	"unsafe"
)

// Into is a decoder of the objects of one Go type, such as protodec's and
// jsondec's Decoder: Decode decodes b, the encoding of one object, into
// the zero object at p.
type Into interface {
	Decode(p unsafe.Pointer, b []byte) error
}

// Object decodes b with dec into a new object made by newT, which must
// make objects of the decoder's type.
func Object[T any](dec Into, b []byte, newT func() T) (T, error) {
	obj := newT()
	if err := dec.Decode(Pointer(obj), b); err != nil {
		var zero T
		return zero, err
	}
	return obj, nil
}

// Pointer returns the address that obj holds: obj is a pointer, or an
// interface (runtime.Object, client.Object) that holds one.
func Pointer[T any](obj T) unsafe.Pointer {
	return reflect.ValueOf(any(obj)).UnsafePointer()
}
