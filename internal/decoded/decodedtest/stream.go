package decodedtest

import (
	"io"
	"math/rand/v2"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// Chunked returns a reader of b whose reads return 1 to max bytes, as
// seed picks them.
func Chunked(b []byte, seed uint64, max int) io.Reader {
	return &chunked{b: b, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), max: max}
}

type chunked struct {
	b   []byte
	rnd *rand.Rand
	max int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(1+c.rnd.IntN(c.max), len(p), len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// StreamFunc is a streaming list decoder of r.
type StreamFunc[T runtime.Object] func(r io.Reader, put func(T), bad func(*decoded.Undecodable)) (metav1.ListMeta, error)

// Collect decodes r with stream into a List of what it handed over, also
// where it failed.
func Collect[T runtime.Object](stream StreamFunc[T], r io.Reader) (*decoded.List[T], error) {
	l := &decoded.List[T]{}
	meta, err := stream(r,
		func(obj T) { l.Items = append(l.Items, obj) },
		func(u *decoded.Undecodable) { l.Undecodable = append(l.Undecodable, u) })
	l.ListMeta = meta
	return l, err
}

// RequireSameList requires that got, a list a stream handed over, holds
// what want holds: the same metadata, items and undecodable items.
func RequireSameList[T runtime.Object](t require.TestingT, want, got *decoded.List[T]) {
	require.Equal(t, want.ListMeta, got.ListMeta)
	require.Equal(t, len(want.Items), len(got.Items))
	for i := range want.Items {
		require.Equal(t, want.Items[i], got.Items[i], "item %d", i)
	}
	require.Equal(t, len(want.Undecodable), len(got.Undecodable))
	for i, u := range want.Undecodable {
		// The offsets in their errors differ: an item streamed is decoded
		// on its own.
		g := got.Undecodable[i]
		require.Equal(t, [5]string{u.Namespace, u.Name, string(u.UID), u.ResourceVersion, u.Path},
			[5]string{g.Namespace, g.Name, string(g.UID), g.ResourceVersion, g.Path}, "undecodable item %d", i)
		require.Equal(t, u.Err == nil, g.Err == nil, "undecodable item %d", i)
	}
}
