package shard

import "math/bits"

// Range is the range [Start, End) of the 64-bit FNV-1a hash space of
// shard selectors. End 0 stands for 2^64, the end of the space, so the
// zero Range is the whole space.
type Range struct {
	Start, End uint64
}

// last returns the highest hash in r.
func (r Range) last() uint64 { return r.End - 1 } // End 0 wraps to 2^64-1

// Contains reports whether hash h is in r.
func (r Range) Contains(h uint64) bool { return h >= r.Start && h <= r.last() }

// String spells r as a shard selector does, "[0x…, 0x…)".
func (r Range) String() string { return "[" + hexBound(r.Start) + ", " + endBound(r.End) + ")" }

// Split returns n ranges of near-equal size that cover the hash space in
// order: shard i of n has range Split(n)[i]. It returns nil for n < 1.
func Split(n int) []Range {
	if n < 1 {
		return nil
	}
	out := make([]Range, n)
	for i := range out {
		out[i] = Range{Start: spacePoint(i, n), End: spacePoint(i+1, n)}
	}
	return out
}

// spacePoint returns i/n of 2^64, rounded down; n/n is 0, standing for
// 2^64.
func spacePoint(i, n int) uint64 {
	if i >= n {
		return 0
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(n)) // (i·2^64)/n, i < n
	return q
}
