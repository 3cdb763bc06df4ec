// Package intern makes objects share memory with equal parts of objects
// seen before: equal strings become one string, and equal slices, maps and
// pointed-to structs (a pod's labels, containers, volumes, owner
// references) become one value, as a cache of read-only objects allows.
// Objects decoded from the wire share nothing, so a cache of pods of one
// deployment holds the same labels, images and environment thousands of
// times; interned, it holds them once.
//
// The walk over an object follows a plan made once per type by reflection
// and reads memory through offsets, without reflection, except for maps of
// other types than map[string]string. Each place of the type (a field path)
// keeps its own table and statistics: a place whose values seldom repeat
// (names, UIDs, IP addresses) is left alone after a window of misses and
// its table dropped (the policy of internal/share), and every table is bounded, so values of high
// cardinality cannot grow it without limit.
package intern

import (
	"hash/maphash"
	"reflect"
	"unsafe"

	"github.com/kubetyped/informers/internal/share"
)

const (
	// maxPlaceEntries bounds the table of each place of slices, maps and
	// pointers.
	maxPlaceEntries = 4096
	// maxStrings and maxStringBytes bound the table of strings shared by
	// every place.
	maxStrings     = 1 << 16
	maxStringBytes = 8 << 20
)

// Interner interns objects of type T, a pointer to a struct. Only one
// goroutine may use it at a time. Objects given to Intern must not be
// modified afterwards: they share memory with each other.
type Interner[T any] struct {
	interner
}

// interner is what an Interner holds, whatever its T.
type interner struct {
	root     *node
	strs     map[uint64]string // by hash
	strBytes int
	seed     maphash.Seed
}

// New returns an interner for T, or nil if T is not a pointer to a struct.
func New[T any]() *Interner[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	return &Interner[T]{interner{
		root: planFor(t.Elem(), true, 0),
		strs: make(map[uint64]string),
		seed: maphash.MakeSeed(),
	}}
}

// Intern makes obj share its strings and sub-structures with the equal
// ones of objects interned before, in place. obj must not be in use by
// another goroutine.
func (in *Interner[T]) Intern(obj T) {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&obj))
	if p == nil {
		return
	}
	in.enter(in.root, p)
}

// InternLike is Intern for a new version of like, an object interned
// before (its cached version): each part of obj equal to like's takes
// like's, which is interned, at the cost of one comparison; the parts that
// changed are interned as Intern does. like is only read.
func (in *Interner[T]) InternLike(obj, like T) {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&obj))
	q := *(*unsafe.Pointer)(unsafe.Pointer(&like))
	switch {
	case p == nil || p == q:
	case q == nil:
		in.enter(in.root, p)
	default:
		in.enterLike(in.root, p, q)
	}
}

// place is the sharing state of one place of a type.
type place struct {
	rate  share.Rate
	off   bool                      // too few hits: left alone
	table map[uint64]unsafe.Pointer // hash → a cell holding the value
}

func newPlace() *place { return &place{} }

// count records a lookup and turns the place off if it hits too seldom,
// by the policy of internal/share.
func (pl *place) count(hit bool) {
	if pl.rate.Count(hit) {
		pl.off, pl.table = true, nil
	}
}

// enter interns the value of node n at p. It works top-down: a slice, map
// or pointer equal to one remembered is replaced whole, and only one that
// is not is entered.
func (in *interner) enter(n *node, p unsafe.Pointer) {
	switch n.kind {
	case str:
		s := (*string)(p)
		if len(*s) > 0 && !n.hot.off {
			*s = in.str(n.hot, *s)
		}
	case strct:
		for _, f := range n.fields {
			if f.n.kind != opaque {
				in.enter(f.n, unsafe.Add(p, f.off))
			}
		}
	case array:
		for i := range n.len {
			in.enter(n.elem, unsafe.Add(p, uintptr(i)*n.elem.size))
		}
	case slice:
		s := (*sliceHeader)(p)
		if s.len == 0 {
			return
		}
		h, hit := in.share(n, p)
		if hit {
			return
		}
		if n.elem.kind != opaque {
			for i := range s.len {
				in.enter(n.elem, unsafe.Add(s.data, uintptr(i)*n.elem.size))
			}
		}
		in.remember(n, p, h)
	case pointer:
		ptr := *(*unsafe.Pointer)(p)
		if ptr == nil {
			return
		}
		h, hit := in.share(n, p)
		if hit {
			return
		}
		in.enter(n.elem, ptr)
		in.remember(n, p, h)
	case mapping:
		if *(*unsafe.Pointer)(p) == nil {
			return
		}
		h, hit := in.share(n, p)
		if hit {
			return
		}
		n.ops.enter(in, n, p)
		in.remember(n, p, h)
	}
}

