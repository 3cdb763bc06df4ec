package jsondec

import (
	"fmt"
	"reflect"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// Event validates the JSON watch event line and returns its type and
// object and the object's kind as it is spelled, reading the event once;
// ok is false if line is not valid JSON (Valid), and type and object
// are nil where line is not an object or lacks them. Where a member
// appears twice the last counts, as encoding/json reads it.
func Event(line []byte) (typ, object []byte, kind string, ok bool) {
	var ev eventParts
	if !valid(line, &ev) {
		return nil, nil, "", false
	}
	return ev.typ, ev.object, string(ev.kind), true
}

// eventParts records the parts of a watch event as Valid reads it: the
// members of the event (depth 1) and those of its object (depth 2).
type eventParts struct {
	key         []byte // the event's member being read
	start       int    // where its value starts
	objKey      []byte // the object's member being read, if key is "object"
	objStart    int
	typ, object []byte
	kind        []byte
}

// member records the member whose key starts at b[k] and whose value
// starts at b[v], in the arrays and objects open.
func (ev *eventParts) member(b []byte, k, v int, open []byte) {
	switch {
	case len(open) == 1:
		ev.key, _ = readString(b, k)
		ev.start = v
		if string(ev.key) == "object" {
			ev.kind = nil
		}
	case len(open) == 2 && open[1] == '{' && string(ev.key) == "object":
		ev.objKey, _ = readString(b, k)
		ev.objStart = v
	}
}

// ended records the value that ends before b[end], at depth.
func (ev *eventParts) ended(b []byte, end, depth int) {
	switch {
	case depth == 1 && string(ev.key) == "type":
		ev.typ = b[ev.start:end]
	case depth == 1 && string(ev.key) == "object":
		ev.object = b[ev.start:end]
	case depth == 2 && string(ev.key) == "object" && string(ev.objKey) == "kind" && b[ev.objStart] == '"':
		ev.kind = b[ev.objStart+1 : end-1]
	}
}

// walkMembers calls fn with the key of each member of the JSON object b,
// in order, and the index of its value, which fn reads or skips, returning
// the index after it; it stops where fn fails. b must be a valid JSON
// object, and it returns the index after the object.
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
// kind, as client-go's JSON decoder keeps them; null items are none. An
// item that does not fit the type is left out of the items and named in
// the list's Undecodable, if its metadata names it; else the list fails.
func DecodeList[T runtime.Object](dec *Decoder, body []byte, listKind string, newT func() T) (*decoded.List[T], error) {
	if !Valid(body) {
		return nil, fmt.Errorf("decoding %s: %w", listKind, syntaxError(body, nil))
	}
	l := &decoded.List[T]{}
	plain := newDecoder(false)
	dec.mu.Lock()
	defer dec.mu.Unlock()
	var seenItems, seenMeta bool
	_, err := walkMembers(body, func(key []byte, i int) (int, error) {
		switch string(key) {
		case "kind":
			end := skip(body, i)
			if v := body[i:end]; v[0] == '"' && string(v) != `"`+listKind+`"` {
				return 0, &decoded.KindError{Got: unquoted(v), Want: listKind}
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
func decodeItems[T runtime.Object](dec *Decoder, body []byte, i int, l *decoded.List[T], newT func() T) (int, error) {
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
		end, err := dec.decode(decoded.Pointer(obj), body, j)
		if err != nil {
			end = skip(body, j)
			u := undecodable(body[j:end], err)
			if u == nil {
				return 0, fmt.Errorf("item %d: %w", k, err)
			}
			l.Undecodable = append(l.Undecodable, u)
			return end, nil
		}
		l.Items = append(l.Items, obj)
		return end, nil
	})
	if err == nil {
		dec.lastItems = len(l.Items) + len(l.Undecodable)
	}
	return end, err
}
