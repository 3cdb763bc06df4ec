package jsondec

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// StreamList decodes a JSON list response whose kind must be listKind
// (WidgetList) from r as its bytes arrive, never holding the body whole:
// each item is read into a pooled buffer (256 KiB, or one item where an
// item is larger), decoded into a new object made by newT and handed to
// put; an item that does not fit the type is handed to bad if its
// metadata names it, and else fails the list. put and bad are called one
// at a time, in the items' order, but not all on the caller's goroutine:
// items are decoded beside the reading of the next ones (see handover).
// The list's metadata, before or after its items, is returned once the
// body is read to its end. A body that ends or fails part-way is an
// error, after the items before it were handed over.
//
// It decodes what DecodeList decodes, and fails where it fails.
func StreamList[T runtime.Object](dec *Decoder, r io.Reader, listKind string, newT func() T, put func(T), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
	var meta metav1.ListMeta
	_, err := streamList(r, func(s *scanner) error {
		return s.elements(func(k int, item []byte) error {
			obj := newT()
			dec.mu.Lock()
			_, err := dec.decode(decoded.Pointer(obj), item, 0)
			dec.mu.Unlock()
			if err != nil {
				u := undecodable(item, err)
				if u == nil {
					return fmt.Errorf("item %d: %w", k, err)
				}
				bad(u)
				return nil
			}
			put(obj)
			return nil
		})
	}, func(key string, v []byte) error {
		switch key {
		case "kind":
			if v[0] == '"' && string(v) != `"`+listKind+`"` {
				return &decoded.KindError{Got: unquoted(v), Want: listKind}
			}
		case "metadata":
			return decodeListMeta(&meta, v)
		}
		return nil
	})
	if err != nil {
		return metav1.ListMeta{}, fmt.Errorf("decoding %s: %w", listKind, err)
	}
	return meta, nil
}

// decodeListMeta decodes b, the metadata of a list, into meta.
func decodeListMeta(meta *metav1.ListMeta, b []byte) error {
	plain := newDecoder(false)
	_, err := plain.value(listMetaPlan, nil, unsafe.Pointer(meta), b, 0)
	return finish(err, nil)
}

// streamList reads a JSON list from r: items reads its items, at the
// scanner; member is given each other member of the list, as it is read
// (v is valid only during the call). Every value is checked to be valid
// JSON before it is given; a list has its metadata and its items once at
// most. It reports whether the list has items (null or an array).
func streamList(r io.Reader, items func(*scanner) error, member func(key string, v []byte) error) (bool, error) {
	var seenItems, seenMeta bool
	buf := scanBuffers.Get().(*[]byte)
	s := &scanner{r: r, buf: (*buf)[:0]}
	defer func() {
		if cap(s.buf) <= scanBufferKeep {
			*buf = s.buf[:0]
			scanBuffers.Put(buf)
		}
	}()
	if err := s.open('{', "not a JSON object"); err != nil {
		return seenItems, err
	}
	empty, err := s.empty('}')
	if err != nil {
		return seenItems, err
	}
	for !empty {
		key, err := s.value()
		if err != nil {
			return seenItems, err
		}
		if key[0] != '"' || !Valid(key) {
			return seenItems, s.syntax(key)
		}
		raw, _ := readString(key, 0)
		k := string(raw) // the buffer moves as the scanner reads on
		if err := s.open(':', "invalid JSON: no colon after an object key"); err != nil {
			return seenItems, err
		}
		switch k {
		case "items":
			if seenItems {
				return seenItems, errors.New("items twice")
			}
			seenItems = true
			c, err := s.peek()
			if err != nil {
				return seenItems, err
			}
			switch c {
			case '[':
				if err := items(s); err != nil {
					return seenItems, err
				}
			case 'n':
				v, err := s.value()
				if err != nil {
					return seenItems, err
				}
				if string(v) != "null" {
					return seenItems, s.syntax(v)
				}
			default:
				if _, err := s.validValue(1); err != nil {
					return seenItems, err
				}
				return seenItems, errors.New("items are not an array")
			}
		default:
			v, err := s.validValue(1)
			if err != nil {
				return seenItems, err
			}
			if k == "metadata" {
				if seenMeta {
					return seenItems, errors.New("metadata twice")
				}
				seenMeta = true
			}
			if err := member(k, v); err != nil {
				return seenItems, err
			}
		}
		c, err := s.peek()
		if err != nil {
			return seenItems, err
		}
		s.i++
		switch c {
		case ',':
		case '}':
			empty = true
		default:
			return seenItems, fmt.Errorf("invalid JSON: %q after an object member", c)
		}
	}
	if _, err := s.peek(); err != io.ErrUnexpectedEOF {
		if err == nil {
			err = errors.New("invalid JSON: data after the top-level value")
		}
		return seenItems, err
	}
	return seenItems, nil
}

