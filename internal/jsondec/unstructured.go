package jsondec

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Unstructured decodes JSON objects into *unstructured.Unstructured (and
// lists into *unstructured.UnstructuredList) in one pass, as client-go's
// unstructured.UnstructuredJSONScheme decodes them, integers as int64 and
// other numbers as float64; with sharing, keys and the string values
// that repeat at the same place (a label's key, a kind, an image) are
// made once, and so are whole objects and arrays that repeat. It is safe
// for use by several goroutines, which it serializes.
type Unstructured struct {
	mu   sync.Mutex
	root *place
	d    decoder
}

// NewUnstructured returns a decoder of unstructured objects; share makes
// the objects it decodes share equal parts.
func NewUnstructured(share bool) *Unstructured {
	u := &Unstructured{d: newDecoder(share)}
	if share {
		u.root = &place{}
	}
	return u
}

// errMissingKind is UnstructuredJSONScheme's error for an object without a
// kind.
func errMissingKind(b []byte) error { return runtime.NewMissingKindErr(string(b)) }

// Decode decodes b as UnstructuredJSONScheme.Decode does with no object to
// decode into: an object with an "items" member is a list, any other an
// object; one without a kind is an error.
func (u *Unstructured) Decode(b []byte) (runtime.Object, error) {
	if !Valid(b) {
		return nil, syntaxError(b, nil)
	}
	i := ws(b, 0)
	if b[i] != '{' && b[i] != 'n' {
		return nil, &Error{Offset: i, Err: errors.New("cannot unmarshal a JSON value that is not an object into an unstructured object")}
	}
	isList := false
	if b[i] == '{' {
		_ = Members(b, func(key, _ []byte) error {
			isList = isList || string(key) == "items"
			return nil
		})
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var obj runtime.Object
	var err error
	if isList {
		obj, err = u.list(b, i)
	} else {
		var m map[string]any
		if m, err = u.object(u.root, b, i); err == nil {
			obj = &unstructured.Unstructured{Object: m}
		}
	}
	if err != nil {
		return nil, err
	}
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		return nil, errMissingKind(b)
	}
	return obj, nil
}

// object decodes the object or null at b[i] as a map.
func (u *Unstructured) object(pl *place, b []byte, i int) (map[string]any, error) {
	switch b[i] {
	case 'n':
		return nil, nil
	case '{':
		u.d.begin(b)
		m, _, err := u.d.anyObject(pl, b, i)
		u.d.end()
		return m, finish(err, nil)
	}
	return nil, &Error{Offset: i, Err: errors.New("cannot unmarshal a JSON value that is not an object into an unstructured object")}
}

// list decodes the list at b[i] as UnstructuredJSONScheme does: its
// members but items as the list's Object, each item an Unstructured whose
// kind and apiVersion, if both are missing, are the list's.
func (u *Unstructured) list(b []byte, i int) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{}
	var items []byte
	if b[i] == '{' {
		l.Object = map[string]any{}
		err := Members(b[i:], func(key, v []byte) error {
			if string(key) == "items" {
				items = v
				return nil
			}
			k := u.d.str(u.root.keyPlace(u.d.sh.On()), key)
			val, _, err := u.d.any(u.root.valuePlace(k, u.d.sh.On()), v, 0)
			if err != nil {
				return inField(err, k)
			}
			l.Object[k] = val
			return nil
		})
		if err != nil {
			return nil, finish(err, nil)
		}
	}
	switch {
	case items == nil || items[0] == 'n':
		l.Items = []unstructured.Unstructured{}
		return l, nil
	case items[0] != '[':
		return nil, &Error{Path: "items", Err: fmt.Errorf("cannot unmarshal %.20s into the items of a list", items)}
	}
	apiVersion, kind := l.GetAPIVersion(), strings.TrimSuffix(l.GetKind(), "List")
	n, _ := countElements(items, 0)
	l.Items = make([]unstructured.Unstructured, 0, n)
	itemPlace := u.root.valuePlace("items", u.d.sh.On()).elemPlace(u.d.sh.On())
	j := ws(items, 1)
	for k := range n {
		m, err := u.object(itemPlace, items, j)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", k, err)
		}
		item := unstructured.Unstructured{Object: m}
		if item.GetKind() == "" && item.GetAPIVersion() == "" {
			item.SetKind(kind)
			item.SetAPIVersion(apiVersion)
		}
		l.Items = append(l.Items, item)
		j = ws(items, ws(items, skip(items, j))+1)
	}
	return l, nil
}
