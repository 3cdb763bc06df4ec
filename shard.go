package informers

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShardField is the field whose hash places an object in a shard, spelled
// as the server's shard selectors spell it.
type ShardField string

// The fields the API server shards by (KEP-5866).
const (
	// ShardByUID spreads objects evenly; an object never changes shard.
	ShardByUID ShardField = "object.metadata.uid"
	// ShardByNamespace keeps each namespace's objects in one shard.
	ShardByNamespace ShardField = "object.metadata.namespace"
)

// HashRange is the range [Start, End) of the 64-bit FNV-1a hash space of
// shard selectors. End 0 stands for 2^64, the end of the space, so the
// zero HashRange is the whole space.
type HashRange struct {
	Start, End uint64
}

// last returns the highest hash in r.
func (r HashRange) last() uint64 { return r.End - 1 } // End 0 wraps to 2^64-1

// Contains reports whether hash h is in r.
func (r HashRange) Contains(h uint64) bool { return h >= r.Start && h <= r.last() }

// String spells r as a shard selector does, "[0x…, 0x…)".
func (r HashRange) String() string { return "[" + hexBound(r.Start) + ", " + endBound(r.End) + ")" }

// SplitHashSpace returns n ranges of near-equal size that cover the hash
// space in order: shard i of n is SplitHashSpace(n)[i]. It returns nil
// for n < 1.
func SplitHashSpace(n int) []HashRange {
	if n < 1 {
		return nil
	}
	out := make([]HashRange, n)
	for i := range out {
		out[i] = HashRange{Start: spacePoint(i, n), End: spacePoint(i+1, n)}
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

// Shard selects the objects whose field hashes, with 64-bit FNV-1a, into
// one of its ranges: what the API server's shard selectors select. A
// Shard with no ranges selects nothing.
type Shard struct {
	// Field is the field hashed; "" means ShardByUID.
	Field ShardField
	// Ranges are the hash ranges of the shard, in any order; they may
	// overlap.
	Ranges []HashRange
}

// ShardOf returns shard i of n equal shards by field.
func ShardOf(field ShardField, i, n int) Shard {
	if i < 0 || i >= n {
		return Shard{Field: field}
	}
	return Shard{Field: field, Ranges: SplitHashSpace(n)[i : i+1]}
}

// HashOf returns the 64-bit FNV-1a hash of obj's field, over the field's
// bytes, as the API server computes it.
func HashOf(field ShardField, obj metav1.Object) uint64 {
	var v string
	switch field {
	case ShardByNamespace:
		v = obj.GetNamespace()
	default:
		v = string(obj.GetUID())
	}
	return fnv64a(v)
}

// fnv64a is FNV-1a over s, without allocating.
func fnv64a(s string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// Contains reports whether obj is in the shard.
func (s Shard) Contains(obj metav1.Object) bool { return s.containsHash(HashOf(s.Field, obj)) }

func (s Shard) containsHash(h uint64) bool {
	for _, r := range s.Ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// canonical returns s with its field spelled out and its ranges sorted,
// and overlapping or adjacent ones merged.
func (s Shard) canonical() Shard {
	out := Shard{Field: cmp.Or(s.Field, ShardByUID)}
	rs := slices.Clone(s.Ranges)
	slices.SortFunc(rs, func(a, b HashRange) int { return cmp.Compare(a.Start, b.Start) })
	for _, r := range rs {
		if n := len(out.Ranges); n > 0 {
			prev := &out.Ranges[n-1]
			if prev.last() == math.MaxUint64 {
				break // the rest is covered
			}
			if r.Start <= prev.last()+1 {
				if r.last() > prev.last() {
					prev.End = r.End
				}
				continue
			}
		}
		out.Ranges = append(out.Ranges, r)
	}
	return out
}

// validate checks the field and that every range is non-empty.
func (s Shard) validate() error {
	switch s.Field {
	case "", ShardByUID, ShardByNamespace:
	default:
		return fmt.Errorf("shard field %q: the server shards by %s or %s", s.Field, ShardByUID, ShardByNamespace)
	}
	for _, r := range s.Ranges {
		if r.End != 0 && r.End <= r.Start {
			return fmt.Errorf("shard range %s is empty", r)
		}
	}
	return nil
}

// Selector returns the shard selector the API server takes in
// metav1.ListOptions.ShardSelector, with the ranges merged and sorted:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// A shard with no ranges has no selector: "" (which a server takes as
// "everything").
func (s Shard) Selector() string {
	c := s.canonical()
	terms := make([]string, len(c.Ranges))
	for i, r := range c.Ranges {
		terms[i] = fmt.Sprintf("shardRange(%s, '%s', '%s')", c.Field, hexBound(r.Start), endBound(r.End))
	}
	return strings.Join(terms, " || ")
}

// String is the shard's selector, or "no ranges".
func (s Shard) String() string {
	if len(s.Ranges) == 0 {
		return "no ranges"
	}
	return s.Selector()
}

// hexBound spells a bound as the server requires: 0x and 16 lowercase
// hex digits.
func hexBound(v uint64) string { return fmt.Sprintf("0x%016x", v) }

// endBound spells an exclusive end, 0 standing for 2^64.
func endBound(v uint64) string {
	if v == 0 {
		return spaceEnd
	}
	return hexBound(v)
}

// spaceEnd is 2^64, the exclusive end of the hash space.
const spaceEnd = "0x10000000000000000"

var shardTerm = regexp.MustCompile(`^shardRange\(\s*(object\.metadata\.(?:uid|namespace))\s*,\s*'(0x[0-9a-f]+)'\s*,\s*'(0x[0-9a-f]+)'\s*\)$`)

// ParseShardSelector parses a shard selector as the API server accepts it:
// shardRange terms over one field, joined by ||, with bounds of 16 hex
// digits (or 2^64 as the end). It is what a fake server needs to serve
// shard selectors.
func ParseShardSelector(sel string) (Shard, error) {
	var s Shard
	if strings.TrimSpace(sel) == "" {
		return s, fmt.Errorf("empty shard selector")
	}
	for term := range strings.SplitSeq(sel, "||") {
		m := shardTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return Shard{}, fmt.Errorf("shard selector term %q: want shardRange(object.metadata.uid|object.metadata.namespace, '0x…', '0x…')", strings.TrimSpace(term))
		}
		if s.Field != "" && ShardField(m[1]) != s.Field {
			return Shard{}, fmt.Errorf("shard selector %q: all ranges must use one field", sel)
		}
		s.Field = ShardField(m[1])
		start, err := parseBound(m[2], false)
		if err != nil {
			return Shard{}, err
		}
		end, err := parseBound(m[3], true)
		if err != nil {
			return Shard{}, err
		}
		r := HashRange{Start: start, End: end}
		if m[3] != spaceEnd && end <= start {
			return Shard{}, fmt.Errorf("shard range %s is empty", r)
		}
		s.Ranges = append(s.Ranges, r)
	}
	return s, nil
}

func parseBound(v string, end bool) (uint64, error) {
	if end && v == spaceEnd {
		return 0, nil
	}
	if len(v) != 18 {
		return 0, fmt.Errorf("shard bound %q: want 0x and 16 hex digits", v)
	}
	return strconv.ParseUint(v[2:], 16, 64)
}

// shardKey tells informers of different shards apart in a Factory.
func shardKey(s *Shard) string {
	if s == nil {
		return ""
	}
	c := s.canonical()
	return string(c.Field) + "|" + c.Selector()
}
