package jsondec

import "github.com/kubetyped/informers/internal/share"

// A place is a field path of the decoded type, such as
// spec.template.metadata.labels: where the decoder remembers the values
// it decoded, to share them with the next equal encoding met at the same
// place, by the policy and in the bounded tables of internal/share.
// Places also mark the fields never decoded (Options.Skip).
type place struct {
	fields []*place          // structs: the places of their fields, by index
	elem   *place            // slices, pointers: their elements'; maps: their values'
	key    *place            // maps and objects: their keys'
	keyed  map[string]*place // maps and objects: their values', by key
	whole  *place            // interface{} values: their objects and arrays, shared whole
	skip   bool              // the field is never decoded
	// skipBelow marks the places on the paths to fields never decoded:
	// their values differ from the values of their types elsewhere.
	skipBelow bool
	depth     int
	tab       share.Table
}

// table returns the table of pl, nil if pl is nil.
func (pl *place) table() *share.Table {
	if pl == nil {
		return nil
	}
	return &pl.tab
}

// child returns the place of field i of struct place pl, of n fields,
// making it if the decoder shares; nil if there is none.
func (pl *place) child(i, n int, sharing bool) *place {
	if pl == nil {
		return nil
	}
	if i < len(pl.fields) {
		if c := pl.fields[i]; c != nil {
			return c
		}
	}
	if !sharing || pl.depth >= share.MaxDepth {
		return nil
	}
	if pl.fields == nil {
		pl.fields = make([]*place, n)
	}
	c := &place{depth: pl.depth + 1}
	pl.fields[i] = c
	return c
}

// elemPlace returns the place of the elements (or map values) of pl.
func (pl *place) elemPlace(sharing bool) *place {
	if pl == nil {
		return nil
	}
	if pl.elem == nil && sharing && pl.depth < share.MaxDepth {
		pl.elem = &place{depth: pl.depth + 1}
	}
	return pl.elem
}

// keyPlace returns the place of the keys of map place pl.
func (pl *place) keyPlace(sharing bool) *place {
	if pl == nil {
		return nil
	}
	if pl.key == nil && sharing && pl.depth < share.MaxDepth {
		pl.key = &place{depth: pl.depth + 1}
	}
	return pl.key
}

// valuePlace returns the place of the values of key k in map place pl,
// each key's own (share.KeyedPlace) while there are not too many.
func (pl *place) valuePlace(k string, sharing bool) *place {
	if pl != nil && sharing && pl.depth < share.MaxDepth {
		if c := share.KeyedPlace(&pl.keyed, k, func() *place { return &place{depth: pl.depth + 1} }); c != nil {
			return c
		}
	}
	return pl.elemPlace(sharing)
}
