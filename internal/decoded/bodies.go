package decoded

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// bodies holds the buffers that responses are read into, so that the
// pages of a sync are read into the same memory.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Bodies reads the response bodies of one kind of request, such as the
// pages of an informer's lists, whole. A buffer it has to make is made at
// once as large as the last body it read, where growing one by doubling
// would allocate, clear and copy a page's memory several times over: the
// pool loses its buffers whenever the heap is collected, as it often is
// during a sync. The zero Bodies is ready to use, by several goroutines.
type Bodies struct {
	last atomic.Int64 // the size of the last body read
}

// Read reads r, a response body, whole and calls fn with it. The bytes
// are valid only during fn: the buffer is reused.
func (bs *Bodies) Read(r io.Reader, fn func(body []byte) error) error {
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		buf.Reset()
		bodies.Put(buf)
	}()
	if last := int(bs.last.Load()); buf.Cap() < last {
		buf.Grow(last + last/8 + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return err
	}
	bs.last.Store(int64(buf.Len()))
	return fn(buf.Bytes())
}
