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
	_, err := walkMembers(b, func(key []byte, i int) (int, error) {
		end := skip(b, i)
		return end, fn(key, b[i:end])
	})
	return err
}

// Event returns the type and the object of the JSON watch event line, and
// the object's kind as it is spelled, reading the event once, the object's
// members but skipped; line must be valid JSON (Valid). Where a member
// appears twice the last counts, as encoding/json reads it.
func Event(line []byte) (typ, object []byte, kind string, err error) {
	_, err = walkMembers(line, func(key []byte, i int) (int, error) {
		switch string(key) {
		case "type":
			end := skip(line, i)
			typ = line[i:end]
			return end, nil
		case "object":
			kind = ""
			if line[i] != '{' {
				end := skip(line, i)
				object = line[i:end]
				return end, nil
			}
			obj := line[i:]
			n, err := walkMembers(obj, func(key []byte, j int) (int, error) {
				end := skip(obj, j)
				if v := obj[j:end]; string(key) == "kind" && len(v) > 1 && v[0] == '"' {
					kind = string(v[1 : len(v)-1])
				}
				return end, nil
			})
			object = obj[:n]
			return i + n, err
		}
		return skip(line, i), nil
	})
	return typ, object, kind, err
}

// walkMembers calls fn with the key of each member of the JSON object b,
// in order, and the index of its value, which fn reads or skips, returning
// the index after it; it stops where fn fails. b must be a valid JSON
// object, and it returns the index after the object. Unlike Members, it
// lets a caller decode a value where it lies instead of skipping it first.
func walkMembers(b []byte, fn func(key []byte, i int) (end int, err error)) (int, error) {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, fmt.Errorf("not a JSON object")
	}
	j := ws(b, i+1)
	if b[j] == '}' {
		return j + 1, nil
	}
	for {
		key, vj := readKey(b, j)
		end, err := fn(key, vj)
		if err != nil {
			return 0, err
		}
		var last bool
		if j, last = nextMember(b, end); last {
			return j, nil
		}
	}
}

var listMetaPlan = planFor(reflect.TypeFor[metav1.ListMeta]())

// DecodeList decodes body, a JSON list response whose kind must be
// listKind (WidgetList), into a List of new objects made by newT, which
// must make objects of the decoder's type: in one pass, each item decoded
// straight into its object where it lies. Items keep their apiVersion and
// kind, as client-go's JSON decoder keeps them; null items are none.
func DecodeList[T runtime.Object](dec *Decoder, body []byte, listKind string, newT func() T) (*protodec.List[T], error) {
	if !Valid(body) {
		return nil, fmt.Errorf("decoding %s: %w", listKind, syntaxError(body, nil))
	}
	l := &protodec.List[T]{}
	plain := newDecoder(false)
	dec.mu.Lock()
	defer dec.mu.Unlock()
	var seenItems, seenMeta bool
	_, err := walkMembers(body, func(key []byte, i int) (int, error) {
		switch string(key) {
		case "kind":
			end := skip(body, i)
			if v := body[i:end]; v[0] == '"' && string(v) != `"`+listKind+`"` {
				return 0, fmt.Errorf("the list is a %s, want %q", v, listKind)
			}
			return end, nil
		case "metadata":
			if seenMeta {
				return 0, fmt.Errorf("metadata twice")
			}
			seenMeta = true
			end, err := plain.value(listMetaPlan, nil, unsafe.Pointer(&l.ListMeta), body, i)
			return end, finish(err, nil)
		case "items":
			if seenItems {
				return 0, fmt.Errorf("items twice")
			}
			seenItems = true
			return decodeItems(dec, body, i, l, newT)
		}
		return skip(body, i), nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", listKind, err)
	}
	return l, nil
}

// walkElements calls fn with the index k of each element of the JSON
// array at b[i], in order, and the index j where it starts, which fn reads
// or skips, returning the index after it; it stops where fn fails, and
// returns the index after the array. The array must be valid JSON.
func walkElements(b []byte, i int, fn func(k, j int) (end int, err error)) (int, error) {
	j := ws(b, i+1)
	if b[j] == ']' {
		return j + 1, nil
	}
	for k := 0; ; k++ {
		end, err := fn(k, j)
		if err != nil {
			return 0, err
		}
		if j = ws(b, end); b[j] == ']' {
			return j + 1, nil
		}
		j = ws(b, j+1) // past the comma
	}
}

// decodeItems decodes the array of items at body[i] into l's Items and
// returns the index after it. The items slice is the page's, not kept, so
// it grows as items come, from the size of the page before.
func decodeItems[T runtime.Object](dec *Decoder, body []byte, i int, l *protodec.List[T], newT func() T) (int, error) {
	switch body[i] {
	case 'n':
		return literalEnd(body, i), nil
	case '[':
	default:
		return 0, fmt.Errorf("items are not an array")
	}
	l.Items = make([]T, 0, dec.lastItems)
	end, err := walkElements(body, i, func(k, j int) (int, error) {
		obj := newT()
		end, err := dec.decode(*(*unsafe.Pointer)(unsafe.Pointer(&obj)), body, j)
		if err != nil {
			return 0, fmt.Errorf("item %d: %w", k, err)
		}
		l.Items = append(l.Items, obj)
		return end, nil
	})
	if err == nil {
		dec.lastItems = len(l.Items)
	}
	return end, err
}
