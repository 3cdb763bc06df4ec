package share

import (
	"hash/maphash"
	"unsafe"
)

// Hasher finds values in tables by their bytes. Encodings are told apart
// by two 64-bit hashes of distinct random seeds and their length; strings,
// byte slices and numbers are compared in full. A nil *Table stands for a
// place that does not share now: the value is made anew.
type Hasher struct {
	seed1, seed2 maphash.Seed
}

// NewHasher returns a Hasher of fresh random seeds.
func NewHasher() Hasher {
	return Hasher{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
}

// Hash returns the hash of b by which tables and Local find values.
func (hs *Hasher) Hash(b []byte) uint64 { return maphash.Bytes(hs.seed1, b) }

// Str returns b as a string: the one t remembers if equal, or a new one,
// which t then remembers.
func (hs *Hasher) Str(t *Table, b []byte) string { return hs.StrLocal(t, nil, b) }

// StrLocal is Str that also shares the strings of the object being
// decoded, which l (if not nil) remembers.
func (hs *Hasher) StrLocal(t *Table, l *Local, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if t == nil && l == nil {
		return string(b)
	}
	h := maphash.Bytes(hs.seed1, b)
	if t != nil {
		if s := t.Find(h, func(s *Slot) bool { return unsafe.String((*byte)(s.P), s.N) == string(b) }); s != nil {
			out := unsafe.String((*byte)(s.P), s.N)
			t.Count(true)
			return out
		}
	}
	out, ok := "", false
	if l != nil {
		out, ok = l.Str(h, b)
	}
	if !ok {
		out = string(b)
		if l != nil {
			l.PutStr(h, out)
		}
	}
	if t != nil {
		t.Put(Slot{H1: h, P: unsafe.Pointer(unsafe.StringData(out)), N: len(out)})
		t.Count(false)
	}
	return out
}

// StrPtr returns a pointer to b as a string, shared as Str shares strings.
func (hs *Hasher) StrPtr(t *Table, b []byte) *string { return hs.StrPtrLocal(t, nil, b) }

// StrPtrLocal is StrPtr that also shares the pointers of the object being
// decoded, which l (if not nil) remembers.
func (hs *Hasher) StrPtrLocal(t *Table, l *Local, b []byte) *string {
	if t == nil && l == nil {
		s := string(b)
		return &s
	}
	h := maphash.Bytes(hs.seed1, b)
	if t != nil {
		if s := t.Find(h, func(s *Slot) bool { return *(*string)(s.P) == string(b) }); s != nil {
			out := (*string)(s.P)
			t.Count(true)
			return out
		}
	}
	var out *string
	ok := false
	if l != nil {
		out, ok = l.StrPtr(h, b)
	}
	if !ok {
		out = new(string)
		*out = string(b)
		if l != nil {
			l.PutStrPtr(h, out)
		}
	}
	if t != nil {
		t.Put(Slot{H1: h, P: unsafe.Pointer(out)})
		t.Count(false)
	}
	return out
}

// Bytes returns a copy of b, never nil, shared as Str shares strings.
func (hs *Hasher) Bytes(t *Table, b []byte) []byte {
	if t == nil || len(b) == 0 {
		return append([]byte{}, b...)
	}
	h := maphash.Bytes(hs.seed1, b)
	if s := t.Find(h, func(s *Slot) bool { return string(unsafe.Slice((*byte)(s.P), s.N)) == string(b) }); s != nil {
		out := unsafe.Slice((*byte)(s.P), s.N)
		t.Count(true)
		return out
	}
	out := append([]byte(nil), b...)
	out = out[:len(out):len(out)]
	t.Put(Slot{H1: h, P: unsafe.Pointer(unsafe.SliceData(out)), N: len(out)})
	t.Count(false)
	return out
}

// Number is the type of the numbers held by pointer.
type Number interface {
	~int32 | ~int64 | ~bool | ~float64
}

// NumPtr returns a pointer to v, shared with the pointers to equal values
// t remembers; key is v's bits.
func NumPtr[N Number](t *Table, v N, key uint64) *N {
	if t == nil {
		return &v
	}
	h := key*0x9e3779b97f4a7c15 ^ 1
	if s := t.Find(h, func(s *Slot) bool { return *(*N)(s.P) == v }); s != nil {
		out := (*N)(s.P)
		t.Count(true)
		return out
	}
	out := &v
	t.Put(Slot{H1: h, P: unsafe.Pointer(out)})
	t.Count(false)
	return out
}

// Found is a value remembered for an encoding: a pointer, or a slice's
// data, length and capacity.
type Found struct {
	P    unsafe.Pointer
	N, C int
	// Interior marks a pointer into a value of the object being decoded
	// (a field it holds by value), which Local may share within the
	// object but tables never remember: the field may be decoded again.
	Interior bool
}

// Lookup returns the value t remembers for encoding enc, if any, and the
// hash that Remember needs.
func (hs *Hasher) Lookup(t *Table, enc []byte) (v Found, hit bool, h uint64) {
	h = maphash.Bytes(hs.seed1, enc)
	var h2 uint64
	s := t.Find(h, func(s *Slot) bool {
		if s.Size != len(enc) {
			return false
		}
		if h2 == 0 {
			h2 = maphash.Bytes(hs.seed2, enc) | 1
		}
		return s.H2 == h2
	})
	if s != nil {
		v = Found{P: s.P, N: s.N, C: s.C}
	}
	t.Count(s != nil)
	return v, s != nil, h
}

// Remember has t remember v, decoded from encoding enc of hash h, unless
// t turned itself off meanwhile.
func (hs *Hasher) Remember(t *Table, enc []byte, h uint64, v Found) {
	if !t.Live() {
		return
	}
	t.Put(Slot{H1: h, H2: maphash.Bytes(hs.seed2, enc) | 1, Size: len(enc), P: v.P, N: v.N, C: v.C})
}
