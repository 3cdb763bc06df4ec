package jsondec

import (
	"unsafe"

	"github.com/kubetyped/informers/internal/share"
)

// decoder is the state of one Decoder: its sharing (whether it shares,
// and the hasher that finds values in the places' tables), and the memory
// of the object being decoded, which shares the values that repeat within
// it.
type decoder struct {
	sh  share.Sharing
	loc share.Local
	// temporary counts the values being decoded into a temporary that
	// is copied, then reused: the object's memory must not point into
	// them.
	temporary int
	// interiors counts the pointers into the object's own values handed
	// out: a part holding one is remembered for this object only.
	interiors int
}

func newDecoder(sharing bool) decoder { return decoder{sh: share.NewSharing(sharing)} }

// table returns the table of pl if the decoder shares at pl now.
func (d *decoder) table(pl *share.Place) *share.Table { return d.sh.At(pl.Table()) }

// str returns b as a string: the one pl, or else the object being
// decoded, remembers if equal, or a new one, which they then remember.
func (d *decoder) str(pl *share.Place, b []byte) string { return d.sh.StrAt(pl.Table(), &d.loc, b) }

// begin starts decoding an object encoded in b, if the decoder shares:
// the values that repeat within it are shared until end.
func (d *decoder) begin(b []byte) {
	if d.sh.On() {
		d.loc.Begin(b)
	}
}

// end ends the object begun last.
func (d *decoder) end() {
	if d.sh.On() {
		d.loc.End()
	}
}

// localStrings returns the memory of the object being decoded for
// strings, which it compares in full; nil between objects.
func (d *decoder) localStrings() *share.Local {
	if d.loc.Encoding() == nil {
		return nil
	}
	return &d.loc
}

// local returns the memory of the object being decoded for parts
// decoded from b, which must be the object's encoding; else nil.
func (d *decoder) local(b []byte) *share.Local { return d.loc.For(b) }

// memo is where a part decoded from b[i:end] is looked up and remembered:
// the table of its place and the memory of the object, by its kind.
type memo struct {
	t         *share.Table
	loc       *share.Local
	kind      unsafe.Pointer
	h         uint64
	b         []byte
	i, end    int
	interiors int // the decoder's when the part began
}

// lookup looks for the part of kind kind encoded at b[i:end] in the
// table of pl and in the object's memory; ok is false where nothing is
// shared, and m remembers the part once decoded.
func (d *decoder) lookup(pl *share.Place, kind unsafe.Pointer, b []byte, i, end int) (v share.Found, hit bool, m memo, ok bool) {
	t, loc := d.table(pl), d.local(b)
	if t == nil && loc == nil {
		return v, false, m, false
	}
	m = memo{t: t, loc: loc, kind: kind, b: b, i: i, end: end, interiors: d.interiors}
	enc := b[i:end]
	if t != nil {
		if v, hit, m.h = d.sh.Lookup(t, enc); hit {
			return v, true, m, true
		}
	} else {
		m.h = d.sh.Hash(enc)
	}
	if loc != nil {
		if v, hit = loc.Find(kind, m.h, i, end); hit {
			if v.Interior {
				d.interiors++
			} else if t != nil {
				d.sh.Remember(t, enc, m.h, v)
			}
			return v, true, m, true
		}
	}
	return v, false, m, true
}

// remember has the table and the object's memory of m remember v; the
// table only if v holds no pointer into the object's own values, which
// would keep the whole object alive for others.
func (d *decoder) remember(m memo, v share.Found) {
	if m.t != nil && d.interiors == m.interiors {
		d.sh.Remember(m.t, m.b[m.i:m.end], m.h, v)
	}
	if m.loc != nil {
		m.loc.Put(m.kind, m.h, m.i, m.end, v)
	}
}

// kindOf returns the kind by which the object's memory knows the parts
// of plan n decoded at pl: the plan, but for a place with fields skipped
// below it, whose parts differ from the same plan's elsewhere.
func kindOf(n *node, pl *share.Place) unsafe.Pointer {
	if pl != nil && pl.SkipBelow {
		return unsafe.Pointer(pl)
	}
	return unsafe.Pointer(n)
}
