package testutil

import (
	"fmt"
	"slices"
	"sync"

	"github.com/kubetyped/informers"
)

// Events is a list of events written as strings. It is safe for concurrent
// use; the zero value is empty and ready.
type Events struct {
	mu     sync.Mutex
	events []string
}

// Record appends e.
func (r *Events) Record(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// List returns a copy of the events recorded so far, in order.
func (r *Events) List() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Has reports whether e was recorded.
func (r *Events) Has(e string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.events, e)
}

// Recorder is a handler that records the events it receives as strings such
// as "add a/x initial", "update a/x 3->4" (the resource versions) or
// "delete a/x unknown left", where a/x is the object's namespace and name.
// A delete whose Object does not match its Key records "WRONG-OBJECT" too.
// The zero value is ready.
type Recorder[T informers.Object] struct {
	Events
}

// HandleAdd records "add ns/name", with " initial" if isInInitialList.
func (r *Recorder[T]) HandleAdd(obj T, isInInitialList bool) {
	e := "add " + key(obj)
	if isInInitialList {
		e += " initial"
	}
	r.Record(e)
}

// HandleUpdate records "update ns/name OLD->NEW".
func (r *Recorder[T]) HandleUpdate(oldObj, newObj T) {
	r.Record(fmt.Sprintf("update %s %s->%s", key(newObj), oldObj.GetResourceVersion(), newObj.GetResourceVersion()))
}

// HandleDelete records "delete ns/name", followed by " unknown" if the
// final state is unknown, " left" if the object left the shard and
// " left-namespace" if its namespace left the namespace selection.
func (r *Recorder[T]) HandleDelete(d informers.Deleted[T]) {
	e := "delete " + d.Key.String()
	if d.FinalStateUnknown {
		e += " unknown"
	}
	if d.LeftShard {
		e += " left"
	}
	if d.LeftNamespace {
		e += " left-namespace"
	}
	if d.Key.String() != key(d.Object) {
		e += " WRONG-OBJECT"
	}
	r.Record(e)
}

func key(o informers.Object) string { return o.GetNamespace() + "/" + o.GetName() }

var _ informers.Handler[informers.Object] = (*Recorder[informers.Object])(nil)
