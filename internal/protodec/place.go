package protodec

import (
	"github.com/kubetyped/informers/internal/share"
)

// A place is a field path of the decoded type, such as
// spec.containers[].image: where the decoder remembers the values it
// decoded, to share them with the next equal encoding met at the same
// place. Each place judges on its own whether it is worth it, by the
// policy and in the bounded tables of internal/share.
//
// Places also mark the fields never decoded (Options.Skip).
type place struct {
	fields []*place          // messages: the places of their fields, by number
	elem   *place            // slices: their elements'; maps: their values'
	key    *place            // maps: their keys'
	keyed  map[string]*place // maps of strings: their values', by key
	skip   bool              // the field is never decoded
	depth  int
	tab    share.Table
}

// table returns the table of pl, nil if pl is nil.
func (pl *place) table() *share.Table {
	if pl == nil {
		return nil
	}
	return &pl.tab
}

// child returns the place of field num of message place pl, making it if
// the decoder shares; nil if there is none.
func (pl *place) child(num int32, sharing bool) *place {
	if int(num) < len(pl.fields) {
		if c := pl.fields[num]; c != nil {
			return c
		}
	}
	if !sharing || pl.depth >= share.MaxDepth {
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
func (pl *place) elemPlace(sharing bool) *place {
	if pl.elem == nil && sharing {
		pl.elem = &place{depth: pl.depth + 1}
	}
	return pl.elem
}

// keyPlace returns the place of the keys of map place pl.
func (pl *place) keyPlace(sharing bool) *place {
	if pl.key == nil && sharing {
		pl.key = &place{depth: pl.depth + 1}
	}
	return pl.key
}

// valuePlace returns the place of the values of key k in map place pl,
// each key's own (share.KeyedPlace) while there are not too many.
func (pl *place) valuePlace(k string, sharing bool) *place {
	if !sharing {
		return pl.elem
	}
	if c := share.KeyedPlace(&pl.keyed, k, func() *place { return &place{depth: pl.depth + 1} }); c != nil {
		return c
	}
	return pl.elemPlace(sharing)
}
