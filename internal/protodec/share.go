package protodec

import (
	"hash/maphash"
	"unsafe"
)

// decoder is the state of one Decoder: whether it shares, and the seeds of
// its hashes. Encodings are told apart by two 64-bit hashes of distinct
// random seeds and their length; strings, byte slices and numbers are
// compared in full.
type decoder struct {
	share        bool
	seed1, seed2 maphash.Seed
}

func newDecoder(share bool) decoder {
	return decoder{share: share, seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
}

// table returns the table of pl if the decoder shares at pl now.
func (d *decoder) table(pl *place) *table {
	if !d.share || pl == nil || !pl.tab.on() {
		return nil
	}
	return &pl.tab
}

// str returns b as a string: the one pl remembers if equal, or a new one,
// which pl then remembers.
func (d *decoder) str(pl *place, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	t := d.table(pl)
	if t == nil {
		return string(b)
	}
	h := maphash.Bytes(d.seed1, b)
	if s := t.find(h, func(s *slot) bool { return unsafe.String((*byte)(s.p), s.n) == string(b) }); s != nil {
		out := unsafe.String((*byte)(s.p), s.n)
		t.count(true)
		return out
	}
	out := string(b)
	t.put(slot{h1: h, p: unsafe.Pointer(unsafe.StringData(out)), n: len(out)})
	t.count(false)
	return out
}

// strPtr returns a pointer to b as a string, shared as str shares strings.
func (d *decoder) strPtr(pl *place, b []byte) *string {
	t := d.table(pl)
	if t == nil {
		s := string(b)
		return &s
	}
	h := maphash.Bytes(d.seed1, b)
	if s := t.find(h, func(s *slot) bool { return *(*string)(s.p) == string(b) }); s != nil {
		out := (*string)(s.p)
		t.count(true)
		return out
	}
	out := new(string)
	*out = string(b)
	t.put(slot{h1: h, p: unsafe.Pointer(out)})
	t.count(false)
	return out
}

// bytes returns a copy of b, never nil, shared as str shares strings.
func (d *decoder) bytes(pl *place, b []byte) []byte {
	t := d.table(pl)
	if t == nil || len(b) == 0 {
		return append([]byte{}, b...)
	}
	h := maphash.Bytes(d.seed1, b)
	if s := t.find(h, func(s *slot) bool { return string(unsafe.Slice((*byte)(s.p), s.n)) == string(b) }); s != nil {
		out := unsafe.Slice((*byte)(s.p), s.n)
		t.count(true)
		return out
	}
	out := append([]byte(nil), b...)
	out = out[:len(out):len(out)]
	t.put(slot{h1: h, p: unsafe.Pointer(unsafe.SliceData(out)), n: len(out)})
	t.count(false)
	return out
}

// number is the type of the numbers held by pointer.
type number interface{ ~int32 | ~int64 | ~bool }

// numPtr returns a pointer to v, shared with the pointers to equal values
// met at pl.
func numPtr[N number](d *decoder, pl *place, v N, key uint64) *N {
	t := d.table(pl)
	if t == nil {
		return &v
	}
	h := key*0x9e3779b97f4a7c15 ^ 1
	if s := t.find(h, func(s *slot) bool { return *(*N)(s.p) == v }); s != nil {
		out := (*N)(s.p)
		t.count(true)
		return out
	}
	out := &v
	t.put(slot{h1: h, p: unsafe.Pointer(out)})
	t.count(false)
	return out
}

// found is a value remembered for an encoding.
type found struct {
	p    unsafe.Pointer
	n, c int
}

// lookup returns the value pl remembers for encoding enc, if any, and the
// hash that remember needs; ok is false if pl does not share now.
func (d *decoder) lookup(pl *place, enc []byte) (v found, hit bool, h uint64, ok bool) {
	t := d.table(pl)
	if t == nil {
		return found{}, false, 0, false
	}
	h = maphash.Bytes(d.seed1, enc)
	var h2 uint64
	s := t.find(h, func(s *slot) bool {
		if s.size != len(enc) {
			return false
		}
		if h2 == 0 {
			h2 = maphash.Bytes(d.seed2, enc) | 1
		}
		return s.h2 == h2
	})
	if s != nil {
		v = found{s.p, s.n, s.c}
	}
	t.count(s != nil)
	return v, s != nil, h, true
}

// remember has pl remember v, decoded from encoding enc of hash h, unless
// pl turned itself off meanwhile.
func (d *decoder) remember(pl *place, enc []byte, h uint64, v found) {
	if pl.tab.slots == nil {
		return
	}
	pl.tab.put(slot{h1: h, h2: maphash.Bytes(d.seed2, enc) | 1, size: len(enc), p: v.p, n: v.n, c: v.c})
}
