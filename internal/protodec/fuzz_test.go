package protodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/decoded/decodedtest"
	"github.com/kubetyped/informers/internal/share"
	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// fuzzTypes are the types FuzzDecoder decodes into, chosen by the first
// two bytes of its input.
var fuzzTypes = messageTypes()

// FuzzDecoder decodes arbitrary bytes as one of the scheme's types, with
// sharing on or off, and checks that it never panics, fails where the
// generated Unmarshal fails (or panics), and otherwise decodes the same
// object. For a type with metadata, the bytes are also the middle item
// of a list and a watch event's object: one that does not decode is left
// out and named alike by both, or fails both, and the list's other items
// decode. Its seeds are random objects of a few types, whole, cut short
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
	for _, c := range craftedSeeds() {
		f.Add(append(binary.BigEndian.AppendUint16(nil, uint16(slices.Index(fuzzTypes, c.typ))), c.data...), true)
		f.Add(append(binary.BigEndian.AppendUint16(nil, uint16(slices.Index(fuzzTypes, c.typ))), c.data...), false)
	}
	f.Fuzz(func(t *testing.T, input []byte, sharing bool) {
		if len(input) < 2 {
			return
		}
		typ := fuzzTypes[int(binary.BigEndian.Uint16(input))%len(fuzzTypes)]
		data := input[2:]
		want := reflect.New(typ)
		wantErr := unmarshalRecovering(want.Interface().(protoMessage), data)
		d := newDecoder(sharing)
		var root *share.Place
		if sharing {
			root = &share.Place{}
		}
		// Twice, so that the second decoding may share the first's.
		for range 2 {
			got := reflect.New(typ)
			err := d.message(planFor(typ), root, got.UnsafePointer(), data)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%v: decoder error %v, generated code's %v", typ, err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(want.Interface(), got.Interface()) {
				t.Fatalf("%v: decoded differently:\n%s", typ, valuediff.First(want.Interface(), got.Interface()))
			}
		}
		checkUndecodable(t, typ, sharing, data, wantErr)
	})
}

// checkUndecodable decodes data, an encoding of typ that the generated code
// decodes or not (wantErr), as the middle item of a list and as a watch
// event's object, if typ has metadata.
func checkUndecodable(t *testing.T, typ reflect.Type, sharing bool, data []byte, wantErr error) {
	num := metadataField(planFor(typ))
	if num == 0 {
		return
	}
	dec, err := New(reflect.PointerTo(typ), Options{Share: sharing})
	require.NoError(t, err)
	named := func(name string) []byte {
		meta := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
		return protowire.AppendBytes(protowire.AppendTag(nil, protowire.Number(num), protowire.BytesType), meta)
	}
	var raw []byte
	for _, it := range [][]byte{named("first"), data, named("last")} {
		raw = protowire.AppendBytes(protowire.AppendTag(raw, 2, protowire.BytesType), it)
	}
	unknown, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{Kind: "ItemList"}, Raw: raw}).Marshal()
	require.NoError(t, err)
	newT := func() runtime.Object { return reflect.New(typ).Interface().(runtime.Object) }
	body := append(append([]byte{}, magic...), unknown...)
	l, err := DecodeList(dec, body, "ItemList", newT)
	_, eventErr := EventDecoder(dec, newT)(data, false)
	decodedtest.CheckContained(t, wantErr, l, err, eventErr, func(obj runtime.Object) string { return obj.(metav1.Object).GetName() })
	checkStream(t, dec, body, newT)
	checkStream(t, dec, append(append([]byte{}, magic...), data...), newT)
}

