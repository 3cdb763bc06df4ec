package protodec

import (
	"maps"
	"reflect"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// mapOps fills the maps of one Go type, addressed by pointers to the map
// variable, with keys decoded as strings and values at a pointer to the
// map's value type.
type mapOps struct {
	// make sets the map at p to a new map with room for n entries.
	make func(p unsafe.Pointer, n int)
	// set sets m[k] to the value at v in the map at p.
	set func(p unsafe.Pointer, k string, v unsafe.Pointer)
	// clone replaces the map at p with a copy, which may then be changed:
	// the map may be shared.
	clone func(p unsafe.Pointer)
}

// typedMaps are the map types of the API met most often, filled without
// reflection; the others go through reflectMapOps.
var typedMaps = map[reflect.Type]*mapOps{
	reflect.TypeFor[map[string]string]():   typedMapOps[string, string](),
	reflect.TypeFor[corev1.ResourceList](): typedMapOps[corev1.ResourceName, resource.Quantity](),
	reflect.TypeFor[map[string][]byte]():   typedMapOps[string, []byte](),
}

// mapOpsFor returns the operations on maps of type t.
func mapOpsFor(t reflect.Type) *mapOps {
	if ops, ok := typedMaps[t]; ok {
		return ops
	}
	return reflectMapOps(t)
}

func typedMapOps[K ~string, V any]() *mapOps {
	return &mapOps{
		make: func(p unsafe.Pointer, n int) { *(*map[K]V)(p) = make(map[K]V, n) },
		set:  func(p unsafe.Pointer, k string, v unsafe.Pointer) { (*(*map[K]V)(p))[K(k)] = *(*V)(v) },
		clone: func(p unsafe.Pointer) {
			m := (*map[K]V)(p)
			*m = maps.Clone(*m)
		},
	}
}

func reflectMapOps(t reflect.Type) *mapOps {
	return &mapOps{
		make: func(p unsafe.Pointer, n int) {
			reflect.NewAt(t, p).Elem().Set(reflect.MakeMapWithSize(t, n))
		},
		set: func(p unsafe.Pointer, k string, v unsafe.Pointer) {
			reflect.NewAt(t, p).Elem().SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), reflect.NewAt(t.Elem(), v).Elem())
		},
		clone: func(p unsafe.Pointer) {
			m := reflect.NewAt(t, p).Elem()
			c := reflect.MakeMapWithSize(t, m.Len())
			for it := m.MapRange(); it.Next(); {
				c.SetMapIndex(it.Key(), it.Value())
			}
			m.Set(c)
		},
	}
}
