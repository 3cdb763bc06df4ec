package shard

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Selector returns the shard selector the API server takes in
// metav1.ListOptions.ShardSelector, with the ranges merged and sorted:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// A shard with no ranges has no selector: "" (which a server takes as
// "everything").
func (s Shard) Selector() string {
	c := s.Canonical()
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

var term = regexp.MustCompile(`^shardRange\(\s*(object\.metadata\.(?:uid|namespace))\s*,\s*'(0x[0-9a-f]+)'\s*,\s*'(0x[0-9a-f]+)'\s*\)$`)

// Parse parses a shard selector as the API server accepts it: shardRange
// terms over one field, joined by ||, with bounds of 16 hex digits (or
// 2^64 as the end). It is what a fake server needs to serve shard
// selectors.
func Parse(sel string) (Shard, error) {
	var s Shard
	if strings.TrimSpace(sel) == "" {
		return s, fmt.Errorf("empty shard selector")
	}
	for t := range strings.SplitSeq(sel, "||") {
		m := term.FindStringSubmatch(strings.TrimSpace(t))
		if m == nil {
			return Shard{}, fmt.Errorf("shard selector term %q: want shardRange(object.metadata.uid|object.metadata.namespace, '0x…', '0x…')", strings.TrimSpace(t))
		}
		if s.Field != "" && Field(m[1]) != s.Field {
			return Shard{}, fmt.Errorf("shard selector %q: all ranges must use one field", sel)
		}
		s.Field = Field(m[1])
		start, err := parseBound(m[2], false)
		if err != nil {
			return Shard{}, err
		}
		end, err := parseBound(m[3], true)
		if err != nil {
			return Shard{}, err
		}
		r := Range{Start: start, End: end}
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