// scanBuffers holds the buffers of the scanners of streamed lists, so that
// the pages of a sync reuse one: scanBuffer long, enough for a read of
// that much at once, which a buffered reader passes straight through; one
// grown past scanBufferKeep by a larger item is left to the collector.
var scanBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, scanBuffer)
	return &b
}}

const (
	scanBuffer     = 256 << 10
	scanBufferKeep = 4 * scanBuffer
)

// scanner reads JSON values from r through a buffer that holds the value
// being read, and what was read past it.
type scanner struct {
	r   io.Reader
	buf []byte // buf[i:] is read and not yet scanned
	i   int
	err error // r's error, once it failed or ended
	// deepest is the nesting of arrays and objects of the last value.
	deepest int
	// beforeRead, if set, is called before each read from r, which may
	// wait for the server.
	beforeRead func()
}

// valid says whether v, the last value read, is valid JSON at a nesting
// of outer arrays and objects.
func (s *scanner) valid(v []byte, outer int) bool {
	return s.deepest+outer <= maxNesting && Valid(v)
}

// fill reads more into buf, keeping buf[from:], which moves to the
// start; it returns how far it moved.
func (s *scanner) fill(from int) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if from > 0 {
		n := copy(s.buf, s.buf[from:])
		s.buf = s.buf[:n]
		s.i -= from
	}
	if len(s.buf) == cap(s.buf) {
		s.buf = append(s.buf, make([]byte, cap(s.buf))...)[:len(s.buf)]
	}
	if s.beforeRead != nil {
		s.beforeRead()
	}
	for {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			s.err = err
			if n == 0 {
				return from, err
			}
		}
		if n > 0 {
			return from, nil
		}
	}
}

// peek skips white space and returns the next byte, unread;
// io.ErrUnexpectedEOF if the body ends.
func (s *scanner) peek() (byte, error) {
	for {
		for ; s.i < len(s.buf); s.i++ {
			switch c := s.buf[s.i]; c {
			case ' ', '\t', '\n', '\r':
			default:
				return c, nil
			}
		}
		if _, err := s.fill(s.i); err != nil {
			return 0, err
		}
	}
}

// open reads the byte c, after white space, or fails with msg.
func (s *scanner) open(c byte, msg string) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return errors.New(msg)
	}
	s.i++
	return nil
}

// empty says whether the next byte, after white space, is c, which it
// reads then.
func (s *scanner) empty(c byte) (bool, error) {
	got, err := s.peek()
	if err != nil {
		return false, err
	}
	if got == c {
		s.i++
		return true, nil
	}
	return false, nil
}

// value returns the bytes of the next value, after white space, not
// checked to be valid JSON; they are valid until the scanner reads on.
func (s *scanner) value() ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	start, j := s.i, s.i+1
	depth, inString, escaped := 0, false, false
	switch c {
	case '{', '[':
		depth = 1
	case '"':
		inString = true
	}
	literal := depth == 0 && !inString
	s.deepest = depth
	for {
		for ; j < len(s.buf); j++ {
			b := s.buf[j]
			switch {
			case literal:
				switch b {
				case ',', ']', '}', ':', ' ', '\t', '\n', '\r':
					s.i = j
					return s.buf[start:j], nil
				}
			case inString:
				switch {
				case escaped:
					escaped = false
				case b == '\\':
					escaped = true
				case b == '"':
					inString = false
					if depth == 0 {
						s.i = j + 1
						return s.buf[start : j+1], nil
					}
				}
			default:
				switch b {
				case '"':
					inString = true
				case '{', '[':
					if depth++; depth > s.deepest {
						s.deepest = depth
					}
				case '}', ']':
					if depth--; depth == 0 {
						s.i = j + 1
						return s.buf[start : j+1], nil
					}
				}
			}
		}
		moved, err := s.fill(start)
		start -= moved
		j -= moved
		if err != nil {
			if literal && err == io.ErrUnexpectedEOF {
				s.i = j
				return s.buf[start:j], nil
			}
			return nil, err
		}
	}
}

// validValue returns the bytes of the next value, after white space,
// valid JSON inside outer arrays and objects, or a syntax error; they
// are valid until the scanner reads on. An object or an array that lies
// whole in the buffer is read in one pass, which checks it as it finds
// its end; the buffer is refilled first when less than half of it is left
// to read, so that most do. Any other value, and one that the buffer cuts
// or that is not valid, is found by value, then checked.
func (s *scanner) validValue(outer int) ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	if c == '{' || c == '[' {
		if s.err == nil && len(s.buf)-s.i < cap(s.buf)/2 {
			// An error is the reader's, kept for the next fill: what
			// the buffer holds is read first.
			_, _ = s.fill(s.i)
		}
		if end := validValue(s.buf, s.i, outer, nil); end >= 0 {
			v := s.buf[s.i:end]
			s.i = end
			return v, nil
		}
	}
	v, err := s.value()
	if err != nil {
		return nil, err
	}
	if !s.valid(v, outer) {
		return nil, s.syntax(v)
	}
	return v, nil
}

