package informers

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/wording"
)

// ErrStopped is returned by calls on an informer or factory that has stopped.
var ErrStopped = errors.New("informers: stopped")

// ErrReleased is wrapped by the errors of the listers of an informer that
// Factory.Release released: Get and ByIndex find nothing because the cache
// was emptied, not because the server has no such object.
var ErrReleased = errors.New("informers: informer released by Factory.Release, its cache emptied")

// ErrNotStarted is returned by WaitForSync for a Factory not yet started:
// its informers would never sync.
var ErrNotStarted = errors.New("informers: factory not started")

// ListWatchError reports a failed list or watch request, or an event the
// informer could not use, for one resource.
type ListWatchError struct {
	// Resource names the informer's resource and Go type.
	Resource string
	// Op is "list", "watch", "watch-list" or "decode".
	Op  string
	Err error
}

// Error says what failed, with the HTTP status the server answered, if it
// did, as in "informers: list pods.v1 (*v1.Pod): 403 Forbidden: ...".
func (e *ListWatchError) Error() string {
	if code := statusCode(e.Err); code != 0 {
		return message("%s %s: %d %s: %v", e.Op, e.Resource, code, http.StatusText(code), e.Err)
	}
	return message("%s %s: %v", e.Op, e.Resource, e.Err)
}

func (e *ListWatchError) Unwrap() error { return e.Err }

// ScopeError is returned by a lister's Get asked in the wrong scope: Get
// on a namespaced resource, whose objects are only found through
// Namespace(ns).Get, or Namespace(ns).Get on a cluster-scoped one.
type ScopeError struct {
	Resource   schema.GroupResource
	Name       string
	Namespaced bool // the resource is namespaced
}

func (e *ScopeError) Error() string {
	if e.Namespaced {
		return message("get %s %q: %s is a namespaced resource: use Lister().Namespace(ns).Get", e.Resource, e.Name, e.Resource)
	}
	return message("get %s %q: %s is a cluster-scoped resource: use Lister().Get", e.Resource, e.Name, e.Resource)
}

// NotSyncedError is returned by WaitForSync for an informer whose cache did
// not sync: the wait ended (Err is the context's error) or the last request
// failed in a way that retrying alone will not fix (Err is nil and LastErr
// says why, such as a 403 Forbidden or a 404 for a missing CRD).
type NotSyncedError struct {
	Resource string
	// LastErr is the last list or watch error, or nil if there was none.
	LastErr error
	// Err is the context's error if the wait ended on it.
	Err error
	// WaitingForResource says the informer waits for its resource to be
	// served (Options.WaitForResource): the server answered 404.
	WaitingForResource bool
}

func (e *NotSyncedError) Error() string {
	var b strings.Builder
	b.WriteString(message("cache of %s not synced", e.Resource))
	if e.WaitingForResource {
		b.WriteString(": waiting for the resource to be served")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " (%v)", e.Err)
	}
	if e.LastErr != nil {
		fmt.Fprintf(&b, ": last error: %v", e.LastErr)
	}
	return b.String()
}

