package intern

import (
	"hash/maphash"
	"maps"
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubetyped/informers/internal/share"
)

// mapOps hashes, compares and interns the maps of one type.
type mapOps struct {
	// hash returns the hash of the map's content, in an order that does
	// not depend on the map's: a sum over its entries.
	hash func(n *node, p unsafe.Pointer, seed maphash.Seed) uint64
	// equal reports whether two maps hold equal entries.
	equal func(n *node, a, b unsafe.Pointer) bool
	// enter interns the map's keys and values. A key cannot be changed
	// in place: a map that may be shared (its place is on) is replaced
	// with a copy whose keys are interned; another keeps its keys, and
	// only its values are interned, in place, which allocates nothing.
	enter func(in *interner, n *node, p unsafe.Pointer)
}

// typedMaps are the map types that the API's objects use most, walked
// without reflection; other maps go through reflectMapOps.
var typedMaps = map[reflect.Type]mapOps{
	reflect.TypeFor[map[string]string]():   stringMapOps,
	reflect.TypeFor[corev1.ResourceList](): typedMapOps[corev1.ResourceName, resource.Quantity](),
	reflect.TypeFor[map[string][]byte]():   typedMapOps[string, []byte](),
}

// opsFor returns the operations on maps of type t.
func opsFor(t reflect.Type) mapOps {
	if ops, ok := typedMaps[t]; ok {
		return ops
	}
	return reflectMapOps
}

// stringMapOps are the operations on map[string]string: labels,
// annotations, selectors, a config map's data. The values of each key
// have a place of their own (see node.valuePlace).
var stringMapOps = mapOps{
	hash: func(_ *node, p unsafe.Pointer, seed maphash.Seed) uint64 {
		m := *(*map[string]string)(p)
		var sum uint64
		for k, v := range m {
			sum += mix(maphash.String(seed, k), maphash.String(seed, v))
		}
		return mix(uint64(len(m)), sum)
	},
	equal: func(_ *node, a, b unsafe.Pointer) bool {
		return maps.Equal(*(*map[string]string)(a), *(*map[string]string)(b))
	},
	enter: func(in *interner, n *node, p unsafe.Pointer) {
		m := *(*map[string]string)(p)
		if n.hot.off {
			for k, v := range m {
				if pl := n.valuePlace(k); !pl.off {
					m[k] = in.str(pl, v)
				}
			}
			return
		}
		c := make(map[string]string, len(m))
		for k, v := range m {
			if !n.key.hot.off {
				k = in.str(n.key.hot, k)
			}
			if pl := n.valuePlace(k); !pl.off {
				v = in.str(pl, v)
			}
			c[k] = v
		}
		*(*map[string]string)(p) = c
	},
}

// typedMapOps returns the operations on map[K]V.
func typedMapOps[K comparable, V any]() mapOps {
	return mapOps{
		hash: func(n *node, p unsafe.Pointer, seed maphash.Seed) uint64 {
			m := *(*map[K]V)(p)
			var sum uint64
			for k, v := range m {
				sum += mix(hashValue(n.key, unsafe.Pointer(&k), seed), hashValue(n.elem, unsafe.Pointer(&v), seed))
			}
			return mix(uint64(len(m)), sum)
		},
		equal: func(n *node, a, b unsafe.Pointer) bool {
			x, y := *(*map[K]V)(a), *(*map[K]V)(b)
			if len(x) != len(y) {
				return false
			}
			for k, v := range x {
				w, ok := y[k]
				if !ok || !equal(n.elem, unsafe.Pointer(&v), unsafe.Pointer(&w)) {
					return false
				}
			}
			return true
		},
		enter: func(in *interner, n *node, p unsafe.Pointer) {
			m := *(*map[K]V)(p)
			if n.hot.off {
				for k, v := range m {
					in.enter(n.elem, unsafe.Pointer(&v))
					m[k] = v
				}
				return
			}
			c := make(map[K]V, len(m))
			for k, v := range m {
				in.enter(n.key, unsafe.Pointer(&k))
				in.enter(n.elem, unsafe.Pointer(&v))
				c[k] = v
			}
			*(*map[K]V)(p) = c
		},
	}
}

// reflectMapOps are the operations on maps of any other type.
var reflectMapOps = mapOps{
	hash: func(n *node, p unsafe.Pointer, seed maphash.Seed) uint64 {
		m := reflect.NewAt(n.typ, p).Elem()
		k := reflect.New(n.typ.Key()).Elem()
		v := reflect.New(n.typ.Elem()).Elem()
		var sum uint64
		for it := m.MapRange(); it.Next(); {
			k.SetIterKey(it)
			v.SetIterValue(it)
			sum += mix(hashValue(n.key, k.Addr().UnsafePointer(), seed), hashValue(n.elem, v.Addr().UnsafePointer(), seed))
		}
		return mix(uint64(m.Len()), sum)
	},
	equal: func(n *node, a, b unsafe.Pointer) bool {
		x, y := reflect.NewAt(n.typ, a).Elem(), reflect.NewAt(n.typ, b).Elem()
		if x.Len() != y.Len() {
			return false
		}
		k := reflect.New(n.typ.Key()).Elem()
		v := reflect.New(n.typ.Elem()).Elem()
		w := reflect.New(n.typ.Elem()).Elem()
		for it := x.MapRange(); it.Next(); {
			k.SetIterKey(it)
			v.SetIterValue(it)
			other := y.MapIndex(k)
			if !other.IsValid() {
				return false
			}
			w.Set(other)
			if !equal(n.elem, v.Addr().UnsafePointer(), w.Addr().UnsafePointer()) {
				return false
			}
		}
		return true
	},
	enter: func(in *interner, n *node, p unsafe.Pointer) {
		m := reflect.NewAt(n.typ, p).Elem()
		c := m // a map that is not shared keeps its keys
		if !n.hot.off {
			c = reflect.MakeMapWithSize(n.typ, m.Len())
		}
		k := reflect.New(n.typ.Key()).Elem()
		v := reflect.New(n.typ.Elem()).Elem()
		for it := m.MapRange(); it.Next(); {
			k.SetIterKey(it)
			v.SetIterValue(it)
			if !n.hot.off {
				in.enter(n.key, k.Addr().UnsafePointer())
			}
			in.enter(n.elem, v.Addr().UnsafePointer())
			c.SetMapIndex(k, v)
		}
		m.Set(c)
	},
}

// valuePlace returns the place of the values of key k in the
// map[string]string place n: each key's own (share.KeyedPlace) while
// there are not too many, else the place of the map's values.
func (n *node) valuePlace(k string) *place {
	if pl := share.KeyedPlace(&n.keyed, k, newPlace); pl != nil {
		return pl
	}
	return n.elem.hot
}
