package share

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyedPlace checks that each key has a place of its own, the same
// at every visit, up to MaxKeyed keys, and that the keys past them have
// none.
func TestKeyedPlace(t *testing.T) {
	type place struct{ n int }
	var keyed map[string]*place
	made := 0
	newPlace := func() *place { made++; return &place{n: made} }
	a := KeyedPlace(&keyed, "app", newPlace)
	require.NotNil(t, a)
	assert.Same(t, a, KeyedPlace(&keyed, "app", newPlace))
	assert.NotSame(t, a, KeyedPlace(&keyed, "tier", newPlace))
	for i := len(keyed); i < MaxKeyed; i++ {
		require.NotNil(t, KeyedPlace(&keyed, strconv.Itoa(i), newPlace))
	}
	assert.Nil(t, KeyedPlace(&keyed, "one too many", newPlace))
	assert.Same(t, a, KeyedPlace(&keyed, "app", newPlace), "a key met before keeps its place")
	assert.Equal(t, MaxKeyed, made)
}
