package share

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocal checks that Local finds within one object what it was given,
// by bytes and kind, and nothing of an earlier object or another buffer.
func TestLocal(t *testing.T) {
	hs := NewHasher()
	var l Local
	enc := []byte(`{"a":{"x":1},"b":{"x":1},"c":"name","d":"name"}`)
	require.Nil(t, l.For(enc), "no object begun")

	l.Begin(enc)
	require.Same(t, &l, l.For(enc))
	require.Nil(t, l.For(append([]byte(nil), enc...)), "another buffer with the same bytes")

	first, second := 5, 17 // the two {"x":1}
	h := hs.Hash(enc[first : first+7])
	kind, other := unsafe.Pointer(new(byte)), unsafe.Pointer(new(byte))
	_, ok := l.Find(kind, h, second, second+7)
	require.False(t, ok)
	v := Found{P: unsafe.Pointer(new(int))}
	l.Put(kind, h, first, first+7, v)
	got, ok := l.Find(kind, h, second, second+7)
	require.True(t, ok, "an equal encoding")
	assert.Equal(t, v, got)
	_, ok = l.Find(other, h, second, second+7)
	assert.False(t, ok, "an equal encoding of another kind")

	s := hs.StrLocal(nil, &l, []byte("name"))
	assert.Same(t, unsafe.StringData(s), unsafe.StringData(hs.StrLocal(nil, &l, []byte("name"))), "an equal string")
	p := hs.StrPtrLocal(nil, &l, []byte("name"))
	assert.Same(t, p, hs.StrPtrLocal(nil, &l, []byte("name")), "an equal string held by pointer")

	l.End()
	require.Nil(t, l.For(enc), "the object ended")
	l.Begin(enc)
	_, ok = l.Find(kind, h, second, second+7)
	assert.False(t, ok, "a value of the object before")
	_, ok = l.Str(hs.Hash([]byte("name")), []byte("name"))
	assert.False(t, ok, "a string of the object before")
}
