package informers

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// ConsistencyError says that a cache, or a handler, does not show a write
// yet: the wait for it ended first. Requeue the key; the next attempt
// usually finds the cache caught up.
type ConsistencyError struct {
	Resource string
	// Handler names the handler waited for, if it was a registration.
	Handler string
	// Key is the key the writes were recorded under, for a Tracker.
	Key types.NamespacedName
	// Object is the object written, for a Tracker.
	Object types.NamespacedName
	// Written is the version written; "" for a delete.
	Written string
	// Deleted says the object was deleted, or written out of the
	// informer's scope, and the cache still holds it.
	Deleted bool
	// Cached is the version the cache was at.
	Cached string
	// Err is why the wait ended: the context's error, or ErrStopped.
	Err error
}

func (e *ConsistencyError) Error() string {
	var b strings.Builder
	b.WriteString(message("%s", e.Resource))
	if e.Handler != "" {
		fmt.Fprintf(&b, " handler %s", e.Handler)
	}
	switch {
	case e.Deleted:
		fmt.Fprintf(&b, ": cache still holds %s, deleted or moved out of the informer's scope", e.Object)
	case e.Object != (types.NamespacedName{}):
		fmt.Fprintf(&b, ": cache does not show the write of %s at version %s yet", e.Object, e.Written)
	default:
		fmt.Fprintf(&b, ": version %s not reached yet", e.Written)
	}
	if e.Cached != "" {
		fmt.Fprintf(&b, " (cache at %s)", e.Cached)
	}
	if e.Key != (types.NamespacedName{}) && e.Key != e.Object {
		fmt.Fprintf(&b, ", written for %s", e.Key)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ConsistencyError) Unwrap() error { return e.Err }
