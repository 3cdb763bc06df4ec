package informers

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
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

// VersionError says that a resource version cannot be compared with
// another (KEP-5504): it is not a decimal number as servers backed by etcd
// give, so waiting for a cache to reach it might never end. Waits return it
// at once.
type VersionError struct {
	Resource string
	// Version is the version that does not compare: the one waited for,
	// or, with Cached set, the one the cache is at.
	Version string
	Cached  bool
	Err     error
}

func (e *VersionError) Error() string {
	whose := "resource version"
	if e.Cached {
		whose = "cache's resource version"
	}
	return message("%s: %s %q cannot be compared with others (not a version of a server that follows KEP-5504): %v", e.Resource, whose, e.Version, e.Err)
}

func (e *VersionError) Unwrap() error { return e.Err }

// compareVersions compares resource versions a and b as KEP-5504 allows:
// -1, 0 or 1 as a is older than, the same as or newer than b.
func compareVersions(a, b string) (int, error) {
	return resourceversion.CompareResourceVersion(a, b)
}

// beforeAll reports whether v, a cache's version, comes before every
// version: a source with no write yet lists at "0".
func beforeAll(v string) bool { return v == "0" }
