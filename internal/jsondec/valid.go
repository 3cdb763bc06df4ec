package jsondec

// maxNesting is encoding/json's limit on the nesting of arrays and
// objects: deeper input is invalid.
const maxNesting = 10000

// Valid reports whether b is one JSON value with white space around it,
// as json.Valid does, including its limit on nesting; invalid UTF-8 in
// strings is valid, as there. It reads b in one pass, several times faster
// than encoding/json's scanner.
func Valid(b []byte) bool { return valid(b, nil) }

// valid is Valid, telling ev, if not nil, of the members of the object b
// and of its member "object".
func valid(b []byte, ev *eventParts) bool {
	end := validValue(b, ws(b, 0), 0, ev)
	return end >= 0 && ws(b, end) == len(b)
}

// validValue returns the index after the valid JSON value that starts at
// b[i], inside outer arrays and objects (which count toward the limit on
// nesting), or -1 if there is none: the value is invalid or b ends before
// it does. It tells ev, if not nil, of the members of the object and of
// its member "object".
func validValue(b []byte, i, outer int, ev *eventParts) int {
	var first [64]byte
	open := first[:0] // the arrays and objects around i: '[' or '{'
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(open)+outer >= maxNesting {
				return -1
			}
			if i = ws(b, i+1); i < len(b) && b[i] == c+2 { // '}' or ']'
				i++
				break
			}
			open = append(open, c)
			if c == '{' {
				k := i
				if i = member(b, i); i < 0 {
					return -1
				}
				if ev != nil {
					ev.member(b, k, i, open)
				}
			}
			continue
		case '"':
			if i = validString(b, i); i < 0 {
				return -1
			}
		case 't':
			if i = literal(b, i, "true"); i < 0 {
				return -1
			}
		case 'f':
			if i = literal(b, i, "false"); i < 0 {
				return -1
			}
		case 'n':
			if i = literal(b, i, "null"); i < 0 {
				return -1
			}
		default:
			if i = validNumber(b, i); i < 0 {
				return -1
			}
		}
		// A value ends before b[i]: what follows closes or continues
		// the arrays and objects it is in.
		for {
			if ev != nil {
				ev.ended(b, i, len(open))
			}
			if len(open) == 0 {
				return i
			}
			if i = ws(b, i); i >= len(b) {
				return -1
			}
			top := open[len(open)-1]
			if b[i] == top+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return -1
			}
			if i = ws(b, i+1); top == '{' {
				k := i
				if i = member(b, i); i < 0 {
					return -1
				}
				if ev != nil {
					ev.member(b, k, i, open)
				}
			}
			break
		}
	}
}

// member returns the index of the value of the object member whose key
// starts at b[i], or -1 if there is no key and colon.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	if i = ws(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return ws(b, i+1)
}

// plainByte marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= ' ' && c != '"' && c != '\\'
	}
	return t
}()

// validString returns the index after the valid string that starts with
// the quote at b[i], or -1.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		c := b[i]
		if plainByte[c] {
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c < ' ':
			return -1
		}
		// A backslash.
		if i++; i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(b) {
				return -1
			}
			for _, h := range b[i+1 : i+5] {
				if !isHex(h) {
					return -1
				}
			}
			i += 4
		default:
			return -1
		}
	}
	return -1
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// literal returns the index after lit, which must start at b[i], or -1.
func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber returns the index after the valid number that starts at
// b[i], or -1: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digits(b, i)
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digits returns the index of the first byte at or after i that is not a
// digit.
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}
