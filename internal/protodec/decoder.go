package protodec

import (
	"github.com/kubetyped/informers/internal/share"
)

// decoder is the state of one Decoder: its sharing (whether it shares,
// and the hasher that finds values in the places' tables).
type decoder struct {
	sh share.Sharing
}

func newDecoder(sharing bool) decoder { return decoder{sh: share.NewSharing(sharing)} }

// table returns the table of pl if the decoder shares at pl now.
func (d *decoder) table(pl *share.Place) *share.Table { return d.sh.At(pl.Table()) }

// str returns b as a string: the one pl remembers if equal, or a new one,
// which pl then remembers.
func (d *decoder) str(pl *share.Place, b []byte) string { return d.sh.StrAt(pl.Table(), nil, b) }

// strPtr returns a pointer to b as a string, shared as str shares strings.
func (d *decoder) strPtr(pl *share.Place, b []byte) *string { return d.sh.StrPtr(d.table(pl), b) }

// bytes returns a copy of b, never nil, shared as str shares strings.
func (d *decoder) bytes(pl *share.Place, b []byte) []byte { return d.sh.Bytes(d.table(pl), b) }

// numPtr returns a pointer to v, shared with the pointers to equal values
// met at pl.
func numPtr[N share.Number](d *decoder, pl *share.Place, v N, key uint64) *N {
	return share.NumPtr(d.table(pl), v, key)
}

// lookup returns the value pl remembers for encoding enc, if any, and the
// hash that remember needs; ok is false if pl does not share now.
func (d *decoder) lookup(pl *share.Place, enc []byte) (v share.Found, hit bool, h uint64, ok bool) {
	t := d.table(pl)
	if t == nil {
		return share.Found{}, false, 0, false
	}
	v, hit, h = d.sh.Lookup(t, enc)
	return v, hit, h, true
}

// remember has pl remember v, decoded from encoding enc of hash h, unless
// pl turned itself off meanwhile.
func (d *decoder) remember(pl *share.Place, enc []byte, h uint64, v share.Found) {
	d.sh.Remember(pl.Table(), enc, h, v)
}
