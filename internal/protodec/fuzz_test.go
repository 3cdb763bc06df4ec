package protodec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
)

// fuzzTypes are the types FuzzDecoder decodes into, chosen by the first
// two bytes of its input.
var fuzzTypes = messageTypes()

// FuzzDecoder decodes arbitrary bytes as one of the scheme's types, with
// sharing on or off, and checks that it never panics, fails where the
// generated Unmarshal fails (or panics), and otherwise decodes the same
// object. Its seeds are random objects of a few types, whole, cut short
// and with a byte changed; `go test` runs them.
func FuzzDecoder(f *testing.F) {
	for n, typ := range fuzzTypes {
		if n%7 != 0 {
			continue
		}
		in := reflect.New(typ).Interface().(protoMessage)
		newFiller(uint64(n)).Fill(in)
		data, err := in.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		for _, b := range [][]byte{data, data[:len(data)/2], flip(data, len(data)/3)} {
			f.Add(append(binary.BigEndian.AppendUint16(nil, uint16(n)), b...), n%2 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, input []byte, share bool) {
		if len(input) < 2 {
			return
		}
		typ := fuzzTypes[int(binary.BigEndian.Uint16(input))%len(fuzzTypes)]
		data := input[2:]
		want := reflect.New(typ)
		wantErr := unmarshalRecovering(want.Interface().(protoMessage), data)
		d := newDecoder(share)
		var root *place
		if share {
			root = &place{}
		}
		// Twice, so that the second decoding may share the first's.
		for range 2 {
			got := reflect.New(typ)
			err := d.message(planFor(typ), root, got.UnsafePointer(), data)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%v: decoder error %v, generated code's %v", typ, err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(want.Interface(), got.Interface()) {
				t.Fatalf("%v: decoded differently:\n%s", typ, diff(want.Interface(), got.Interface()))
			}
		}
	})
}

// unmarshalRecovering is m.Unmarshal(data), with a panic as an error.
func unmarshalRecovering(m protoMessage, data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return m.Unmarshal(data)
}

// flip returns a copy of b with byte i changed.
func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	if i < len(c) {
		c[i] ^= 0x5a
	}
	return c
}