// Unwrap returns LastErr and Err, those that are set.
func (e *NotSyncedError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.LastErr, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// HandlerOverflowError reports a handler removed because more events
// waited for it than its queue limit (HandlerOptions.QueueLimit) allows.
type HandlerOverflowError struct {
	Resource string
	// Handler is the name given in HandlerOptions.Name, or the handler's Go type.
	Handler string
	Limit   int
}

func (e *HandlerOverflowError) Error() string {
	return message("%s: handler %s removed: more than %d events waited for it", e.Resource, e.Handler, e.Limit)
}

// HandlerPanicError reports a handler that panicked. The informer recovers
// the panic, reports it, and goes on delivering the handler's next events:
// one faulty handler costs no other handler, and not itself, its events.
type HandlerPanicError struct {
	Resource string
	// Handler is the name given in HandlerOptions.Name, or the handler's Go type.
	Handler string
	// Event is "add", "update" or "delete".
	Event string
	Key   types.NamespacedName
	Value any
	Stack []byte
}

func (e *HandlerPanicError) Error() string {
	return message("%s handler %s panicked on %s of %s: %v", e.Resource, e.Handler, e.Event, e.Key, e.Value)
}

// TransformError reports a transform that failed or panicked; the object
// was not stored.
type TransformError struct {
	Resource string
	Key      types.NamespacedName
	Err      error
}

func (e *TransformError) Error() string {
	return message("transform of %s %s: %v", e.Resource, e.Key, e.Err)
}

func (e *TransformError) Unwrap() error { return e.Err }

// IndexError reports an index function that panicked; the object is stored
// but missing from that index.
type IndexError struct {
	Resource string
	Index    string
	Key      types.NamespacedName
	Value    any
	Stack    []byte
}

func (e *IndexError) Error() string {
	return message("%s index %q panicked on %s: %v", e.Resource, e.Index, e.Key, e.Value)
}

// isPermanent reports whether a list or watch error will not go away by
// retrying alone: it needs a change on the server (RBAC, a CRD) or in the
// caller's code.
func isPermanent(err error) bool {
	var lw *ListWatchError
	if errors.As(err, &lw) && lw.Op == "decode" {
		return true
	}
	if apiclient.IsMismatch(err) {
		return true // the view needs a fix, or the server's schema does
	}
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}

// errorf formats an error of the package, its message prefixed with
// "informers: " as every error the package makes is.
func errorf(format string, args ...any) error {
	return fmt.Errorf("informers: "+format, args...)
}

// message formats the message of an error type of the package, prefixed
// as errorf prefixes.
func message(format string, args ...any) string {
	return "informers: " + fmt.Sprintf(format, args...)
}

// statusCode returns the HTTP status of a failed request's error, or 0
// when there was no response.
func statusCode(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	return 0
}

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

// UndecodableObjectError says that the server has an object of the
// informer's resource that cannot be decoded into its Go type: a field of
// the wrong type or out of range, as a custom resource whose schema
// preserves unknown fields lets through. The object is named by its
// metadata, which decoded; Err is the decoder's error, naming the field.
//
// Every other object of the resource is cached and delivered all the
// same. The cache keeps the object's last state that decoded, if any, and
// handlers are told nothing of it until it decodes again (an update of
// that state, or an add if it never decoded) or is deleted; it is never
// reported deleted while the server has it.
// OnError (or the log) gets the error once per version of the object,
// InformerStats.Undecodable counts such objects, a Tracker returns the
// error for a write of one, and, with Options.FailReadinessOnUndecodable,
// ReadyCheck fails while there is one. When most objects fail at the
// same field, the type is at fault: see UndecodableTypeError. Its message
// is the resource's and Err's, which names the object, its uid and
// resourceVersion, the field and the cause.
type UndecodableObjectError struct {
	Resource        string
	Key             types.NamespacedName
	UID             types.UID
	ResourceVersion string
	Err             error
}

func (e *UndecodableObjectError) Error() string {
	return message("%s: %v", e.Resource, e.Err) // Err names the object
}

func (e *UndecodableObjectError) Unwrap() error { return e.Err }

// UndecodableObjectsError is ReadyCheck's error for an informer with
// Options.FailReadinessOnUndecodable while objects of its resource cannot
// be decoded.
type UndecodableObjectsError struct {
	Resource string
	Objects  []*UndecodableObjectError
}

func (e *UndecodableObjectsError) Error() string {
	first := ""
	if len(e.Objects) > 0 {
		first = ", first " + e.Objects[0].Key.String() + ": " + e.Objects[0].Err.Error()
	}
	return message("%s: %s cannot be decoded%s", e.Resource, wording.Count(len(e.Objects), "object"), first)
}

// UndecodableTypeError says that most of the objects of an informer's
// resource cannot be decoded into its Go type at the same field: the
// mistake is the type's (or the view's), not the data's. The rule: at
// least two objects fail at one field path (array indexes aside:
// spec.containers[0].image and spec.containers[3].image are one field,
// spec.containers[*].image), and they are more than half of the objects
// the server has, as far as the informer knows (those cached and those
// that cannot be decoded and are not). Objects whose decoder did not say
// where it failed do not count.
//
// While the rule holds, WaitForSync of the informer returns this error once
// the cache has synced, ReadyCheck fails with it whatever
// Options.FailReadinessOnUndecodable says, and LastError returns it when
// no request failed since. It holds after the sync too, as soon as later
// writes make most objects undecodable, and stops holding as soon as
// enough of them are fixed or deleted. Each object is still contained as
// UndecodableObjectError says: the cache holds those that decode.
type UndecodableTypeError struct {
	// Resource names the informer's resource and Go type.
	Resource string
	// Type is the Go type, such as "*v1.Widget".
	Type string
	// Field is the JSON path of the field the objects fail at, array
	// indexes written [*], such as "spec.size".
	Field string
	// Failed is how many objects fail at Field.
	Failed int
	// Undecodable is how many objects cannot be decoded, at any field.
	Undecodable int
	// Objects is how many objects the server has, as far as the informer
	// knows.
	Objects int
	// First is the error of the first object, by namespace and name, that
	// fails at Field.
	First *UndecodableObjectError
}

func (e *UndecodableTypeError) Error() string {
	var b strings.Builder
	b.WriteString(message("%s: %d of %s cannot be decoded at %s: %s does not fit the resource", e.Resource, e.Failed, wording.Count(e.Objects, "object"), e.Field, e.Type))
	if e.First != nil {
		fmt.Fprintf(&b, "; first: %v", e.First.Err)
	}
	return b.String()
}

// Unwrap returns First.
func (e *UndecodableTypeError) Unwrap() error {
	if e.First == nil {
		return nil
	}
	return e.First
}

// isNil reports whether obj is a nil interface or a nil pointer.
func isNil[T any](obj T) bool {
	v := reflect.ValueOf(obj)
	return !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil()
}
