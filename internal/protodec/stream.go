package protodec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// StreamList decodes a list response in the protobuf envelope whose kind
// must be listKind (PodList) from r as its bytes arrive, never holding the
// body whole: each item (field 2 of the list, in the envelope's field 2)
// is read into a reused buffer, decoded into a new object made by newT,
// and handed to put at once; an item that does not decode is handed to
// bad if its metadata names it, and else fails the list. It returns the
// list's metadata once the body is read to its end. A body that ends or
// fails part-way is an error, after the items before it were handed over.
//
// It decodes what DecodeList decodes, but for envelopes no server sends:
// one that holds the list twice, or names its kind only after the list,
// which it refuses.
func StreamList[T runtime.Object](dec *Decoder, r io.Reader, listKind string, newT func() T, put func(T), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
	s := &listStream{r: bufio.NewReaderSize(r, 32<<10), buf: itemBuffers.Get().(*bytes.Buffer)}
	defer s.release()
	var meta metav1.ListMeta
	err := s.envelope(listKind, func(lr *countReader) error {
		return s.items(lr, func(num int32, v []byte) error {
			switch num {
			case 1:
				return dec.plain.message(listMetaPlan, nil, unsafe.Pointer(&meta), v)
			case 2:
				obj := newT()
				dec.mu.Lock()
				err := dec.d.message(dec.plan, dec.root, decoded.Pointer(obj), v)
				var u *decoded.Undecodable
				if err != nil {
					err = finish(err, reflect.PointerTo(dec.typ))
					u = dec.undecodable(v, err)
				}
				dec.mu.Unlock()
				if err != nil {
					if u == nil {
						return fmt.Errorf("item %d: %w", s.item, err)
					}
					s.item++
					bad(u)
					return nil
				}
				s.item++
				put(obj)
			}
			return nil
		})
	})
	if err != nil {
		return metav1.ListMeta{}, fmt.Errorf("decoding %s: %w", listKind, err)
	}
	return meta, nil
}

// listStream reads a list in the protobuf envelope from r.
type listStream struct {
	r    *bufio.Reader
	buf  *bytes.Buffer // the field being decoded, reused; from itemBuffers
	item int           // the number of items read
}

// itemBuffers holds the buffers list streams read items into, so that the
// pages of a sync reuse one instead of each growing its own.
var itemBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledItemBuffer is the largest buffer a list stream gives back to
// itemBuffers: one grown for a rare huge item is left to the collector.
const maxPooledItemBuffer = 1 << 20

// release gives the stream's buffer back.
func (s *listStream) release() {
	if s.buf.Cap() <= maxPooledItemBuffer {
		s.buf.Reset()
		itemBuffers.Put(s.buf)
	}
	s.buf = nil
}

// errListTwice is the error of an envelope that holds the list twice.
var errListTwice = errors.New("the protobuf envelope holds the list twice")

// envelope reads the envelope, and calls list with the reader of the
// list's bytes as they come.
func (s *listStream) envelope(listKind string, list func(*countReader) error) error {
	var m [4]byte
	if _, err := io.ReadFull(s.r, m[:]); err != nil || !bytes.Equal(m[:], magic) {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		return errors.New("not in the protobuf envelope")
	}
	var kind []byte
	var listSeen bool
	cr := &countReader{r: s.r, n: -1}
	for {
		tag, err := readUvarint(cr)
		if err == io.EOF {
			break
		}
		if err != nil {
			return malformedStream(err)
		}
		num, wt := int32(tag>>3), int(tag&7)
		if wt != wireBytes {
			if err := skipStream(cr, wt); err != nil {
				return malformedStream(err)
			}
			continue
		}
		n, err := readLength(cr)
		if err != nil {
			return malformedStream(err)
		}
		switch num {
		case 1:
			v, err := s.read(cr, n)
			if err != nil {
				return malformedStream(err)
			}
			kind = nil
			if err := EachBytesField(v, func(num int32, v []byte) error {
				if num == 2 {
					kind = append(kind[:0], v...)
				}
				return nil
			}); err != nil {
				return fmt.Errorf("decoding the protobuf envelope: %w", err)
			}
		case 2:
			if listSeen {
				return errListTwice
			}
			if string(kind) != listKind {
				return &decoded.KindError{Got: string(kind), Want: listKind}
			}
			listSeen = true
			lr := &countReader{r: s.r, n: n}
			if err := list(lr); err != nil {
				return err
			}
			if lr.n != 0 {
				return malformedStream(io.ErrUnexpectedEOF)
			}
		case 3:
			v, err := s.read(cr, n)
			if err != nil {
				return malformedStream(err)
			}
			if len(v) > 0 {
				return fmt.Errorf("decoding the protobuf envelope: object in content encoding %q", v)
			}
		default:
			if err := discard(cr, n); err != nil {
				return malformedStream(err)
			}
		}
	}
	if string(kind) != listKind {
		return &decoded.KindError{Got: string(kind), Want: listKind}
	}
	return nil
}

