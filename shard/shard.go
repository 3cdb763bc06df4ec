// Package shard describes shards of a resource's objects as the API server
// selects them (KEP-5866): ranges of the 64-bit FNV-1a hash of each
// object's UID or namespace, the shard selectors that carry them, and what
// a sharded informer reports of its shard.
//
// A replica that knows its index and the number of replicas takes its
// shard with Of and passes it as informers.Options.Shard; package
// membership assigns ranges to replicas as they come and go.
package shard

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Field is the field whose hash places an object in a shard, spelled as
// the server's shard selectors spell it.
type Field string

// The fields the API server shards by.
const (
	// ByUID spreads objects evenly; an object never changes shard.
	ByUID Field = "object.metadata.uid"
	// ByNamespace keeps each namespace's objects in one shard.
	ByNamespace Field = "object.metadata.namespace"
)

// Shard selects the objects whose field hashes, with 64-bit FNV-1a, into
// one of its ranges: what the API server's shard selectors select. A
// Shard with no ranges selects nothing.
type Shard struct {
	// Field is the field hashed; "" means ByUID.
	Field Field
	// Ranges are the hash ranges of the shard, in any order; they may
	// overlap.
	Ranges []Range
}

// Of returns shard i of n equal shards by field: the shard with range
// Split(n)[i]. It has no ranges unless 0 <= i < n.
func Of(field Field, i, n int) Shard {
	if i < 0 || i >= n {
		return Shard{Field: field}
	}
	return Shard{Field: field, Ranges: Split(n)[i : i+1]}
}

// Hash returns the 64-bit FNV-1a hash of obj's field, over the field's
// bytes, as the API server computes it.
func Hash(field Field, obj metav1.Object) uint64 {
	var v string
	switch field {
	case ByNamespace:
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
func (s Shard) Contains(obj metav1.Object) bool { return s.containsHash(Hash(s.Field, obj)) }

func (s Shard) containsHash(h uint64) bool {
	for _, r := range s.Ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// Canonical returns s with its field spelled out and its ranges sorted,
// overlapping or adjacent ones merged: two shards that select the same
// objects have equal canonical forms. It does not modify s.
func (s Shard) Canonical() Shard {
	out := Shard{Field: cmp.Or(s.Field, ByUID)}
	rs := slices.Clone(s.Ranges)
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.Start, b.Start) })
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

// Validate reports an error if the field is not one the server shards by
// or a range is empty.
func (s Shard) Validate() error {
	switch s.Field {
	case "", ByUID, ByNamespace:
	default:
		return fmt.Errorf("shard field %q: the server shards by %s or %s", s.Field, ByUID, ByNamespace)
	}
	for _, r := range s.Ranges {
		if r.End != 0 && r.End <= r.Start {
			return fmt.Errorf("shard range %s is empty", r)
		}
	}
	return nil
}
