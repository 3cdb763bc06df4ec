package jsondec

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubetyped/informers/internal/decoded/decodedtest"
)

// elementsOf reads the array body with a scanner over chunks of at most
// max bytes, and returns the elements its fn had, in order, and what
// elements returned; fn fails at element failAt (-1: never).
func elementsOf(t *testing.T, body string, max, failAt int) ([]string, error) {
	t.Helper()
	s := &scanner{r: decodedtest.Chunked([]byte(body), uint64(max), max), buf: make([]byte, 0, 256)}
	var got []string
	err := s.elements(func(k int, v []byte) error {
		if k != len(got) {
			return fmt.Errorf("element %d after %d elements", k, len(got))
		}
		got = append(got, string(v))
		if k == failAt {
			return errFnFailed
		}
		return nil
	})
	return got, err
}

var errFnFailed = errors.New("fn failed")

// A list's elements reach fn in order, whole and once each, whether they
// travel in batches or, as long as a batch or longer, straight; fn's
// error ends the reading and is returned, and no goroutine is left.
func TestElementsHandover(t *testing.T) {
	defer goleak.VerifyNone(t)
	long := `"` + strings.Repeat("x", batchBytes) + `"`
	var many []string
	for i := range 5000 { // about 20 batches
		many = append(many, fmt.Sprintf(`{"n":%d,"s":"%s"}`, i, strings.Repeat("y", i%40)))
	}
	mixed := []string{`1`, long, `{"a":[2,3]}`, long, long, `"z"`}
	tests := []struct {
		name   string
		elems  []string
		tail   string // after the array, where it is cut or broken
		failAt int
		want   int   // elements fn has
		err    error // nil, errFnFailed, or any error (io.ErrUnexpectedEOF)
	}{
		{name: "many small", elems: many, failAt: -1, want: len(many)},
		{name: "mixed with long ones", elems: mixed, failAt: -1, want: len(mixed)},
		{name: "fn fails on a small one", elems: many, failAt: 1234, want: 1235, err: errFnFailed},
		{name: "fn fails on a long one", elems: mixed, failAt: 3, want: 4, err: errFnFailed},
		{name: "fn fails on the one after a long one", elems: mixed, failAt: 2, want: 3, err: errFnFailed},
		{name: "cut after the last", elems: many[:3000], tail: "cut", failAt: -1, want: 3000, err: io.ErrUnexpectedEOF},
		{name: "fn fails before the cut", elems: many[:3000], tail: "cut", failAt: 10, want: 11, err: errFnFailed},
	}
	for _, tc := range tests {
		for _, max := range []int{7, 4096, 1 << 20} {
			t.Run(fmt.Sprintf("%s/reads of %d", tc.name, max), func(t *testing.T) {
				body := "[" + strings.Join(tc.elems, ",")
				if tc.tail == "" {
					body += "]"
				} else {
					body += ","
				}
				got, err := elementsOf(t, body, max, tc.failAt)
				if tc.err == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, tc.err)
				}
				require.Len(t, got, tc.want)
				for k, v := range got {
					assert.Equal(t, tc.elems[k], v, "element %d", k)
				}
			})
		}
	}
}
