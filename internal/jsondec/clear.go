package jsondec

import (
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"github.com/kubetyped/informers/internal/decopt"
)

// Clear zeroes the fields to skip (Options.Skip) of the object at p,
// decoded by other means than dec, so that it reads as dec leaves the
// objects it decodes. It writes only fields that are not zero, so that it
// never writes to the parts a Decoder shares, which it left zero.
func (dec *Decoder) Clear(p unsafe.Pointer) {
	dec.mu.Lock()
	defer dec.mu.Unlock()
	clearSkipped(dec.plan, dec.root, p)
}

// UnstructuredClearer removes the fields to skip from unstructured
// objects, by dotted paths of keys that go through lists to their
// elements, as a Decoder's Clear does for typed ones.
type UnstructuredClearer struct {
	paths [][]string
}

// NewUnstructuredClearer returns an UnstructuredClearer of the fields
// paths name. Unstructured objects have no type to check the paths
// against: only the fields an informer needs are refused.
func NewUnstructuredClearer(paths []string) (*UnstructuredClearer, error) {
	c := &UnstructuredClearer{}
	err := decopt.MarkSkipped("unstructured objects", paths, func(path string, names []string) error {
		if slices.Contains(names, "") {
			return fmt.Errorf("%q: a path is field names joined by dots", path)
		}
		c.paths = append(c.paths, names)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Clear removes the fields to skip from obj, the content of one object.
// The maps and lists on the way to a removed field are replaced by copies
// without it, never changed in place, since a decoder may share them with
// other objects; obj itself, the object's own map, is changed in place.
func (c *UnstructuredClearer) Clear(obj map[string]any) {
	for _, names := range c.paths {
		if len(names) == 1 {
			delete(obj, names[0])
			continue
		}
		if v, ok := obj[names[0]]; ok {
			if cleared, changed := withoutPath(v, names[1:]); changed {
				obj[names[0]] = cleared
			}
		}
	}
}

// withoutPath returns v without the field that names leads to, copying
// what is on the way, and whether there was one to remove.
func withoutPath(v any, names []string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		child, ok := x[names[0]]
		if !ok {
			return v, false
		}
		if len(names) == 1 {
			c := maps.Clone(x)
			delete(c, names[0])
			return c, true
		}
		cleared, changed := withoutPath(child, names[1:])
		if !changed {
			return v, false
		}
		c := maps.Clone(x)
		c[names[0]] = cleared
		return c, true
	case []any:
		var c []any
		for i, e := range x {
			if cleared, changed := withoutPath(e, names); changed {
				if c == nil {
					c = slices.Clone(x)
				}
				c[i] = cleared
			}
		}
		if c == nil {
			return v, false
		}
		return c, true
	}
	return v, false
}
