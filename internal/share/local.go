package share

import (
	"bytes"
	"unsafe"
)

// Local is the memory of the object being decoded: the strings and parts
// decoded so far in it, by the hashes of their bytes, so that a value met
// again at another place of the same object is shared, whether or not the
// places' tables share. Within one object, values unique to it repeat: its
// name in the names of its parts and of a release, its image tag in its
// parameters and in its status, a whole source in its spec and in each
// entry of its history. Local forgets it all when the next object begins,
// and holds nothing once the object ends.
//
// Strings are compared in full; parts by their encodings, which are
// offsets into the object's encoding, and by a kind that tells apart
// values of different types decoded from equal bytes. Its zero value is
// ready to use.
type Local struct {
	slots []localSlot
	gen   uint32 // the slots of the object being decoded have this generation
	enc   []byte // the encoding of the object being decoded, nil between objects
}

// localSlot is a value of the object being decoded: a string (P, N), or
// a part of kind kind decoded from enc[start:end].
type localSlot struct {
	gen        uint32
	start, end int32
	h          uint64
	kind       unsafe.Pointer
	v          Found
}

const (
	// localSlots is how many values of one object Local remembers; an
	// object with more forgets some, so that repeats may go unshared.
	localSlots = 256
	// maxLocalEncoding bounds the length of the encodings Local
	// remembers: offsets fit an int32.
	maxLocalEncoding = 1 << 31
)

// Begin starts the object whose encoding is enc: the values Put until
// End are decoded from enc, and Find finds none of an earlier object.
func (l *Local) Begin(enc []byte) {
	if l.slots == nil {
		l.slots = make([]localSlot, localSlots)
	}
	if l.gen++; l.gen == 0 { // wrapped around: forget every slot
		clear(l.slots)
		l.gen = 1
	}
	if len(enc) < maxLocalEncoding {
		l.enc = enc
	}
}

// End ends the object begun last, and forgets its encoding and values.
func (l *Local) End() {
	l.enc = nil
	if l.gen++; l.gen == 0 {
		clear(l.slots)
		l.gen = 1
	}
}

// For returns l if it remembers the values decoded from b now, b being
// the encoding Begin was given; else nil.
func (l *Local) For(b []byte) *Local {
	if l == nil || l.enc == nil || len(b) != len(l.enc) || unsafe.SliceData(b) != unsafe.SliceData(l.enc) {
		return nil
	}
	return l
}

// Encoding returns the encoding of the object being decoded, nil between
// objects.
func (l *Local) Encoding() []byte { return l.enc }

// find returns the slot of hash h and kind kind that match accepts.
func (l *Local) find(h uint64, kind unsafe.Pointer, match func(*localSlot) bool) *localSlot {
	i := int(h) & (localSlots - 1) &^ (ways - 1)
	for k := i; k < i+ways; k++ {
		if s := &l.slots[k]; s.gen == l.gen && s.h == h && s.kind == kind && match(s) {
			return s
		}
	}
	return nil
}

// put remembers s in a free slot of its set, or in place of the first.
func (l *Local) put(s localSlot) {
	s.gen = l.gen
	i := int(s.h) & (localSlots - 1) &^ (ways - 1)
	for k := i; k < i+ways; k++ {
		if l.slots[k].gen != l.gen {
			l.slots[k] = s
			return
		}
	}
	l.slots[i] = s
}

// Str returns the string of bytes b and hash h decoded before in the
// object, if any.
func (l *Local) Str(h uint64, b []byte) (string, bool) {
	s := l.find(h, nil, func(s *localSlot) bool { return unsafe.String((*byte)(s.v.P), s.v.N) == string(b) })
	if s == nil {
		return "", false
	}
	return unsafe.String((*byte)(s.v.P), s.v.N), true
}

// PutStr remembers s, of hash h, as decoded in the object.
func (l *Local) PutStr(h uint64, s string) {
	l.put(localSlot{h: h, v: Found{P: unsafe.Pointer(unsafe.StringData(s)), N: len(s)}})
}

// StrPtr returns the pointer to the string of bytes b and hash h that
// PutStrPtr remembered in the object, if any.
func (l *Local) StrPtr(h uint64, b []byte) (*string, bool) {
	s := l.find(h, strPtrKind, func(s *localSlot) bool { return *(*string)(s.v.P) == string(b) })
	if s == nil {
		return nil, false
	}
	return (*string)(s.v.P), true
}

// PutStrPtr remembers p, a pointer to a string of hash h, as decoded in
// the object.
func (l *Local) PutStrPtr(h uint64, p *string) {
	l.put(localSlot{h: h, kind: strPtrKind, v: Found{P: unsafe.Pointer(p)}})
}

// strPtrKind is the kind of the pointers to strings Local remembers.
var strPtrKind = unsafe.Pointer(new(byte))

// Find returns the value of kind kind decoded before in the object from
// an encoding equal to enc[start:end], enc being the object's, of hash h.
func (l *Local) Find(kind unsafe.Pointer, h uint64, start, end int) (Found, bool) {
	enc := l.enc[start:end]
	s := l.find(h, kind, func(s *localSlot) bool {
		return int(s.end-s.start) == len(enc) && bytes.Equal(l.enc[s.start:s.end], enc)
	})
	if s == nil {
		return Found{}, false
	}
	return s.v, true
}

// Put remembers v, of kind kind, decoded from enc[start:end] of hash h,
// enc being the object's.
func (l *Local) Put(kind unsafe.Pointer, h uint64, start, end int, v Found) {
	l.put(localSlot{h: h, kind: kind, start: int32(start), end: int32(end), v: v})
}
