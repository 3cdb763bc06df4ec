package jsondec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubetyped/informers/internal/decoded/decodedtest"
)

// asideArray returns a JSON array of n objects whose sizes cycle from a
// few bytes past asideKeep, and the objects.
func asideArray(n int) ([]byte, []string) {
	sizes := []int{0, 3 << 10, 100 << 10, asideBatch + 1, 5 << 10, asideKeep + 1}
	var elems []string
	for k := range n {
		elems = append(elems, fmt.Sprintf(`{"k":%d,"pad":%q}`, k, strings.Repeat("x", sizes[k%len(sizes)])))
	}
	return []byte("[" + strings.Join(elems, ",") + "]"), elems
}

// scanElements reads the array of r with elementsAside, or elements, and
// returns the elements fn was given, and the error.
func scanElements(r io.Reader, aside bool, fn func(k int) error) ([]string, error) {
	s := &scanner{r: r, buf: make([]byte, 0, 32<<10)}
	var got []string
	each := func(k int, v []byte) error {
		if k != len(got) {
			return fmt.Errorf("element %d after %d", k, len(got))
		}
		got = append(got, string(v))
		return fn(k)
	}
	if aside {
		return got, s.elementsAside(each)
	}
	return got, s.elements(each)
}

// elementsAside hands fn what elements hands it, in order, whatever the
// sizes of the elements (some past a batch, some past what a batch keeps)
// and however the body arrives.
func TestElementsAside(t *testing.T) {
	body, want := asideArray(40)
	for _, max := range []int{7, 4096, len(body)} {
		got, err := scanElements(decodedtest.Chunked(body, uint64(max), max), true, func(int) error { return nil })
		require.NoError(t, err, "chunks of %d at most", max)
		require.Len(t, got, len(want))
		for k := range want {
			require.True(t, want[k] == got[k], "chunks of %d at most: element %d differs", max, k)
		}
	}
	got, err := scanElements(bytes.NewReader([]byte("[]")), true, func(int) error { return nil })
	require.NoError(t, err)
	assert.Empty(t, got)
}

// A body that fails or is not JSON fails elementsAside as it fails
// elements, after the elements before.
func TestElementsAsideFails(t *testing.T) {
	body, _ := asideArray(12)
	for name, r := range map[string]func() io.Reader{
		"cut": func() io.Reader { return bytes.NewReader(body[:len(body)*2/3]) },
		"broken": func() io.Reader {
			return io.MultiReader(bytes.NewReader(body[:len(body)/2]), iotest.ErrReader(io.ErrClosedPipe))
		},
		"invalid": func() io.Reader { return bytes.NewReader(append(append([]byte{}, body[:len(body)/2]...), "}]"...)) },
	} {
		t.Run(name, func(t *testing.T) {
			want, wantErr := scanElements(r(), false, func(int) error { return nil })
			require.Error(t, wantErr)
			got, err := scanElements(r(), true, func(int) error { return nil })
			require.EqualError(t, err, wantErr.Error())
			require.Len(t, got, len(want))
			for k := range want {
				require.True(t, want[k] == got[k], "element %d differs", k)
			}
		})
	}
}

// fn's error ends elementsAside at once, with that error, though the body
// goes on; its goroutine ends once the body is closed.
func TestElementsAsideStopsAtFnsError(t *testing.T) {
	body, want := asideArray(30)
	before := runtime.NumGoroutine()
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body) // until the reader is closed
		_ = pw.Close()
	}()
	stop := errors.New("stop")
	got, err := scanElements(pr, true, func(k int) error {
		if k == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Len(t, got, 4)
	assert.True(t, want[3] == got[3])
	_ = pr.Close()
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		require.True(t, time.Now().Before(deadline), "the reading goroutine and the writer end")
		time.Sleep(10 * time.Millisecond) // polled, with a deadline
	}
}
