package share

const (
	// Window is how many lookups a place makes between two checks of its
	// hit rate.
	Window = 1024
	// MinHits is the fewest hits per window a place needs to go on:
	// one in sixteen.
	MinHits = Window / 16
	// MinSlots and MaxSlots bound a table's slots, made once its first
	// value's slot is taken; they double while the values it misses
	// outnumber them.
	MinSlots = 8
	MaxSlots = 4096
	// firstPause and maxPause bound how many visits a place that turned
	// itself off waits before it tries again.
	firstPause = 16 * Window
	maxPause   = 1 << 22
)

// Rate counts the lookups of a place and their hits, window by window.
type Rate struct {
	tries, hits int32
}

// Count records a lookup, and reports at the end of a window in which
// the place hit fewer than MinHits times that it should turn itself off.
func (r *Rate) Count(hit bool) (poor bool) {
	r.tries++
	if hit {
		r.hits++
	}
	if r.tries < Window {
		return false
	}
	poor = r.hits < MinHits
	r.tries, r.hits = 0, 0
	return poor
}

const (
	// MaxDepth bounds how deep a decoder's places follow the fields of an
	// object: deeper fields are decoded without sharing.
	MaxDepth = 24
	// MaxKeyed bounds how many keys of a map have a place of their own
	// for their values (KeyedPlace); the values of other keys share one.
	MaxKeyed = 256
)

// KeyedPlace returns the place of the values of key k among keyed, the
// places of a map's values by key: the values of one label or annotation
// tend to repeat or not together (a deployment's name, a pod's name), so
// each key is judged apart. It makes the place with newPlace, up to
// MaxKeyed keys; past them it returns nil, and the values of the other
// keys share the place of the map's values.
func KeyedPlace[P any](keyed *map[string]*P, k string, newPlace func() *P) *P {
	if p, ok := (*keyed)[k]; ok {
		return p
	}
	if len(*keyed) >= MaxKeyed {
		return nil
	}
	if *keyed == nil {
		*keyed = make(map[string]*P)
	}
	p := newPlace()
	(*keyed)[k] = p
	return p
}
