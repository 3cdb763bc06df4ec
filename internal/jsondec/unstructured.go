package jsondec

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/share"
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
	root *share.Place
	d    decoder
	// lastItems is the number of items of the last list decoded, the
	// capacity the next list's items start with.
	lastItems int
}

// NewUnstructured returns a decoder of unstructured objects; sharing makes
// the objects it decodes share equal parts.
func NewUnstructured(sharing bool) *Unstructured {
	u := &Unstructured{d: newDecoder(sharing)}
	if sharing {
		u.root = &share.Place{}
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
	return u.DecodeValid(b)
}

// DecodeValid is Decode for b known to be valid JSON (Valid), such as the
// object of a watch event validated whole.
func (u *Unstructured) DecodeValid(b []byte) (runtime.Object, error) {
	i := ws(b, 0)
	if b[i] != '{' && b[i] != 'n' {
		return nil, &Error{Offset: i, Err: errors.New("cannot unmarshal a JSON value that is not an object into an unstructured object")}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var obj runtime.Object
	m, _, err := u.object(u.root, b, i, true)
	switch {
	case errors.Is(err, errList):
		obj, err = u.list(b)
	case err == nil:
		obj = &unstructured.Unstructured{Object: m}
	}
	if err != nil {
		return nil, err
	}
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		return nil, errMissingKind(b)
	}
	return obj, nil
}

// errList stops the decoding of an object found to be a list: it has an
// "items" member.
var errList = errors.New("the object is a list")

// object decodes the object or null at b[i] as a map and returns the index
// after it; top stops it with errList at an "items" member.
func (u *Unstructured) object(pl *share.Place, b []byte, i int, top bool) (map[string]any, int, error) {
	switch b[i] {
	case 'n':
		return nil, literalEnd(b, i), nil
	case '{':
		u.d.begin(b)
		m, end, err := u.d.anyObject(pl, b, i, top)
		u.d.end()
		if err == errList {
			return nil, 0, err
		}
		return m, end, finish(err, nil)
	}
	return nil, 0, &Error{Offset: i, Err: errors.New("cannot unmarshal a JSON value that is not an object into an unstructured object")}
}

// list decodes the list b as UnstructuredJSONScheme does, in one pass: its
// members but items as the list's Object, each item an Unstructured whose
// kind and apiVersion, if both are missing, are the list's.
func (u *Unstructured) list(b []byte) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{Object: map[string]any{}, Items: []unstructured.Unstructured{}}
	_, err := walkMembers(b, func(key []byte, i int) (int, error) {
		if string(key) == "items" {
			return u.items(l, b, i)
		}
		k := u.d.str(u.root.Key(u.d.sh.On()), key)
		val, end, err := u.d.any(u.root.Value(k, u.d.sh.On()), b, i)
		if err != nil {
			return 0, inField(err, k)
		}
		l.Object[k] = val
		return end, nil
	})
	if err != nil {
		return nil, finish(err, nil)
	}
	apiVersion, kind := l.GetAPIVersion(), strings.TrimSuffix(l.GetKind(), "List")
	for k := range l.Items {
		if item := &l.Items[k]; item.GetKind() == "" && item.GetAPIVersion() == "" {
			item.SetKind(kind)
			item.SetAPIVersion(apiVersion)
		}
	}
	return l, nil
}

// items decodes the items at b[i], an array or null, into l's Items, of
// exactly their number (the cache keeps pointers into it), and returns the
// index after them.
func (u *Unstructured) items(l *unstructured.UnstructuredList, b []byte, i int) (int, error) {
	switch b[i] {
	case 'n':
		l.Items = []unstructured.Unstructured{}
		return literalEnd(b, i), nil
	case '[':
	default:
		return 0, &Error{Path: "items", Err: fmt.Errorf("cannot unmarshal %.20s into the items of a list", b[i:skip(b, i)])}
	}
	items := make([]unstructured.Unstructured, 0, u.lastItems)
	itemPlace := u.root.Value("items", u.d.sh.On()).Elem(u.d.sh.On())
	end, err := walkElements(b, i, func(k, j int) (int, error) {
		m, end, err := u.object(itemPlace, b, j, false)
		if err != nil {
			// Valid JSON decodes as unstructured but for a number out of
			// range and an item that is no object: the list fails,
			// naming the item if it can.
			return 0, fmt.Errorf("item %d: %w", k, orUndecodable(b[j:skip(b, j)], err))
		}
		items = append(items, unstructured.Unstructured{Object: m})
		return end, nil
	})
	if err != nil {
		return 0, err
	}
	u.lastItems = len(items)
	if cap(items) > len(items) {
		items = append(make([]unstructured.Unstructured, 0, len(items)), items...)
	}
	l.Items = items
	return end, nil
}
