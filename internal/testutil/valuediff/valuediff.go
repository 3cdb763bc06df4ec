// Package valuediff describes how two values differ, for tests that
// compare decoded objects.
package valuediff

import (
	"fmt"
	"reflect"
	"strings"
)

// First returns the first differences between a and b, field path by
// field path, for the messages of failed comparisons.
func First(a, b any) string {
	var out []string
	var walk func(path string, x, y reflect.Value)
	walk = func(path string, x, y reflect.Value) {
		if len(out) > 3 {
			return
		}
		if x.IsValid() != y.IsValid() {
			out = append(out, path+": validity")
			return
		}
		if !x.IsValid() {
			return
		}
		if x.Type() != y.Type() {
			out = append(out, fmt.Sprintf("%s: %v vs %v", path, x.Type(), y.Type()))
			return
		}
		switch x.Kind() {
		case reflect.Pointer, reflect.Interface:
			if x.IsNil() != y.IsNil() {
				out = append(out, fmt.Sprintf("%s: nil %v vs %v", path, x.IsNil(), y.IsNil()))
				return
			}
			if !x.IsNil() {
				walk(path, x.Elem(), y.Elem())
			}
		case reflect.Struct:
			for i := range x.NumField() {
				walk(path+"."+x.Type().Field(i).Name, x.Field(i), y.Field(i))
			}
		case reflect.Slice, reflect.Map:
			if x.IsNil() != y.IsNil() || x.Len() != y.Len() {
				out = append(out, fmt.Sprintf("%s: nil %v/%v len %d/%d", path, x.IsNil(), y.IsNil(), x.Len(), y.Len()))
				return
			}
			if x.Kind() == reflect.Map {
				for _, k := range x.MapKeys() {
					walk(fmt.Sprintf("%s[%v]", path, k), x.MapIndex(k), y.MapIndex(k))
				}
				return
			}
			for i := range x.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), x.Index(i), y.Index(i))
			}
		default:
			if x.CanInterface() && !reflect.DeepEqual(x.Interface(), y.Interface()) {
				out = append(out, fmt.Sprintf("%s: %v vs %v", path, x.Interface(), y.Interface()))
			}
		}
	}
	walk("", reflect.ValueOf(a), reflect.ValueOf(b))
	return strings.Join(out, "\n")
}
