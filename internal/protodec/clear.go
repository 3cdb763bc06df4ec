package protodec

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"
)

// Clearer zeroes the fields to skip in objects decoded by other means
// than a Decoder, so that they read as a Decoder leaves them.
type Clearer struct {
	plan *message
	root *place
}

// NewClearer returns a Clearer of the fields that paths name (see
// Options.Skip) in objects of type t, a pointer to a generated API
// struct.
func NewClearer(t reflect.Type, paths []string) (*Clearer, error) {
	if !Supports(t) {
		return nil, fmt.Errorf("protodec: %v is not a built-in API type: its fields cannot be skipped", t)
	}
	c := &Clearer{plan: planFor(t.Elem()), root: &place{}}
	var errs []error
	for _, path := range paths {
		if err := markSkipped(c.plan, c.root, path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fields to skip of %v: %w", t, err)
	}
	return c, nil
}

// Clear zeroes the fields to skip of the object at p. It writes only
// fields that are not zero, so that it never writes to the parts a
// Decoder shares, which it left zero.
func (c *Clearer) Clear(p unsafe.Pointer) {
	clearPlace(c.plan, c.root, p)
}

func clearPlace(m *message, pl *place, p unsafe.Pointer) {
	for num, child := range pl.fields {
		if child == nil {
			continue
		}
		f := m.fields[num]
		fp := unsafe.Add(p, f.off)
		if child.skip {
			if v := reflect.NewAt(f.typ, fp).Elem(); !v.IsZero() {
				v.SetZero()
			}
			continue
		}
		switch f.kind {
		case kMessage:
			clearPlace(f.msg, child, fp)
		case kMessagePtr:
			if ptr := *(*unsafe.Pointer)(fp); ptr != nil {
				clearPlace(f.msg, child, ptr)
			}
		case kRepMessage:
			h := (*sliceHeader)(fp)
			for i := range h.len {
				clearPlace(f.msg, child.elem, unsafe.Add(h.data, uintptr(i)*f.elem.Size()))
			}
		}
	}
}