// elements reads the array that starts at the scanner, and calls fn with
// the index and the bytes of each element, valid JSON, in order, one call
// at a time. fn runs on a goroutine of its own for all but the longest
// elements (see handover) while the scanner reads and checks the elements
// after the ones fn has; elements returns once fn has had every element
// read, or has failed. fn's error comes first, as its element comes
// before any the scanner failed at.
func (s *scanner) elements(fn func(k int, v []byte) error) error {
	if err := s.open('[', "not an array"); err != nil {
		return err
	}
	if done, err := s.empty(']'); done || err != nil {
		return err
	}
	h := startHandover(fn)
	s.beforeRead = h.send
	err := s.eachElement(h.add)
	s.beforeRead = nil
	return h.finish(err)
}

// eachElement reads the elements of a non-empty array whose '[' is read,
// and calls fn with the index and the bytes of each, valid JSON; then it
// reads the ']'.
func (s *scanner) eachElement(fn func(k int, v []byte) error) error {
	for k := 0; ; k++ {
		v, err := s.validValue(2)
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
		c, err := s.peek()
		if err != nil {
			return err
		}
		s.i++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return fmt.Errorf("invalid JSON: %q after an array element", c)
		}
	}
}

// syntax returns the error of v, a value that is not valid JSON.
func (s *scanner) syntax(v []byte) error { return syntaxError(v, nil) }

// StreamList decodes a JSON list response from r into unstructured
// objects as the package's StreamList decodes one into typed objects:
// item by item as its bytes arrive, each handed to put in turn, and its
// metadata returned once the body is read to its end. Items are decoded
// as UnstructuredJSONScheme decodes a list's: one without a kind and an
// apiVersion gets the list's kind, less its "List" suffix, and the
// list's apiVersion, and, where the list tells them only after its
// items, kind and apiVersion, those of the resource listed. An item that
// does not decode (a number out of range, a value that is no object) is
// handed to bad if its metadata names it, and else fails the list, as
// does an item that is null. A body without items, which
// UnstructuredJSONScheme would take for an object, is not a list: an
// error.
func (u *Unstructured) StreamList(r io.Reader, kind, apiVersion string, put func(*unstructured.Unstructured), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
	var meta metav1.ListMeta
	itemKind, itemAPIVersion := "", ""
	hasItems, err := streamList(r, func(s *scanner) error {
		itemKind, itemAPIVersion = cmp.Or(itemKind, kind), cmp.Or(itemAPIVersion, apiVersion)
		itemPlace := u.root.Value("items", u.d.sh.On()).Elem(u.d.sh.On())
		return s.elements(func(k int, item []byte) error {
			u.mu.Lock()
			m, _, err := u.object(itemPlace, item, 0, false)
			u.mu.Unlock()
			if err == nil && m == nil {
				err = &Error{Err: errors.New("cannot unmarshal null into an item of a list")}
			}
			if err != nil {
				if bu := undecodable(item, err); bu != nil {
					bad(bu)
					return nil
				}
				return fmt.Errorf("item %d: %w", k, err)
			}
			obj := &unstructured.Unstructured{Object: m}
			if obj.GetKind() == "" && obj.GetAPIVersion() == "" {
				obj.SetKind(itemKind)
				obj.SetAPIVersion(itemAPIVersion)
			}
			put(obj)
			return nil
		})
	}, func(key string, v []byte) error {
		switch key {
		case "kind":
			if k, ok := stringValue(v); ok {
				itemKind = strings.TrimSuffix(k, "List")
			}
		case "apiVersion":
			if a, ok := stringValue(v); ok {
				itemAPIVersion = a
			}
		case "metadata":
			return decodeListMeta(&meta, v)
		}
		return nil
	})
	if err == nil && !hasItems {
		// UnstructuredJSONScheme decodes it as an object: a list of one,
		// which the response to a list request never is.
		err = errors.New("not a list: it has no items")
	}
	if err != nil {
		return metav1.ListMeta{}, fmt.Errorf("decoding %sList: %w", kind, err)
	}
	return meta, nil
}

// stringValue returns the string that v, a valid JSON value, holds, and
// whether it is a string.
func stringValue(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	raw, _ := readString(v, 0)
	return string(raw), true
}
