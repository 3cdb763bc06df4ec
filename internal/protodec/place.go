package protodec

import (
	"unsafe"
)

// A place is a field path of the decoded type, such as
// spec.containers[].image: where the decoder remembers the values it
// decoded, to share them with the next equal encoding met at the same
// place. Each place judges on its own whether it is worth it: one whose
// values seldom repeat (names, UIDs, addresses) turns itself off after a
// window of misses, drops its table, and tries again after a pause that
// doubles each time. Tables are bounded, direct-mapped two ways, so that
// values of high cardinality replace each other instead of growing them.
//
// Places also mark the fields never decoded (Options.Skip).

const (
	// window is how many lookups a place makes between two checks of its
	// hit rate.
	window = 1024
	// minHits is the fewest hits per window a place needs to go on:
	// one in sixteen.
	minHits = window / 16
	// minSlots and maxSlots bound a table; it starts small and doubles
	// while the values it misses outnumber its slots.
	minSlots = 64
	maxSlots = 4096
	// firstPause and maxPause bound how many visits a place that turned
	// itself off waits before it tries again.
	firstPause = 16 * window
	maxPause   = 1 << 22
	// maxDepth bounds how deep places follow the fields of an object:
	// deeper fields are decoded without sharing.
	maxDepth = 24
	// maxKeyed bounds how many keys of a map of strings have a place of
	// their own for their values; the values of other keys share one.
	maxKeyed = 256
)

// place is one field path and its sharing state.
type place struct {
	fields []*place          // messages: the places of their fields, by number
	elem   *place            // slices: their elements'; maps: their values'
	key    *place            // maps: their keys'
	keyed  map[string]*place // maps of strings: their values', by key
	skip   bool              // the field is never decoded
	depth  int
	tab    table
}

// child returns the place of field num of message place pl, making it if
// the decoder shares; nil if there is none.
func (pl *place) child(num int32, share bool) *place {
	if int(num) < len(pl.fields) {
		if c := pl.fields[num]; c != nil {
			return c
		}
	}
	if !share || pl.depth >= maxDepth {
		return nil
	}
	if int(num) >= len(pl.fields) {
		if num > maxFieldNumber {
			return nil
		}
		pl.fields = append(pl.fields, make([]*place, int(num)+1-len(pl.fields))...)
	}
	c := &place{depth: pl.depth + 1}
	pl.fields[num] = c
	return c
}

// elemPlace returns the place of the elements (or map values) of pl.
func (pl *place) elemPlace(share bool) *place {
	if pl.elem == nil && share {
		pl.elem = &place{depth: pl.depth + 1}
	}
	return pl.elem
}

// keyPlace returns the place of the keys of map place pl.
func (pl *place) keyPlace(share bool) *place {
	if pl.key == nil && share {
		pl.key = &place{depth: pl.depth + 1}
	}
	return pl.key
}

// valuePlace returns the place of the values of key k in map place pl:
// the values of one label or annotation tend to repeat or not together
// (a deployment's name, a pod's name), so each key is judged apart.
func (pl *place) valuePlace(k string, share bool) *place {
	if !share {
		return pl.elem
	}
	if c, ok := pl.keyed[k]; ok {
		return c
	}
	if len(pl.keyed) >= maxKeyed {
		return pl.elemPlace(share)
	}
	if pl.keyed == nil {
		pl.keyed = make(map[string]*place)
	}
	c := &place{depth: pl.depth + 1}
	pl.keyed[k] = c
	return c
}

// table is a place's memory of values by the hash of their encoding.
type table struct {
	slots  []slot
	tries  int32
	hits   int32
	misses int32  // since the table last grew
	clock  uint32 // counts the slots hit and filled
	// pause counts down the visits left while the place is off; backoff
	// is how long the next pause lasts.
	pause, backoff int32
}

// slot is a value remembered: a string, a slice (p, n, c), a map or a
// pointer (p), and the hashes and length of its encoding.
type slot struct {
	h1, h2 uint64
	size   int
	p      unsafe.Pointer
	n, c   int
	used   uint32 // when it was last hit or filled, in lookups
}

// ways is how many slots a value may take: tables are set-associative.
const ways = 4

// on reports whether the place shares now; a place turned off counts its
// pause down.
func (t *table) on() bool {
	if t.pause > 0 {
		t.pause--
		return false
	}
	if t.slots == nil {
		t.slots = make([]slot, minSlots)
	}
	return true
}

// find returns the slot of the set of hash h that match accepts, or nil.
func (t *table) find(h uint64, match func(*slot) bool) *slot {
	i := int(h) & (len(t.slots) - 1) &^ (ways - 1)
	for k := i; k < i+ways; k++ {
		if s := &t.slots[k]; s.p != nil && s.h1 == h && match(s) {
			t.clock++
			s.used = t.clock
			return s
		}
	}
	return nil
}

// put remembers s, whose hash is s.h1, in place of an empty slot of its
// set or of the one used least recently.
func (t *table) put(s slot) {
	i := int(s.h1) & (len(t.slots) - 1) &^ (ways - 1)
	victim := &t.slots[i]
	for k := i; k < i+ways && victim.p != nil; k++ {
		if c := &t.slots[k]; c.p == nil || c.used < victim.used {
			victim = c
		}
	}
	t.clock++
	s.used = t.clock
	*victim = s
}

// count records a lookup. A table that missed more values than it has
// slots grows, up to its bound; at the end of a window, a place that hit
// too seldom turns itself off.
func (t *table) count(hit bool) {
	t.tries++
	if hit {
		t.hits++
	} else if t.misses++; int(t.misses) > len(t.slots) && len(t.slots) < maxSlots {
		t.grow()
		t.misses = 0
	}
	if t.tries < window {
		return
	}
	if t.hits < minHits {
		t.backoff = min(max(2*t.backoff, firstPause), maxPause)
		t.pause, t.slots, t.misses = t.backoff, nil, 0
	}
	t.tries, t.hits = 0, 0
}

// grow doubles the table, keeping what it remembers.
func (t *table) grow() {
	old := t.slots
	t.slots = make([]slot, 2*len(old))
	for i := range old {
		if s := old[i]; s.p != nil {
			t.put(s)
		}
	}
}
