package protodec

import (
	"reflect"
	"unsafe"

	"github.com/kubetyped/informers/internal/share"
)

// Clear zeroes the fields to skip (Options.Skip) of the object at p,
// decoded by other means than dec, so that it reads as dec leaves the
// objects it decodes. It writes only fields that are not zero, so that it
// never writes to the parts a Decoder shares, which it left zero.
func (dec *Decoder) Clear(p unsafe.Pointer) {
	dec.mu.Lock()
	defer dec.mu.Unlock()
	if dec.root != nil {
		clearPlace(dec.plan, dec.root, p)
	}
}

// clearPlace zeroes the fields to skip below place pl, of message m, in
// the object at p.
func clearPlace(m *message, pl *share.Place, p unsafe.Pointer) {
	for num, f := range m.fields {
		child := pl.Child(num, len(m.fields), false)
		if f == nil || child == nil {
			continue
		}
		fp := unsafe.Add(p, f.off)
		if child.Skip {
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
				clearPlace(f.msg, child.Elem(false), unsafe.Add(h.data, uintptr(i)*f.elem.Size()))
			}
		}
	}
}
