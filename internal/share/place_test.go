package share

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Places are made only when the decoder shares, once each, and found
// again without sharing; a nil place has none below it.
func TestPlaceTree(t *testing.T) {
	root := &Place{}
	assert.Nil(t, root.Child(2, 5, false), "not made without sharing")
	c := root.Child(2, 5, true)
	require.NotNil(t, c)
	assert.Same(t, c, root.Child(2, 5, false), "found again")
	assert.Same(t, c, root.Child(2, 5, true), "made once")
	assert.Nil(t, root.Child(7, 5, true), "past the struct's fields")
	far := root.Child(9, 12, true) // a message whose plan grew
	require.NotNil(t, far)
	assert.Same(t, c, root.Child(2, 12, false), "growing keeps the places made before")

	for _, below := range []func(*Place, bool) *Place{(*Place).Elem, (*Place).Key, (*Place).Whole} {
		assert.Nil(t, below(c, false))
		p := below(c, true)
		require.NotNil(t, p)
		assert.Same(t, p, below(c, false))
	}
	v := c.Value("app", true)
	assert.NotSame(t, c.Elem(false), v, "a key's values have their own place")
	assert.Same(t, v, c.Value("app", true))
	assert.Same(t, c.Elem(false), c.Value("app", false), "without sharing, the values' place")

	var none *Place
	assert.Nil(t, none.Table())
	assert.Nil(t, none.Child(0, 1, true))
	assert.Nil(t, none.Elem(true))
	assert.Nil(t, none.Value("k", true))
	assert.Empty(t, slices.Collect(none.All()))
}

// Places go MaxDepth deep; a place's Whole is at its own depth.
func TestPlaceDepth(t *testing.T) {
	pl := &Place{}
	for range MaxDepth {
		pl = pl.Elem(true)
		require.NotNil(t, pl)
	}
	assert.Nil(t, pl.Elem(true))
	assert.Nil(t, pl.Child(0, 1, true))
	assert.Nil(t, pl.Value("k", true))
	assert.Nil(t, pl.Whole(true))
}

// All yields every place once, the root first, and stops when asked.
func TestPlaceAll(t *testing.T) {
	root := &Place{}
	a := root.Child(0, 2, true)
	b := a.Elem(true)
	k := root.Key(true)
	v := root.Value("x", true)
	w := b.Whole(true)
	got := slices.Collect(root.All())
	assert.Equal(t, root, got[0])
	assert.ElementsMatch(t, []*Place{root, a, b, k, v, w}, got)
	n := 0
	for range root.All() {
		if n++; n == 2 {
			break
		}
	}
	assert.Equal(t, 2, n)
}
