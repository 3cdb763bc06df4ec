package informers

import (
	"context"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// namespaceSource is what a namespace scope follows: the Namespace
// informer of its factory, a *SharedInformer[*corev1.Namespace].
type namespaceSource interface {
	AddHandlerWith(h Handler[*corev1.Namespace], opts HandlerOptions) (*Registration[*corev1.Namespace], error)
	waitForSync(ctx context.Context) error
	Lister() Lister[*corev1.Namespace]
}

// namespaceSelection is the namespaces an informer with
// Options.NamespaceSelector selects, as the Namespace informer it follows
// shows them, and those whose objects its cache holds.
type namespaceSelection struct {
	selector labels.Selector
	only     string // the informer's namespace, if it has one: nothing else is selected
	source   namespaceSource
	changed  chan struct{} // signalled when a Namespace object changes

	mu sync.Mutex
	// applied is the set of namespaces whose objects the cache holds, as
	// far as the running reflectors have listed them; nil before the
	// first list (nothing is excluded then).
	applied map[string]bool
}

func newNamespaceSelection(selector labels.Selector, only string, source namespaceSource) *namespaceSelection {
	return &namespaceSelection{selector: selector, only: only, source: source, changed: make(chan struct{}, 1)}
}

// wanted returns the namespaces the selector selects now, as the
// Namespace informer shows them.
func (s *namespaceSelection) wanted() map[string]bool {
	want := map[string]bool{}
	for n := range s.source.Lister().Select(s.selector) {
		if s.only == "" || n.Name == s.only {
			want[n.Name] = true
		}
	}
	return want
}

// exists reports whether the server still has namespace name, as the
// Namespace informer shows it.
func (s *namespaceSelection) exists(name string) bool {
	_, err := s.source.Lister().Get(name)
	return err == nil
}

// holds reports whether the cache may hold objects of namespace name.
func (s *namespaceSelection) holds(name string) bool {
	if name == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied == nil || s.applied[name]
}

func (s *namespaceSelection) setApplied(set map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied = set
}

// holdsNow returns the namespaces the cache holds objects of, as the
// last list applied them.
func (s *namespaceSelection) holdsNow() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.applied)
}

// applyOnly keeps in the applied set only the namespaces of want.
func (s *namespaceSelection) applyOnly(want map[string]bool) {
	if applied := s.holdsNow(); applied != nil {
		maps.DeleteFunc(applied, func(n string, _ bool) bool { return !want[n] })
		s.setApplied(applied)
	}
}

// markApplied records that the cache holds the objects of namespace name.
func (s *namespaceSelection) markApplied(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied != nil {
		s.applied[name] = true
	}
}

// leavesNamespaces returns what tells the objects of namespaces outside
// want as leaving: with LeftNamespace, or, if their namespace is gone from
// the server, with their final state unknown.
func leavesNamespaces[T Object](s *namespaceSelection, want map[string]bool) func(T) leaving {
	return func(obj T) leaving {
		ns := obj.GetNamespace()
		switch {
		case ns == "" || want[ns]:
			return stays
		case s.exists(ns):
			return leftNamespace
		}
		return gone
	}
}

// poke signals that the selection may have changed.
func (s *namespaceSelection) poke() { signal(s.changed) }
