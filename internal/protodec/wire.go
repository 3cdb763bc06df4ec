package protodec

import (
	"errors"
	"fmt"
	"io"
)

// The wire format is read the way the generated Unmarshal methods read it,
// quirks included, so that a malformed encoding fails here exactly where
// it fails there: varints of up to ten bytes whose bits past 64 are
// dropped, field numbers truncated to 32 bits, lengths checked against the
// end of the enclosing message (not of a map entry), and unknown fields
// skipped as skipGenerated skips them.

// The errors of the generated code, with the same text.
var (
	errInvalidLength = errors.New("proto: negative length found during unmarshaling")
	errIntOverflow   = errors.New("proto: integer overflow")
	errEndOfGroup    = errors.New("proto: unexpected end of group")
)

// Wire types.
const (
	wireVarint     = 0
	wireFixed64    = 1
	wireBytes      = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireFixed32    = 5
)

// uvarint reads the varint at b[i:] and returns it with the index after
// it.
func uvarint(b []byte, i int) (uint64, int, error) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, nil
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, i, errIntOverflow
		}
		if i >= len(b) {
			return 0, i, io.ErrUnexpectedEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// span reads a length at b[i:] and returns the bounds of the bytes it
// announces, checked as the generated code checks them.
func span(b []byte, i int) (start, end int, err error) {
	n, i, err := uvarint(b, i)
	if err != nil {
		return 0, 0, err
	}
	length := int(n)
	if length < 0 {
		return 0, 0, errInvalidLength
	}
	end = i + length
	if end < 0 {
		return 0, 0, errInvalidLength
	}
	if end > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return i, end, nil
}

// skipField returns the length of the field whose tag starts b, as
// skipGenerated does: groups are skipped whole.
func skipField(b []byte) (int, error) {
	l := len(b)
	i, depth := 0, 0
	for i < l {
		wire, next, err := uvarint(b, i)
		if err != nil {
			return 0, err
		}
		i = next
		switch wt := int(wire & 7); wt {
		case wireVarint:
			for shift := uint(0); ; shift += 7 {
				if shift >= 64 {
					return 0, errIntOverflow
				}
				if i >= l {
					return 0, io.ErrUnexpectedEOF
				}
				i++
				if b[i-1] < 0x80 {
					break
				}
			}
		case wireFixed64:
			i += 8
		case wireBytes:
			n, next, err := uvarint(b, i)
			if err != nil {
				return 0, err
			}
			i = next
			length := int(n)
			if length < 0 {
				return 0, errInvalidLength
			}
			i += length
		case wireStartGroup:
			depth++
		case wireEndGroup:
			if depth == 0 {
				return 0, errEndOfGroup
			}
			depth--
		case wireFixed32:
			i += 4
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", wt)
		}
		if i < 0 {
			return 0, errInvalidLength
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// skipAt skips the field whose tag starts at b[pre:] and returns the index
// after it, which must not pass limit.
func skipAt(b []byte, pre, limit int) (int, error) {
	n, err := skipField(b[pre:])
	if err != nil {
		return 0, err
	}
	if n < 0 || pre+n < 0 {
		return 0, errInvalidLength
	}
	if pre+n > limit {
		return 0, io.ErrUnexpectedEOF
	}
	return pre + n, nil
}

// wrongWireType is the generated code's error for a field of the wrong
// wire type.
func wrongWireType(wt int, field string) error {
	return fmt.Errorf("proto: wrong wireType = %d for field %s", wt, field)
}
