package informers

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/intern"
	"github.com/kubetyped/informers/internal/store"
)

// maxSiblings bounds how many controllers interning remembers an object
// of.
const maxSiblings = 4096

// interning makes each object the writer caches share memory with the
// objects cached before (see intern). Comparing an object with a similar
// one costs a fraction of looking each of its parts up, so it compares
// the object with the version it replaces, or else with the last object
// cached of the same controller (the pods of one ReplicaSet differ in
// little but names, addresses and times), or else with the last object
// cached; the parts that differ are looked up.
type interning[T Object] struct {
	in       *intern.Interner[T]
	siblings map[types.UID]store.Key // by controller: the last object cached
	last     store.Key
}

func newInterning[T Object]() *interning[T] {
	in := intern.New[T]()
	if in == nil {
		return nil
	}
	return &interning[T]{in: in, siblings: make(map[types.UID]store.Key)}
}

// intern interns obj, under key, before s caches it.
func (i *interning[T]) intern(s *store.Store[T], key store.Key, obj T) {
	if cur, ok := s.Get(key); ok {
		i.in.InternLike(obj, cur)
		return
	}
	owner := controllerUID(obj)
	like, ok := i.siblings[owner]
	if !ok {
		like = i.last
	}
	if cur, ok := s.Get(like); ok {
		i.in.InternLike(obj, cur)
	} else {
		i.in.Intern(obj)
	}
	i.last = store.KeyOf(obj)
	if owner != "" {
		if len(i.siblings) >= maxSiblings {
			clear(i.siblings)
		}
		i.siblings[owner] = i.last
	}
}

// controllerUID returns the UID of obj's controller, or "".
func controllerUID(obj Object) types.UID {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID
		}
	}
	return ""
}
