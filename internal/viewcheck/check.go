package viewcheck

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/kubetyped/informers/internal/decopt"
)

// Error says why a view is not a view of a schema: a field of the view
// the schema has not, or of a Go type that cannot hold the JSON kind the
// schema gives it.
type Error struct {
	// View is the view's Go type.
	View reflect.Type
	// Path is the field's JSON path from the view's root, GoPath its Go
	// path.
	Path, GoPath string
	// Schema names the schema's type that has no such field, or whose
	// kind the field cannot hold.
	Schema string
	msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("view %v: field %q (%s): %s", e.View, e.Path, e.GoPath, e.msg)
}

// Report tells what Check could not check.
type Report struct {
	// Unchecked are the JSON paths of the view's fields that fall under a
	// part of the schema that says nothing of them
	// (x-kubernetes-preserve-unknown-fields, an untyped schema), or whose
	// Go type has a JSON of its own that the check does not know.
	Unchecked []string
}

// Check checks view, a pointer to a struct, against root, the schema of
// the type it projects: each field of view must be a field of the
// schema's object at the same place, of a Go type that decodes the JSON
// kind the schema gives it. It returns the first mismatch as an *Error,
// and what it could not check.
func Check(view reflect.Type, root *Schema) (Report, error) {
	c := checker{view: view, seen: map[pair]bool{}}
	t := view
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	err := c.value(t, root, "", t.Name())
	slices.Sort(c.report.Unchecked)
	return c.report, err
}

type pair struct {
	t reflect.Type
	s *Schema
}

type checker struct {
	view   reflect.Type
	seen   map[pair]bool
	report Report
}

func (c *checker) fail(path, goPath string, s *Schema, format string, args ...any) error {
	return &Error{View: c.view, Path: cmpOrRoot(path), GoPath: goPath, Schema: s.Name, msg: fmt.Sprintf(format, args...)}
}

func cmpOrRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// value checks the values of Go type t, at JSON path path and Go path
// goPath, against s.
func (c *checker) value(t reflect.Type, s *Schema, path, goPath string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return nil // holds any JSON value
	}
	if s == nil || s.Kind == Any {
		c.report.Unchecked = append(c.report.Unchecked, cmpOrRoot(path))
		return nil
	}
	if c.seen[pair{t, s}] {
		return nil
	}
	c.seen[pair{t, s}] = true
	mismatch := func() error {
		return c.fail(path, goPath, s, "Go type %v cannot hold the schema's %v", t, s)
	}
	if k, ok := ownJSON[t]; ok {
		if !holds(k, s.Kind) {
			return mismatch()
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		c.report.Unchecked = append(c.report.Unchecked, cmpOrRoot(path))
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		if s.Kind != String {
			return mismatch()
		}
	case reflect.Bool:
		if s.Kind != Boolean {
			return mismatch()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if s.Kind != Integer {
			return mismatch()
		}
	case reflect.Float32, reflect.Float64:
		if s.Kind != Number && s.Kind != Integer {
			return mismatch()
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if s.Kind != String {
				return mismatch()
			}
			return nil
		}
		if s.Kind != Array {
			return mismatch()
		}
		return c.value(t.Elem(), s.Elem, path+"[]", goPath+"[]")
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return mismatch()
		}
		switch s.Kind {
		case Map:
			return c.value(t.Elem(), s.Elem, path+"[]", goPath+"[]")
		case Object:
			// Every field of the object is a value of the map.
			for _, name := range s.fieldNames() {
				if err := c.value(t.Elem(), s.Fields[name], join(path, name), goPath+"["+name+"]"); err != nil {
					return err
				}
			}
			if s.Open {
				c.report.Unchecked = append(c.report.Unchecked, join(path, "*"))
			}
			return nil
		}
		return mismatch()
	case reflect.Struct:
		return c.object(t, s, path, goPath, mismatch)
	default:
		return mismatch()
	}
	return nil
}

// object checks struct t against s, an Object or a Map.
func (c *checker) object(t reflect.Type, s *Schema, path, goPath string, mismatch func() error) error {
	if s.Kind != Object && s.Kind != Map {
		return mismatch()
	}
	fields, err := jsonFields(t, goPath)
	if err != nil {
		return fmt.Errorf("view %v: %w", c.view, err)
	}
	for _, f := range fields {
		fpath := join(path, f.JSON)
		if s.Kind == Map {
			if err := c.value(f.Type, s.Elem, fpath, f.GoPath); err != nil {
				return err
			}
			continue
		}
		fs, ok := s.Fields[f.JSON]
		if !ok {
			if s.Open {
				c.report.Unchecked = append(c.report.Unchecked, fpath)
				continue
			}
			return c.fail(fpath, f.GoPath, s, "%s has no field %q%s", s, f.JSON, decopt.DidYouMean(f.JSON, s.fieldNames()))
		}
		if err := c.value(f.Type, fs, fpath, f.GoPath); err != nil {
			return err
		}
	}
	return nil
}

// holds reports whether a Go type with a JSON of its own of kind own
// decodes the values of a schema of kind kind.
func holds(own, kind Kind) bool {
	switch own {
	case Any:
		return true
	case Quantity:
		return kind == Quantity || kind == IntOrString || kind == String || kind == Integer || kind == Number
	case IntOrString:
		return kind == IntOrString || kind == Integer || kind == String
	}
	return own == kind
}

// join returns the JSON path of field name under path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
