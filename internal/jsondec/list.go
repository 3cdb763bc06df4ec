package jsondec

import (
	"fmt"
	"reflect"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/protodec"
)

// Members calls fn with the key and the value of each member of the JSON
// object b, in order, until fn fails. b must be a valid JSON object.
func Members(b []byte, fn func(key, value []byte) error) error {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	j := ws(b, i+1)
	if b[j] == '}' {
		return nil
	}
	for {
		key, vj := readKey(b, j)
		j = vj
		end := skip(b, j)
		if err := fn(key, b[j:end]); err != nil {
			return err
		}
		var last bool
		if j, last = nextMember(b, end); last {
			return nil
		}
	}
}

var listMetaPlan = planFor(reflect.TypeFor[metav1.ListMeta]())

// DecodeList decodes body, a JSON list response whose kind must be
// listKind (WidgetList), into a List of new objects made by newT, which
// must make objects of the decoder's type: in one pass, each item decoded
// straight into its object. Items keep their apiVersion and kind, as
// client-go's JSON decoder keeps them.
func DecodeList[T runtime.Object](dec *Decoder, body []byte, listKind string, newT func() T) (*protodec.List[T], error) {
	if !Valid(body) {
		return nil, fmt.Errorf("decoding %s: %w", listKind, syntaxError(body, nil))
	}
	l := &protodec.List[T]{}
	plain := newDecoder(false)
	dec.mu.Lock()
	defer dec.mu.Unlock()
	var seenItems, seenMeta bool
	err := Members(body, func(key, v []byte) error {
		switch string(key) {
		case "kind":
			if v[0] == '"' && string(v) != `"`+listKind+`"` {
				return fmt.Errorf("the list is a %s, want %q", v, listKind)
			}
		case "metadata":
			if seenMeta {
				return fmt.Errorf("metadata twice")
			}
			seenMeta = true
			if _, err := plain.value(listMetaPlan, nil, unsafe.Pointer(&l.ListMeta), v, 0); err != nil {
				return finish(err, nil)
			}
		case "items":
			if seenItems {
				return fmt.Errorf("items twice")
			}
			seenItems = true
			if v[0] != '[' {
				return fmt.Errorf("items are not an array")
			}
			n, _ := countElements(v, 0)
			l.Items = make([]T, 0, n)
			j := ws(v, 1)
			for k := range n {
				obj := newT()
				if err := dec.decode(*(*unsafe.Pointer)(unsafe.Pointer(&obj)), v, j); err != nil {
					return fmt.Errorf("item %d: %w", k, err)
				}
				l.Items = append(l.Items, obj)
				j = ws(v, ws(v, skip(v, j))+1)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", listKind, err)
	}
	return l, nil
}
