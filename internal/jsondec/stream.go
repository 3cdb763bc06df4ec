package jsondec

import (
	"errors"
	"fmt"
	"io"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// StreamList decodes a JSON list response whose kind must be listKind
// (WidgetList) from r as its bytes arrive, never holding the body whole:
// each item is read into a reused buffer (a few tens of kilobytes, or one
// item where an item is larger), decoded into a new object made by newT
// and handed to put at once; an item that does not fit the type is handed
// to bad if its metadata names it, and else fails the list. The list's
// metadata, before or after its items, is returned once the body is read
// to its end. A body that ends or fails part-way is an error, after the
// items before it were handed over.
//
// It decodes what DecodeList decodes, and fails where it fails.
func StreamList[T runtime.Object](dec *Decoder, r io.Reader, listKind string, newT func() T, put func(T), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
	var meta metav1.ListMeta
	err := streamList(r, listKind, func(s *scanner) error {
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
	}, func(b []byte) error {
		plain := newDecoder(false)
		_, err := plain.value(listMetaPlan, nil, unsafe.Pointer(&meta), b, 0)
		return finish(err, nil)
	})
	if err != nil {
		return metav1.ListMeta{}, fmt.Errorf("decoding %s: %w", listKind, err)
	}
	return meta, nil
}

// streamList reads the JSON list of kind listKind from r: items reads its
// items, at the scanner; metadata decodes its metadata, once the list is
// read. Every value is checked to be valid JSON before it is decoded.
func streamList(r io.Reader, listKind string, items func(*scanner) error, metadata func([]byte) error) error {
	s := &scanner{r: r, buf: make([]byte, 0, 32<<10)}
	if err := s.open('{', "not a JSON object"); err != nil {
		return err
	}
	var meta []byte
	var seenItems, seenMeta bool
	empty, err := s.empty('}')
	if err != nil {
		return err
	}
	for !empty {
		key, err := s.value()
		if err != nil {
			return err
		}
		if key[0] != '"' || !Valid(key) {
			return s.syntax(key)
		}
		raw, _ := readString(key, 0)
		k := string(raw) // the buffer moves as the scanner reads on
		if err := s.open(':', "invalid JSON: no colon after an object key"); err != nil {
			return err
		}
		switch k {
		case "items":
			if seenItems {
				return errors.New("items twice")
			}
			seenItems = true
			c, err := s.peek()
			if err != nil {
				return err
			}
			switch c {
			case '[':
				if err := items(s); err != nil {
					return err
				}
			case 'n':
				v, err := s.value()
				if err != nil {
					return err
				}
				if string(v) != "null" {
					return s.syntax(v)
				}
			default:
				v, err := s.value()
				if err != nil {
					return err
				}
				if !s.valid(v, 1) {
					return s.syntax(v)
				}
				return errors.New("items are not an array")
			}
		default:
			v, err := s.value()
			if err != nil {
				return err
			}
			if !s.valid(v, 1) {
				return s.syntax(v)
			}
			switch k {
			case "kind":
				if v[0] == '"' && string(v) != `"`+listKind+`"` {
					return fmt.Errorf("the list is a %s, want %q", v, listKind)
				}
			case "metadata":
				if seenMeta {
					return errors.New("metadata twice")
				}
				seenMeta = true
				meta = append([]byte(nil), v...)
			}
		}
		c, err := s.peek()
		if err != nil {
			return err
		}
		s.i++
		switch c {
		case ',':
		case '}':
			empty = true
		default:
			return fmt.Errorf("invalid JSON: %q after an object member", c)
		}
	}
	if _, err := s.peek(); err != io.ErrUnexpectedEOF {
		if err == nil {
			err = errors.New("invalid JSON: data after the top-level value")
		}
		return err
	}
	if meta != nil {
		return metadata(meta)
	}
	return nil
}

// scanner reads JSON values from r through a buffer that holds the value
// being read, and what was read past it.
type scanner struct {
	r   io.Reader
	buf []byte // buf[i:] is read and not yet scanned
	i   int
	err error // r's error, once it failed or ended
	// deepest is the nesting of arrays and objects of the last value.
	deepest int
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

// elements reads the array that starts at the scanner, and calls fn with
// the index and the bytes of each element, valid JSON.
func (s *scanner) elements(fn func(k int, v []byte) error) error {
	if err := s.open('[', "not an array"); err != nil {
		return err
	}
	done, err := s.empty(']')
	for k := 0; !done; k++ {
		if err != nil {
			return err
		}
		v, err := s.value()
		if err != nil {
			return err
		}
		if !s.valid(v, 2) {
			return s.syntax(v)
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
			done = true
		default:
			return fmt.Errorf("invalid JSON: %q after an array element", c)
		}
	}
	return err
}

// syntax returns the error of v, a value that is not valid JSON.
func (s *scanner) syntax(v []byte) error { return syntaxError(v, nil) }