// enterLike interns the value of node n at p, taking the equal parts of
// the value at q, interned before.
func (in *interner) enterLike(n *node, p, q unsafe.Pointer) {
	switch n.kind {
	case str:
		if *(*string)(p) == *(*string)(q) {
			*(*string)(p) = *(*string)(q)
		} else {
			in.enter(n, p)
		}
	case strct:
		for _, f := range n.fields {
			if f.n.kind != opaque {
				in.enterLike(f.n, unsafe.Add(p, f.off), unsafe.Add(q, f.off))
			}
		}
	case array:
		for i := range n.len {
			off := uintptr(i) * n.elem.size
			in.enterLike(n.elem, unsafe.Add(p, off), unsafe.Add(q, off))
		}
	case slice:
		x, y := (*sliceHeader)(p), (*sliceHeader)(q)
		switch {
		case equal(n, p, q):
			*x = *y
		case x.len == y.len && n.elem.kind != opaque:
			// One element changed, typically (a condition, a status):
			// the others are taken from q.
			for i := range x.len {
				off := uintptr(i) * n.elem.size
				in.enterLike(n.elem, unsafe.Add(x.data, off), unsafe.Add(y.data, off))
			}
		default:
			in.enter(n, p)
		}
	case pointer:
		x, y := *(*unsafe.Pointer)(p), *(*unsafe.Pointer)(q)
		switch {
		case x == nil:
		case y == nil:
			in.enter(n, p)
		case equal(n.elem, x, y):
			*(*unsafe.Pointer)(p) = y
		default:
			in.enterLike(n.elem, x, y)
		}
	case mapping:
		if equal(n, p, q) {
			*(*unsafe.Pointer)(p) = *(*unsafe.Pointer)(q)
		} else {
			in.enter(n, p)
		}
	}
}

// str returns the interned string equal to s, interning s if there is
// room.
func (in *interner) str(pl *place, s string) string {
	h := maphash.String(in.seed, s)
	c, ok := in.strs[h]
	hit := ok && c == s
	pl.count(hit)
	if hit {
		return c
	}
	if !ok && len(in.strs) < maxStrings && in.strBytes+len(s) <= maxStringBytes {
		in.strs[h] = s
		in.strBytes += len(s)
	}
	return s
}

// share replaces the slice, map or pointer at p with an equal one its
// place remembers, and reports whether it did, with the value's hash.
func (in *interner) share(n *node, p unsafe.Pointer) (h uint64, hit bool) {
	pl := n.hot
	if pl.off {
		return 0, false
	}
	h = hashValue(n, p, in.seed)
	cell, ok := pl.table[h]
	hit = ok && equal(n, p, cell)
	pl.count(hit)
	if hit {
		if n.kind == slice {
			*(*sliceHeader)(p) = *(*sliceHeader)(cell)
		} else {
			*(*unsafe.Pointer)(p) = *(*unsafe.Pointer)(cell)
		}
	}
	return h, hit
}

// remember adds the value at p, of hash sum, to its place's table, if the
// place still interns and has room.
func (in *interner) remember(n *node, p unsafe.Pointer, sum uint64) {
	pl := n.hot
	if pl.off || len(pl.table) >= maxPlaceEntries {
		return
	}
	if pl.table == nil {
		pl.table = make(map[uint64]unsafe.Pointer)
	}
	if _, taken := pl.table[sum]; taken {
		return // another value of the same hash
	}
	var cell unsafe.Pointer
	if n.kind == slice {
		c := new(sliceHeader)
		*c = *(*sliceHeader)(p)
		cell = unsafe.Pointer(c)
	} else {
		c := new(unsafe.Pointer)
		*c = *(*unsafe.Pointer)(p)
		cell = unsafe.Pointer(c)
	}
	pl.table[sum] = cell
}