// checkStream decodes body as a list, whole and streamed in chunks of
// every size from one byte: the stream decodes what the whole decodes,
// and fails where it fails.
func checkStream(t *testing.T, dec *Decoder, body []byte, newT func() runtime.Object) {
	want, wantErr := DecodeList(dec, body, "ItemList", newT)
	stream := func(r io.Reader, put func(runtime.Object), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
		return StreamList(dec, r, "ItemList", newT, put, bad)
	}
	for _, max := range []int{1, 7, len(body) + 1} {
		got, err := decodedtest.Collect(stream, decodedtest.Chunked(body, uint64(len(body)*max), max))
		if wantErr != nil {
			require.Error(t, err, "the whole list fails: %v", wantErr)
			continue
		}
		if errors.Is(err, errListTwice) {
			continue
		}
		require.NoError(t, err)
		decodedtest.RequireSameList(t, want, got)
	}
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

// seed is an encoding of a type.
type seed struct {
	typ  reflect.Type
	data []byte
}

// craftedSeeds are encodings on the edges of what the generated code
// accepts: map entries whose key or value runs past the entry, unknown
// fields and groups inside entries, packed numbers whose last varint runs
// past their length, field numbers past 32 bits, ten-byte varints, merged
// messages and repeated fields out of order.
func craftedSeeds() []seed {
	cm := reflect.TypeFor[corev1.ConfigMap]()
	psc := reflect.TypeFor[corev1.PodSecurityContext]()
	pod := reflect.TypeFor[corev1.Pod]()
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(tag(num, protowire.BytesType), v)
	}
	entry := func(k, v string) []byte { return cat(bytesField(1, []byte(k)), bytesField(2, []byte(v))) }
	// A limits entry whose quantity (field 1 of its value) is "big".
	bigCPU := cat(bytesField(1, []byte("cpu")), bytesField(2, bytesField(1, []byte("big"))))
	return []seed{
		{cm, bytesField(2, entry("a", "b"))},
		// The value's length runs past the entry, into the next field.
		{cm, cat(bytesField(2, cat(bytesField(1, []byte("k")), tag(2, protowire.BytesType), []byte{5})), []byte("vwxyz"))},
		// An unknown group inside an entry, and an end group alone.
		{cm, bytesField(2, cat(tag(3, protowire.StartGroupType), tag(3, protowire.EndGroupType), entry("k", "v")))},
		{cm, bytesField(2, cat(tag(3, protowire.EndGroupType), entry("k", "v")))},
		// Entries of one map apart from each other, and twice the same key.
		{cm, cat(bytesField(2, entry("a", "1")), bytesField(1, bytesField(1, []byte("name"))), bytesField(2, entry("a", "2")), bytesField(2, entry("b", "3")))},
		// Packed numbers, the last one running past the length.
		{psc, cat(tag(4, protowire.BytesType), []byte{2, 0x81, 0x81, 0x01})},
		{psc, cat(tag(4, protowire.BytesType), []byte{0}, tag(4, protowire.VarintType), []byte{7})},
		// A field number past 32 bits, truncated to 1 by the generated code.
		{cm, cat(protowire.AppendVarint(nil, (1<<32+1)<<3|2), bytesField(1, []byte("name"))[1:])},
		// A ten-byte varint whose last byte has more than one bit.
		{psc, cat(tag(5, protowire.VarintType), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f})},
		// A message held by pointer sent twice merges.
		{psc, cat(bytesField(1, bytesField(1, []byte("u1"))), bytesField(1, bytesField(2, []byte("r1"))))},
		// The spec twice: containers appended to the first ones.
		{pod, cat(bytesField(2, bytesField(2, bytesField(1, []byte("a")))), bytesField(2, bytesField(2, bytesField(1, []byte("b")))))},
		// A string field of the wrong wire type.
		{cm, cat(tag(1, protowire.VarintType), []byte{1})},
		// A quantity that does not parse, in a pod that its metadata
		// names, and in one it does not.
		{pod, cat(bytesField(1, bytesField(1, []byte("p"))), bytesField(2, bytesField(2, bytesField(8, bytesField(1, bigCPU)))))},
		{pod, bytesField(2, bytesField(2, bytesField(8, bytesField(1, bigCPU))))},
		// Metadata that does not parse.
		{pod, cat(bytesField(1, []byte{0x0a, 0x7f, 'p'}), bytesField(2, nil))},
	}
}
