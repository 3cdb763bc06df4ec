package protodec

import (
	"fmt"
	"strings"

	"github.com/kubetyped/informers/internal/share"
)

// markSkipped marks the field that path names, split into names, as
// never decoded by dec.
func (dec *Decoder) markSkipped(path string, names []string) error {
	return markSkipped(dec.plan, dec.root, path, names)
}

// markSkipped marks the field that path names, a dotted path of JSON
// field names such as spec.containers.env split into names, as never
// decoded in the places rooted at root, whose plan is m. A path goes
// through slices and maps of messages to their elements, and through
// inline structs, which JSON does not name.
func markSkipped(m *message, root *share.Place, path string, names []string) error {
	pl := root
	for n, name := range names {
		if m == nil || m.codec != structCodec {
			return fmt.Errorf("%s: %s has no fields", path, strings.Join(names[:n], "."))
		}
		chain := m.lookup(name)
		if chain == nil {
			return fmt.Errorf("%s: %s has no field %q%s", path, m.typ, name, suggest(m, name))
		}
		in := m
		for _, f := range chain {
			pl = pl.Child(int(f.num), len(in.fields), true)
			in = f.msg
		}
		f := chain[len(chain)-1]
		if n == len(names)-1 {
			pl.Skip = true
			return nil
		}
		switch f.kind {
		case kMessage, kMessagePtr:
			m = f.msg
		case kRepMessage:
			m, pl = f.msg, pl.Elem(true)
		default:
			m = nil
		}
	}
	return nil
}

// lookup returns the field of m with JSON name name, after the inline
// fields that lead to it, if any.
func (m *message) lookup(name string) []*field {
	for _, f := range m.list {
		if f.json == name {
			return []*field{f}
		}
	}
	for _, f := range m.list {
		if f.json == "" && f.kind == kMessage && f.msg.codec == structCodec {
			if chain := f.msg.lookup(name); chain != nil {
				return append([]*field{f}, chain...)
			}
		}
	}
	return nil
}
