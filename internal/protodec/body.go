package protodec

import (
	"bytes"
	"io"
	"reflect"
	"sync"
)

// bodies holds the buffers that responses are read into, so that the
// pages of a sync are read into the same memory.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ReadBody reads r, a response body, whole and calls fn with it. The bytes
// are valid only during fn: the buffer is reused.
func ReadBody(r io.Reader, fn func(body []byte) error) error {
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		buf.Reset()
		bodies.Put(buf)
	}()
	if _, err := buf.ReadFrom(r); err != nil {
		return err
	}
	return fn(buf.Bytes())
}

// EventDecoder returns the function that decodes the object of a watch
// event with dec into a new object made by newT: shared and skipped as
// dec says, but whole and on its own for a bookmark, which is not cached.
func EventDecoder[T any](dec *Decoder, newT func() T) func(data []byte, bookmark bool) (T, error) {
	return func(data []byte, bookmark bool) (T, error) {
		if bookmark {
			obj := newT()
			return obj, dec.DecodePlain(reflect.ValueOf(any(obj)).UnsafePointer(), data)
		}
		return Object(dec, data, newT)
	}
}
