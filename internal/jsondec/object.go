package jsondec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

	sigsjson "sigs.k8s.io/json"

	"github.com/kubetyped/informers/internal/decopt"
	"github.com/kubetyped/informers/internal/share"
)

// Options configure a Decoder, as they configure every decoder of the
// library.
type Options = decopt.Options

// Decoder decodes JSON objects of one Go type. It is safe for use by
// several goroutines, which it serializes: it remembers what it decoded,
// so that objects decoded later share it.
type Decoder struct {
	typ  reflect.Type // the object's struct type
	plan *node

	mu   sync.Mutex
	root *share.Place // nil: nothing shared or skipped
	d    decoder
	// lastItems is the number of items of the last list decoded, the
	// capacity the next list's items start with.
	lastItems int
}

// Supports reports whether objects of type t, a pointer to a struct,
// decode with a Decoder by its plans rather than by encoding/json.
func Supports(t reflect.Type) bool {
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct &&
		planFor(t.Elem()).kind == kStruct
}

// New returns a Decoder of objects of type t, a pointer to a struct such
// as *corev1.Pod or a custom resource's type.
func New(t reflect.Type, o Options) (*Decoder, error) {
	if !Supports(t) {
		return nil, fmt.Errorf("jsondec: %v does not decode by plan", t)
	}
	dec := &Decoder{typ: t.Elem(), plan: planFor(t.Elem()), d: newDecoder(o.Share)}
	if o.Share || len(o.Skip) > 0 {
		dec.root = &share.Place{}
	}
	if err := decopt.MarkSkipped(t, o.Skip, dec.markSkipped); err != nil {
		return nil, err
	}
	return dec, nil
}

// Decode decodes b, the JSON of one object, into the zero object at p, as
// sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts decodes it.
func (dec *Decoder) Decode(p unsafe.Pointer, b []byte) error {
	if !Valid(b) {
		return syntaxError(b, dec.typ)
	}
	dec.mu.Lock()
	defer dec.mu.Unlock()
	_, err := dec.decode(p, b, ws(b, 0))
	return err
}

// DecodeValid is Decode for b known to be valid JSON (Valid), such
// as the object of a watch event validated whole.
func (dec *Decoder) DecodeValid(p unsafe.Pointer, b []byte) error {
	dec.mu.Lock()
	defer dec.mu.Unlock()
	_, err := dec.decode(p, b, ws(b, 0))
	return err
}

// decode decodes the valid JSON value at b[i] into the zero object at p
// and returns the index after it.
func (dec *Decoder) decode(p unsafe.Pointer, b []byte, i int) (int, error) {
	dec.d.begin(b)
	end, err := dec.d.value(dec.plan, dec.root, p, b, i)
	dec.d.end()
	if err == errDuplicate {
		// encoding/json merges the values of a key met twice: decoded
		// anew by its rules, into an object that shares nothing.
		v := reflect.NewAt(dec.typ, p)
		v.Elem().SetZero()
		end = skip(b, i)
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(b[i:end], v.Interface())
		if err == nil && dec.root != nil {
			clearSkipped(dec.plan, dec.root, p)
		}
	}
	if err != nil {
		return 0, finish(atOffset(err, i), reflect.PointerTo(dec.typ))
	}
	return end, nil
}

// syntaxError returns the error of b, which is not valid JSON, as
// sigs.k8s.io/json reports it.
func syntaxError(b []byte, t reflect.Type) error {
	var v any
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &v)
	if err == nil {
		err = errors.New("invalid JSON")
	}
	off := 0
	if se, ok := err.(*json.SyntaxError); ok {
		off = int(se.Offset)
	}
	var pt reflect.Type
	if t != nil {
		pt = reflect.PointerTo(t)
	}
	return &Error{Type: pt, Offset: off, Err: err}
}

// markSkipped marks the field that path names, split into names, as
// never decoded by dec.
func (dec *Decoder) markSkipped(path string, names []string) error {
	return markSkipped(dec.plan, dec.root, path, names)
}

// markSkipped marks the field that path names, a dotted path of JSON
// field names such as spec.containers.env split into names, as never
// decoded in the places rooted at root, whose plan is n. A path goes
// through pointers, slices and maps to their elements.
func markSkipped(n *node, root *share.Place, path string, names []string) error {
	pl := root
	for k, name := range names {
		pl.SkipBelow = true
		for n.kind == kPointer || n.kind == kSlice || n.kind == kMap {
			n, pl = n.elem, pl.Elem(true)
			pl.SkipBelow = true
		}
		if n.kind != kStruct {
			return fmt.Errorf("%s: %s has no fields", path, strings.Join(names[:k], "."))
		}
		f := n.byName[name]
		if f == nil {
			return fmt.Errorf("%s: %v has no field %q%s", path, n.typ, name, decopt.DidYouMean(name, slices.Collect(maps.Keys(n.byName))))
		}
		n, pl = f.n, pl.Child(f.index, len(n.fields), true)
	}
	pl.Skip = true
	return nil
}

// clearSkipped zeroes the skipped fields of the object at p, decoded
// without the plan, and reports whether it zeroed any. It writes only
// fields that are not zero.
func clearSkipped(n *node, pl *share.Place, p unsafe.Pointer) bool {
	if pl == nil || p == nil {
		return false
	}
	cleared := false
	switch n.kind {
	case kStruct:
		for i, f := range n.fields {
			fpl := pl.Child(i, len(n.fields), false)
			if fpl == nil {
				continue
			}
			fp := p
			for _, s := range f.steps {
				fp = unsafe.Add(fp, s.off)
				if s.elem != nil {
					if fp = *(*unsafe.Pointer)(fp); fp == nil {
						break
					}
				}
			}
			if fp == nil {
				continue
			}
			if fpl.Skip {
				if v := reflect.NewAt(f.n.typ, fp).Elem(); !v.IsZero() {
					v.SetZero()
					cleared = true
				}
				continue
			}
			cleared = clearSkipped(f.n, fpl, fp) || cleared
		}
	case kPointer:
		cleared = clearSkipped(n.elem, pl.Elem(false), *(*unsafe.Pointer)(p))
	case kSlice:
		epl := pl.Elem(false)
		if epl == nil {
			return false
		}
		h := (*sliceHeader)(p)
		for k := range h.len {
			cleared = clearSkipped(n.elem, epl, unsafe.Add(h.data, uintptr(k)*n.elem.typ.Size())) || cleared
		}
	case kMap:
		epl := pl.Elem(false)
		if epl == nil {
			return false
		}
		// Map values are not addressable: each is cleared in a copy,
		// stored back only if it changed.
		m := reflect.NewAt(n.typ, p).Elem()
		for it := m.MapRange(); it.Next(); {
			v := reflect.New(n.elem.typ)
			v.Elem().Set(it.Value())
			if clearSkipped(n.elem, epl, v.UnsafePointer()) {
				m.SetMapIndex(it.Key(), v.Elem())
				cleared = true
			}
		}
	}
	return cleared
}
