package protodec

import (
	"fmt"
	"slices"
	"strings"
)

// keptPaths are the fields an informer needs: its keys, versions and
// UIDs. They, and the paths that hold them, cannot be skipped.
var keptPaths = []string{"metadata", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion"}

// markSkipped marks the field that path names, a dotted path of JSON
// field names such as spec.containers.env, as never decoded in the
// places rooted at root, whose plan is m. A path goes through slices and
// maps of messages to their elements, and through inline structs, which
// JSON does not name.
func markSkipped(m *message, root *place, path string) error {
	if slices.Contains(keptPaths, path) {
		return fmt.Errorf("%s cannot be skipped: the informer needs it", path)
	}
	names := strings.Split(path, ".")
	pl := root
	for n, name := range names {
		if m == nil || m.codec != structCodec {
			return fmt.Errorf("%s: %s has no fields", path, strings.Join(names[:n], "."))
		}
		chain := m.lookup(name)
		if chain == nil {
			return fmt.Errorf("%s: %s has no field %q", path, m.typ, name)
		}
		for _, f := range chain {
			pl = pl.child(f.num, true)
		}
		f := chain[len(chain)-1]
		if n == len(names)-1 {
			pl.skip = true
			return nil
		}
		switch f.kind {
		case kMessage, kMessagePtr:
			m = f.msg
		case kRepMessage:
			m, pl = f.msg, pl.elemPlace(true)
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
