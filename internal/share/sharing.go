package share

// Sharing is what a decoder holds to share values between the objects it
// decodes: whether it shares at all, and the Hasher that finds values in
// its places' tables. Its methods take the table of a place, nil where
// there is no place, and use it only if the place shares now (Table.On).
type Sharing struct {
	Hasher
	on bool
}

// NewSharing returns the Sharing of a decoder that shares if on.
func NewSharing(on bool) Sharing { return Sharing{Hasher: NewHasher(), on: on} }

// On reports whether the decoder shares at all.
func (s *Sharing) On() bool { return s.on }

// At returns t, the table of a place, if the decoder shares and the place
// shares now; else nil.
func (s *Sharing) At(t *Table) *Table {
	if !s.on || t == nil || !t.On() {
		return nil
	}
	return t
}

// StrAt returns b as a string, shared as StrLocal shares it: through
// the table t if the decoder shares at its place now, and through l (if
// not nil) within the object l is decoding, if any. An empty b is "", and
// leaves the place untouched.
func (s *Sharing) StrAt(t *Table, l *Local, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if l != nil && l.enc == nil {
		l = nil
	}
	return s.StrLocal(s.At(t), l, b)
}
