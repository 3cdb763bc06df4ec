package decopt

import (
	"fmt"
	"reflect"
	"strings"
)

// Field is a field of a struct as encoding/json reads it.
type Field struct {
	JSON   string  // its JSON name
	GoPath string  // its Go path from the struct's, for errors
	Offset uintptr // its offset in the outermost struct, through embedded structs
	Type   reflect.Type
	Depth  int // how many embedded structs lead to it
}

// Inline says whether Fields reads the fields of sf, a struct, or a
// pointer to one, embedded without a JSON name, as those of the struct
// that embeds it, as encoding/json does (true), or leaves them out
// (false); an error ends Fields with it. Offsets through a pointer mean
// nothing.
type Inline func(sf reflect.StructField, goPath string) (bool, error)

// InlineAll reads every embedded struct's fields.
func InlineAll(reflect.StructField, string) (bool, error) { return true, nil }

// Fields returns the fields of struct t as encoding/json reads them: its
// exported fields under their JSON names, and the fields of the structs
// it embeds without a JSON name, where inline says so. Of two fields of
// one name the shallower wins; two at the same depth conflict, and the
// error names the first conflict, with the fields found (the first of
// the two kept). path is t's Go path, for errors.
func Fields(t reflect.Type, path string, inline Inline) ([]Field, error) {
	var all []Field
	var walk func(t reflect.Type, off uintptr, path string, depth int) error
	walk = func(t reflect.Type, off uintptr, path string, depth int) error {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" || !sf.IsExported() && !sf.Anonymous {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			goPath := path + "." + sf.Name
			if sf.Anonymous && name == "" {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					in, err := inline(sf, goPath)
					if err != nil {
						return err
					}
					if in {
						if err := walk(et, off+sf.Offset, goPath, depth+1); err != nil {
							return err
						}
					}
					continue
				}
				if !sf.IsExported() {
					continue
				}
			}
			if name == "" {
				name = sf.Name
			}
			all = append(all, Field{JSON: name, GoPath: goPath, Offset: off + sf.Offset, Type: sf.Type, Depth: depth})
		}
		return nil
	}
	if err := walk(t, 0, path, 0); err != nil {
		return nil, err
	}
	byName := map[string]int{}
	var fields []Field
	for _, f := range all {
		if i, seen := byName[f.JSON]; !seen {
			byName[f.JSON] = len(fields)
			fields = append(fields, f)
		} else if f.Depth < fields[i].Depth {
			fields[i] = f
		}
	}
	for _, f := range all {
		if w := fields[byName[f.JSON]]; f.Depth == w.Depth && f.GoPath != w.GoPath {
			return fields, fmt.Errorf("%s and %s are both named %q", w.GoPath, f.GoPath, f.JSON)
		}
	}
	return fields, nil
}
