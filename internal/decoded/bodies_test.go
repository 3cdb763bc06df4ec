package decoded

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bodies hands fn each body whole, whatever the sizes before it and
// however the reader cuts it, and returns the reader's error without
// calling fn.
func TestBodiesRead(t *testing.T) {
	var bs Bodies
	for _, size := range []int{0, 10, 3 << 20, 5, 700 << 10, 3<<20 + 1} {
		body := bytes.Repeat([]byte{byte(size)}, size)
		body = append(body, "end"...)
		called := false
		require.NoError(t, bs.Read(iotest.HalfReader(bytes.NewReader(body)), func(got []byte) error {
			called = true
			assert.Equal(t, body, got, "a body of %d bytes", len(body))
			return nil
		}))
		assert.True(t, called)
	}

	broken := errors.New("connection reset")
	err := bs.Read(io.MultiReader(bytes.NewReader([]byte("partial")), iotest.ErrReader(broken)), func([]byte) error {
		t.Error("fn called with a body cut short")
		return nil
	})
	require.ErrorIs(t, err, broken)

	decoding := errors.New("bad list")
	require.ErrorIs(t, bs.Read(bytes.NewReader([]byte("x")), func([]byte) error { return decoding }), decoding)
}

// Several lists may read through one Bodies at once, each into a buffer
// of its own.
func TestBodiesConcurrent(t *testing.T) {
	var bs Bodies
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				body := bytes.Repeat([]byte{byte(g)}, (g+1)*(i+1)*1000)
				assert.NoError(t, bs.Read(bytes.NewReader(body), func(got []byte) error {
					assert.Equal(t, body, got)
					return nil
				}))
			}
		})
	}
	wg.Wait()
}