// items reads the fields of the list message from lr, and calls fn with
// each length-delimited one, read whole into the reused buffer.
func (s *listStream) items(lr *countReader, fn func(num int32, v []byte) error) error {
	for {
		tag, err := readUvarint(lr)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return malformedStream(err)
		}
		num, wt := int32(tag>>3), int(tag&7)
		if wt != wireBytes {
			if err := skipStream(lr, wt); err != nil {
				return malformedStream(err)
			}
			continue
		}
		n, err := readLength(lr)
		if err != nil {
			return malformedStream(err)
		}
		if num != 1 && num != 2 {
			if err := discard(lr, n); err != nil {
				return malformedStream(err)
			}
			continue
		}
		v, err := s.read(lr, n)
		if err != nil {
			return malformedStream(err)
		}
		if err := fn(num, v); err != nil {
			return err
		}
	}
}

// read reads the next n bytes of r into the reused buffer.
func (s *listStream) read(r *countReader, n int64) ([]byte, error) {
	if r.n >= 0 && n > r.n {
		return nil, io.ErrUnexpectedEOF
	}
	s.buf.Reset()
	if n < 1<<20 {
		// Read straight into the buffer's memory.
		s.buf.Grow(int(n))
		b := s.buf.AvailableBuffer()[:n]
		if _, err := io.ReadFull(r, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}
	// A length this large is believed only as the bytes arrive.
	got, err := io.CopyN(s.buf, r, n)
	if got < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return s.buf.Bytes(), nil
}

func malformedStream(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errIntOverflow) || errors.Is(err, errInvalidLength) || errors.Is(err, errEndOfGroup) {
		return fmt.Errorf("malformed protobuf: %w", err)
	}
	return err
}

// countReader reads from r at most n bytes, or without limit if n is
// negative.
type countReader struct {
	r *bufio.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, io.EOF
	}
	if c.n > 0 && int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	if c.n > 0 {
		c.n -= int64(k)
	}
	return k, err
}

func (c *countReader) ReadByte() (byte, error) {
	if c.n == 0 {
		return 0, io.EOF
	}
	b, err := c.r.ReadByte()
	if err == nil && c.n > 0 {
		c.n--
	}
	return b, err
}

// readUvarint reads a varint; io.EOF if r ends before it, at a field's
// boundary, io.ErrUnexpectedEOF if it ends inside it.
func readUvarint(r *countReader) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errIntOverflow
		}
		c, err := r.ReadByte()
		if err != nil {
			if err == io.EOF && shift > 0 {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// readLength reads the length of a length-delimited field, which must
// fit what r has left.
func readLength(r *countReader) (int64, error) {
	n, err := readUvarint(r)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, err
	}
	if int64(n) < 0 {
		return 0, errInvalidLength
	}
	if r.n >= 0 && int64(n) > r.n {
		return 0, io.ErrUnexpectedEOF
	}
	return int64(n), nil
}

// discard skips the next n bytes of r.
func discard(r *countReader, n int64) error {
	got, err := io.CopyN(io.Discard, r, n)
	if got < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// skipStream skips the value of a field of wire type wt, whose tag was
// read, as skipField does: groups whole.
func skipStream(r *countReader, wt int) error {
	switch wt {
	case wireVarint:
		_, err := readUvarint(r)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	case wireFixed64:
		return discard(r, 8)
	case wireFixed32:
		return discard(r, 4)
	case wireBytes:
		n, err := readLength(r)
		if err != nil {
			return err
		}
		return discard(r, n)
	case wireStartGroup:
		for {
			tag, err := readUvarint(r)
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				return err
			}
			if int(tag&7) == wireEndGroup {
				return nil
			}
			if err := skipStream(r, int(tag&7)); err != nil {
				return err
			}
		}
	case wireEndGroup:
		return errEndOfGroup
	}
	return fmt.Errorf("proto: illegal wireType %d", wt)
}
