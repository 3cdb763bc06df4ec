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

const (
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
	tab    share.Table
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
