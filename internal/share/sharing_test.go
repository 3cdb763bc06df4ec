package share

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestSharing checks that a decoder's Sharing uses a place's table only
// when it shares and the place exists, shares strings through the table
// and within the object being decoded, and leaves a place untouched for
// an empty string.
func TestSharing(t *testing.T) {
	off, on := NewSharing(false), NewSharing(true)
	var tab Table
	assert.False(t, off.On())
	assert.Nil(t, off.At(&tab), "a decoder that does not share")
	assert.Nil(t, on.At(nil), "no place")
	assert.Same(t, &tab, on.At(&tab))

	a := on.StrAt(&tab, nil, []byte("image"))
	assert.Same(t, unsafe.StringData(a), unsafe.StringData(on.StrAt(&tab, nil, []byte("image"))), "shared through the table")
	assert.NotSame(t, unsafe.StringData(a), unsafe.StringData(off.StrAt(&tab, nil, []byte("image"))), "not shared when off")

	var l Local
	enc := []byte(`{"a":"name","b":"name"}`)
	s := on.StrAt(nil, &l, []byte("name"))
	assert.NotSame(t, unsafe.StringData(s), unsafe.StringData(on.StrAt(nil, &l, []byte("name"))), "no object begun")
	l.Begin(enc)
	s = on.StrAt(nil, &l, []byte("name"))
	assert.Same(t, unsafe.StringData(s), unsafe.StringData(on.StrAt(nil, &l, []byte("name"))), "shared within the object")
	l.End()

	var fresh Table
	fresh.pause = 1
	assert.Empty(t, on.StrAt(&fresh, nil, nil))
	assert.True(t, fresh.Paused(), "an empty string does not count the pause down")
	assert.Nil(t, on.At(&fresh), "a paused place")
	assert.False(t, fresh.Paused())
}
