package decoded

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/reflector"
)

// List is a page of a list: its metadata and its items, each allocated
// on its own, so that keeping one keeps no other.
type List[T runtime.Object] struct {
	metav1.TypeMeta
	metav1.ListMeta
	// Items are the items that decoded.
	Items []T
	// Undecodable names the items that did not (see Undecodable), in
	// the order of the list; Items holds the others.
	Undecodable []*Undecodable
}

// DeepCopyObject returns a deep copy of l.
func (l *List[T]) DeepCopyObject() runtime.Object {
	c := &List[T]{TypeMeta: l.TypeMeta, Items: make([]T, len(l.Items))}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i, it := range l.Items {
		c.Items[i] = it.DeepCopyObject().(T)
	}
	if l.Undecodable != nil {
		c.Undecodable = make([]*Undecodable, len(l.Undecodable))
		for i, u := range l.Undecodable {
			c.Undecodable[i] = u.DeepCopyObject().(*Undecodable)
		}
	}
	return c
}

// OwnedItems returns the items, which are allocated apart from each other
// and from the list.
func (l *List[T]) OwnedItems() []T { return l.Items }

// UndecodableItems returns the items that did not decode, for the
// reflector, which keeps what the cache holds of them.
func (l *List[T]) UndecodableItems() []reflector.Undecodable {
	us := make([]reflector.Undecodable, len(l.Undecodable))
	for i, u := range l.Undecodable {
		us[i] = u
	}
	return us
}
