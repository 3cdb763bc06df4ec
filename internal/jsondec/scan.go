package jsondec

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The decoder reads input that encoding/json's scanner accepted (the
// Decoder checks it first), so these functions trust its syntax: they
// find the ends of values, never judge them.

// ws returns the index of the first byte at or after i that is not
// white space.
func ws(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index after the string that starts with the
// quote at b[i], and whether it is plain: no escapes, only ASCII.
func stringEnd(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		if asciiPlain[c] {
			continue
		}
		switch c {
		case '"':
			return j + 1, plain
		case '\\':
			j++
		}
		plain = false
	}
	return len(b), plain
}

// asciiPlain marks the bytes a plain string holds: ASCII, not a quote or
// a backslash.
var asciiPlain = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// readString returns the content of the string that starts at b[i],
// unquoted, and the index after it.
func readString(b []byte, i int) (raw []byte, end int) {
	end, plain := stringEnd(b, i)
	raw = b[i+1 : end-1]
	if !plain {
		raw = unquote(b[i:end])
	}
	return raw, end
}

// readKey returns the key of the object member that starts at b[j],
// unquoted, and the index of its value.
func readKey(b []byte, j int) (key []byte, value int) {
	key, end := readString(b, j)
	return key, ws(b, ws(b, end)+1)
}

// nextMember returns, after a member's value that ends at b[j], the index
// of the next member's key, or, with last, the index after the object.
func nextMember(b []byte, j int) (next int, last bool) {
	j = ws(b, j)
	if b[j] == '}' {
		return j + 1, true
	}
	return ws(b, j+1), false
}

// skip returns the index after the value that starts at b[i].
func skip(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j, _ = stringEnd(b, j)
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		return literalEnd(b, i)
	}
}

// literalEnd returns the index after the number, true, false or null
// that starts at b[i].
func literalEnd(b []byte, i int) int {
	for i < len(b) {
		switch c := b[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c == '-', c == '+', c == '.', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}

// countElements returns how many elements the array starting at b[i]
// holds, and the index after it.
func countElements(b []byte, i int) (n, end int) {
	j := ws(b, i+1)
	if b[j] == ']' {
		return 0, j + 1
	}
	for {
		n++
		j = ws(b, skip(b, j))
		if b[j] == ']' {
			return n, j + 1
		}
		j = ws(b, j+1) // past the comma
	}
}

// unsafeString returns b as a string without copying; the string must
// not outlive b nor be kept.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// unquote returns the content of the string literal s, quotes included,
// as encoding/json reads it: escapes resolved, invalid UTF-8 and lone
// surrogates replaced by U+FFFD.
func unquote(s []byte) []byte {
	s = s[1 : len(s)-1]
	r := 0
	for r < len(s) {
		c := s[r]
		if c == '\\' || c == '"' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		rr, size := utf8.DecodeRune(s[r:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		r += size
	}
	if r == len(s) {
		return s
	}
	out := make([]byte, len(s)+2*utf8.UTFMax)
	w := copy(out, s[0:r])
	for r < len(s) {
		if w >= len(out)-2*utf8.UTFMax {
			nb := make([]byte, (len(out)+utf8.UTFMax)*2)
			copy(nb, out[0:w])
			out = nb
		}
		switch c := s[r]; {
		case c == '\\':
			r++
			switch s[r] {
			case '"', '\\', '/', '\'':
				out[w] = s[r]
				r++
				w++
			case 'b':
				out[w] = '\b'
				r++
				w++
			case 'f':
				out[w] = '\f'
				r++
				w++
			case 'n':
				out[w] = '\n'
				r++
				w++
			case 'r':
				out[w] = '\r'
				r++
				w++
			case 't':
				out[w] = '\t'
				r++
				w++
			case 'u':
				r--
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != replacementChar {
						r += 6
						w += utf8.EncodeRune(out[w:], dec)
						break
					}
					rr = replacementChar
				}
				w += utf8.EncodeRune(out[w:], rr)
			}
		case c < utf8.RuneSelf:
			out[w] = c
			r++
			w++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			w += utf8.EncodeRune(out[w:], rr)
		}
	}
	return out[0:w]
}

const replacementChar = '\uFFFD'

// getu4 decodes \uXXXX from the beginning of s, returning the hex value,
// or -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	r, err := strconv.ParseUint(unsafeString(s[2:6]), 16, 32)
	if err != nil {
		return -1
	}
	return rune(r)
}

// unquoted returns the content of v, a JSON string, as a string.
func unquoted(v []byte) string {
	raw, _ := readString(v, 0)
	return string(raw)
}
