package jsondec

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unsafe"
)

// Clearer zeroes the fields to skip (see Options.Skip) in objects decoded
// by other means than a Decoder, so that they read as a Decoder leaves
// them.
type Clearer struct {
	plan *node
	root *place
}

// NewClearer returns a Clearer of the fields that paths name in objects of
// type t, a pointer to a struct that a Decoder decodes.
func NewClearer(t reflect.Type, paths []string) (*Clearer, error) {
	if !Supports(t) {
		return nil, fmt.Errorf("jsondec: %v does not decode by plan: its fields cannot be skipped", t)
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
	clearSkipped(c.plan, c.root, p)
}

// UnstructuredClearer removes the fields to skip from unstructured
// objects, by dotted paths of keys that go through lists to their
// elements, as Clearer does for typed ones.
type UnstructuredClearer struct {
	paths [][]string
}

// NewUnstructuredClearer returns an UnstructuredClearer of the fields
// paths name. Unstructured objects have no type to check the paths
// against: only the fields an informer needs are refused.
func NewUnstructuredClearer(paths []string) (*UnstructuredClearer, error) {
	c := &UnstructuredClearer{}
	var errs []error
	for _, path := range paths {
		names := strings.Split(path, ".")
		switch {
		case slices.Contains(keptPaths, path):
			errs = append(errs, fmt.Errorf("%s cannot be skipped: the informer needs it", path))
		case slices.Contains(names, ""):
			errs = append(errs, fmt.Errorf("%q: a path is field names joined by dots", path))
		default:
			c.paths = append(c.paths, names)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fields to skip of unstructured objects: %w", err)
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
