package share

import "unsafe"

// Table is a place's memory of values by the hash of their encoding. Its
// zero value is ready to use. It remembers its place's first value in a
// slot of its own, and makes slots for more at the second value it
// misses, starting with few, so that the many places that an unstructured
// object's paths make, most met once in a CRD's schema, cost little. A
// place whose values seldom repeat turns itself off after a window of
// misses, drops its slots, and tries again after a pause that doubles
// each time.
type Table struct {
	slots  []Slot // one's or made
	rate   Rate
	misses int32  // since the table last grew
	clock  uint32 // counts the slots hit and filled
	// pause counts down the visits left while the place is off; backoff
	// is how long the next pause lasts.
	pause, backoff int32
	// one is the slot of the first value, before slots are made.
	one [1]Slot
}

// Slot is a value remembered: a string, a slice (P, N, C), a map or a
// pointer (P), and the hashes and length of its encoding.
type Slot struct {
	H1, H2 uint64
	Size   int
	P      unsafe.Pointer
	N, C   int
	used   uint32 // when it was last hit or filled, in lookups
}

// ways is how many slots a value may take: tables are set-associative.
const ways = 4

// On reports whether the place shares now; a place turned off counts its
// pause down.
func (t *Table) On() bool {
	if t.pause > 0 {
		t.pause--
		return false
	}
	if t.slots == nil {
		t.one[0] = Slot{}
		t.slots = t.one[:]
	}
	return true
}

// Live reports whether the table holds slots: false once it turned itself
// off.
func (t *Table) Live() bool { return t.slots != nil }

// Paused reports whether the place waits before it tries again.
func (t *Table) Paused() bool { return t.pause > 0 }

// Size returns how many slots the table has.
func (t *Table) Size() int { return len(t.slots) }

// Find returns the slot of the set of hash h that match accepts, or nil.
func (t *Table) Find(h uint64, match func(*Slot) bool) *Slot {
	i := int(h) & (len(t.slots) - 1) &^ (ways - 1)
	for k := i; k < min(i+ways, len(t.slots)); k++ {
		if s := &t.slots[k]; s.P != nil && s.H1 == h && match(s) {
			t.clock++
			s.used = t.clock
			return s
		}
	}
	return nil
}

// Put remembers s, whose hash is s.H1, in place of an empty slot of its
// set or of the one used least recently.
func (t *Table) Put(s Slot) {
	if len(t.slots) == 1 && t.slots[0].P != nil {
		t.grow() // the first value's slot is taken: make slots
	}
	i := int(s.H1) & (len(t.slots) - 1) &^ (ways - 1)
	victim := &t.slots[i]
	for k := i; k < min(i+ways, len(t.slots)) && victim.P != nil; k++ {
		if c := &t.slots[k]; c.P == nil || c.used < victim.used {
			victim = c
		}
	}
	t.clock++
	s.used = t.clock
	*victim = s
}

// Count records a lookup. A table that missed more values than it has
// slots grows, up to its bound; at the end of a window, a place that hit
// too seldom turns itself off.
func (t *Table) Count(hit bool) {
	if !hit {
		if t.misses++; int(t.misses) > len(t.slots) && len(t.slots) < MaxSlots {
			t.grow()
			t.misses = 0
		}
	}
	if t.rate.Count(hit) {
		t.backoff = min(max(2*t.backoff, firstPause), maxPause)
		t.pause, t.slots, t.misses, t.one[0] = t.backoff, nil, 0, Slot{}
	}
}

// grow doubles the table, to MinSlots at least, keeping what it
// remembers.
func (t *Table) grow() {
	old := t.slots
	t.slots = make([]Slot, max(2*len(old), MinSlots))
	for i := range old {
		if s := old[i]; s.P != nil {
			t.Put(s)
		}
	}
}
