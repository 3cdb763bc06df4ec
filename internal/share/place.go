package share

import "iter"

// A Place is a field path of a decoded type, such as
// spec.containers[].image: where a decoder remembers the values it
// decoded, to share them with the next equal encoding met at the same
// place. Each place judges on its own whether it is worth it, by the
// policy and in the bounded Table of this package. Places also mark the
// fields a decoder never decodes (decopt.Options.Skip).
//
// The protobuf and the JSON decoder grow their trees of places alike,
// from a zero root, as they meet the fields of their objects; only their
// plans, which say what the fields of a place are, differ. A nil *Place is
// no place: its methods return nil. A Place is not safe for concurrent
// use: its decoder serializes its users.
type Place struct {
	fields []*Place          // structs and messages: the places of their fields, by index
	elem   *Place            // slices, pointers: their elements'; maps: their values'
	key    *Place            // maps and objects: their keys'
	keyed  map[string]*Place // maps and objects: their values', by key
	whole  *Place            // interface{} values: their objects and arrays, shared whole
	// Skip says the field is never decoded.
	Skip bool
	// SkipBelow marks the places on the paths to fields never decoded:
	// their values differ from the values of their types elsewhere.
	SkipBelow bool
	depth     int
	tab       Table
}

// Table returns the table of pl, nil if pl is nil.
func (pl *Place) Table() *Table {
	if pl == nil {
		return nil
	}
	return &pl.tab
}

// Child returns the place of field i of pl, a struct or message of n
// fields (i < n: a plan's index, or a protobuf field's number), making it
// if sharing, down to MaxDepth; nil if there is none.
func (pl *Place) Child(i, n int, sharing bool) *Place {
	if pl == nil {
		return nil
	}
	if i < len(pl.fields) {
		if c := pl.fields[i]; c != nil {
			return c
		}
	}
	if !sharing || pl.depth >= MaxDepth || i >= n {
		return nil
	}
	if len(pl.fields) < n {
		pl.fields = append(pl.fields, make([]*Place, n-len(pl.fields))...)
	}
	c := &Place{depth: pl.depth + 1}
	pl.fields[i] = c
	return c
}

// Elem returns the place of the elements (or map values, or the value a
// pointer holds) of pl, making it if sharing, down to MaxDepth.
func (pl *Place) Elem(sharing bool) *Place {
	if pl == nil {
		return nil
	}
	return pl.below(&pl.elem, sharing, 1)
}

// Key returns the place of the keys of map place pl, making it if
// sharing, down to MaxDepth.
func (pl *Place) Key(sharing bool) *Place {
	if pl == nil {
		return nil
	}
	return pl.below(&pl.key, sharing, 1)
}

// Whole returns the place where the objects and arrays held in the
// interface{} values of pl are shared whole, at pl's depth, making it if
// sharing, down to MaxDepth.
func (pl *Place) Whole(sharing bool) *Place {
	if pl == nil {
		return nil
	}
	return pl.below(&pl.whole, sharing, 0)
}

// below returns *c, one of the places of pl (not nil), made at depth
// pl.depth+deeper if sharing and pl is not too deep.
func (pl *Place) below(c **Place, sharing bool, deeper int) *Place {
	if *c == nil && sharing && pl.depth < MaxDepth {
		*c = &Place{depth: pl.depth + deeper}
	}
	return *c
}

// Value returns the place of the values of key k in map place pl, each
// key's own (KeyedPlace) while there are not too many, else the place of
// all the map's values (Elem).
func (pl *Place) Value(k string, sharing bool) *Place {
	if pl != nil && sharing && pl.depth < MaxDepth {
		if c := KeyedPlace(&pl.keyed, k, func() *Place { return &Place{depth: pl.depth + 1} }); c != nil {
			return c
		}
	}
	return pl.Elem(sharing)
}

// All returns pl and every place below it, pl first.
func (pl *Place) All() iter.Seq[*Place] {
	return func(yield func(*Place) bool) { pl.walk(yield) }
}

// walk calls yield with pl and the places below it until yield returns
// false, and reports whether it never did.
func (pl *Place) walk(yield func(*Place) bool) bool {
	if pl == nil {
		return true
	}
	if !yield(pl) {
		return false
	}
	for _, c := range pl.fields {
		if !c.walk(yield) {
			return false
		}
	}
	for _, c := range pl.keyed {
		if !c.walk(yield) {
			return false
		}
	}
	return pl.elem.walk(yield) && pl.key.walk(yield) && pl.whole.walk(yield)
}
