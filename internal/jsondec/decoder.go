package jsondec

import "github.com/kubetyped/informers/internal/share"

// decoder is the state of one Decoder: whether it shares, and the hasher
// that finds values in the places' tables.
type decoder struct {
	share bool
	hs    share.Hasher
}

func newDecoder(sharing bool) decoder {
	return decoder{share: sharing, hs: share.NewHasher()}
}

// table returns the table of pl if the decoder shares at pl now.
func (d *decoder) table(pl *place) *share.Table {
	if !d.share || pl == nil || !pl.tab.On() {
		return nil
	}
	return &pl.tab
}

// str returns b as a string: the one pl remembers if equal, or a new one,
// which pl then remembers.
func (d *decoder) str(pl *place, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return d.hs.Str(d.table(pl), b)
}
