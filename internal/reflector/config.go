// Package reflector keeps a sink in step with the server: it lists, then
// watches, and relists when it must, with client-go's reflector semantics
// (paged lists, resource version "0" first; after a watch's 410, a relist
// not older than the last version, and from "" once that version turns
// out unavailable; bookmarks, watch timeouts, watch-list streaming,
// backoff with jitter).
//
// It is generic in the object type T and the list type L, and pushes typed
// objects into a Sink on its own goroutine: no queue sits between the watch
// stream and the cache.
package reflector

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// List is the constraint on list types: a runtime.Object with list metadata,
// such as *corev1.PodList or *unstructured.UnstructuredList.
type List interface {
	runtime.Object
	metav1.ListInterface
}

// Object is the constraint on object types.
type Object interface {
	runtime.Object
	metav1.Object
}

// Sink receives what the reflector learns, one call at a time, in order:
// each call returns before the next is made, though not always on the
// same goroutine (a streamed list's items may be put from a goroutine of
// the decoder's).
type Sink[T any] interface {
	// StartList says a list begins; the objects it holds follow as Put
	// calls from FromList or FromInitialEvents, then FinishList.
	StartList()
	// Put stores an object from a list or from a watch event.
	Put(obj T, from Origin)
	// Delete removes an object reported deleted by the watch.
	Delete(obj T)
	// FinishList says the list is complete: stored objects it did not
	// contain are gone from the server.
	FinishList()
	// Watching says a watch runs after a completed list: the cache is
	// synced with the server.
	Watching()
	// Undecodable says the server sent an object, in a list or an event,
	// that could not be decoded into T; deleted says the event was its
	// delete. The object exists on the server (unless deleted): the sink
	// keeps what it holds of it, and a list that did not decode it does
	// not make it gone.
	Undecodable(u Undecodable, deleted bool)
	// Flush says no further change is at hand: the reflector is about to
	// wait for the server, or has applied a long run of changes. The sink
	// may hold back work, such as waking handlers, until then.
	Flush()
}

// Undecodable is an object that a decoder could not decode into the
// reflector's T, carried by a watch event in place of T, or listed beside
// a list's items by a list that implements UndecodableItems. Its metadata
// was decoded, so that it can be named, and its delete still finds its
// key.
type Undecodable interface {
	// Error names the object, its uid and resource version, where its
	// decoding failed and why.
	error
	// Identity returns what the object's metadata says.
	Identity() (namespace, name string, uid types.UID, resourceVersion string)
}

// UndecodableItems is implemented by lists that decoded some items and
// not others: the items are the list's, the others these.
type UndecodableItems interface {
	UndecodableItems() []Undecodable
}

// ListItems receives the items of a list page as Config.ListStream reads
// them, in the order of the list, on the reflector's goroutine.
type ListItems interface {
	// Put takes an item, allocated on its own: the sink may keep it as
	// it is (FromOwnedListItem). An item that is not the reflector's T
	// is reported to Config.OnError and left out.
	Put(obj runtime.Object)
	// Undecodable takes an item that did not decode into T.
	Undecodable(u Undecodable)
}

// Origin says where an object given to Sink.Put comes from.
type Origin uint8

// The origins of objects.
const (
	// FromList is an item of a list page. It points into the page's item
	// array: a sink that keeps it must copy it out, or the whole array
	// stays reachable for as long as the item is kept.
	FromList Origin = iota + 1
	// FromInitialEvents is an object of a watch-list stream's initial
	// events, allocated on its own.
	FromInitialEvents
	// FromAdded is an Added watch event.
	FromAdded
	// FromModified is a Modified watch event: the object is in the cache,
	// with the same UID.
	FromModified
	// FromOwnedListItem is an item of a list page whose items are
	// allocated each on its own (see OwnedItems): a sink may keep it as
	// it is.
	FromOwnedListItem
)

// OwnedItems is implemented by lists whose items are allocated each on its
// own, apart from the list, such as those the library's decoder makes.
type OwnedItems[T any] interface {
	OwnedItems() []T
}

// Op names the request that failed, in errors passed to Config.OnError.
type Op string

// The requests a reflector makes.
const (
	OpList      Op = "list"
	OpWatch     Op = "watch"
	OpWatchList Op = "watch-list"
	OpDecode    Op = "decode"
)

// Limiter hands out permits, such as a *semaphore.Weighted.
type Limiter interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// Config describes what to list and watch and how.
type Config[L List] struct {
	// Description names the watched resource in logs and errors.
	Description string
	// List lists objects; it is called with Limit/Continue for pages.
	List func(context.Context, metav1.ListOptions) (L, error)
	// ListStream, if set, lists as List does, but hands each item of a
	// page to items as the response is read, and returns the page's
	// metadata once the response is read to its end. The reflector then
	// lists with it, page after page, and holds no page whole: it neither
	// keeps a decoded page nor fetches the next one ahead. A page that
	// fails part-way leaves the items it handed over in the sink until a
	// list completes, as a list that fails after some pages does.
	ListStream func(ctx context.Context, opts metav1.ListOptions, items ListItems) (metav1.ListMeta, error)
	// Watch starts a watch.
	Watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	// WatchList enables watch-list streaming (sendInitialEvents) for the
	// server's state, where client-go's WatchListClient feature gate is on
	// too, as client-go's reflector reads it
	// (k8s.io/client-go/features.FeatureGates()): with
	// KUBE_FEATURE_WatchListClient=false in the environment, or the gate
	// turned off in a binary's own feature gates, the reflector never
	// streams. It lists instead for good once the server refuses
	// streaming, and for one sync when the streams do not deliver their
	// initial events: two streams closed before the bookmark that ends
	// them, or one that goes quiet without it for a few seconds or sends
	// a bookmark without its annotation; after such a sync, each relist
	// tries one stream first (see Reflector.UsesWatchList).
	WatchList bool
	// PageSize, if positive, pages every list by that many objects. 0 pages
	// by 500 lists that the watch cache cannot serve whole (at "" or "0",
	// or once a list at "0" came back paged) and does not page lists at a
	// given version, as client-go does.
	PageSize int64
	// Backoff sets the retry delays after failures; nil means client-go's
	// (0.8s doubling to 30s, jitter 1.0, reset after 2 minutes quiet).
	Backoff *wait.Backoff
	// MinWatchTimeout is the shortest server-side watch timeout; each watch
	// asks for a random timeout between it and twice it. It is used as
	// given: the informer's configuration sets its default and floor.
	MinWatchTimeout time.Duration
	// ListLimiter, if set, bounds how many reflectors list (or stream a
	// watch-list's initial events) at once: each holds one permit while it
	// gets the server's state, retries included.
	ListLimiter Limiter
	// NotServedRetry, if positive, is how soon to retry after a list
	// failed with 404 Not Found, the resource not being served (a custom
	// resource whose definition is not installed yet), instead of backing
	// off: the informer starts soon after the resource appears.
	NotServedRetry time.Duration
	// ResourceVersion, if set, is the version the sink is at already: the
	// first list is at it rather than at "0", so that a reflector that
	// takes over a sink from another, with other selectors, does not go
	// back in time.
	ResourceVersion string
	// Version, if set, is where the reflector publishes the version its
	// sink is at; nil means a Version of its own.
	Version *Version
	// Clock tells time for backoff, timeouts and the watch-list fallback
	// (how long a stream may go without the end of its initial events);
	// nil means the real clock.
	Clock clock.WithTicker
	// OnError is told about every failed request and bad event.
	OnError func(op Op, err error)
	// OnSuccess is told when a list or watch request succeeds, so that a
	// remembered error can be cleared.
	OnSuccess func(op Op)
	// Observer, if set, is told what the reflector does, for metrics.
	Observer Observer
	// Logger logs; the zero value means klog's background logger.
	Logger klog.Logger
}

// Observer is told what a reflector does, on its goroutine; failures go
// to Config.OnError. Its methods must return quickly.
type Observer interface {
	// Request is told of each list page, watch and watch-list request,
	// before it is sent.
	Request(op Op)
	// Relist is told that the reflector gets the server's state again,
	// after it had it once, and why: see the Relist reasons.
	Relist(reason string)
	// Synced is told that a list (OpList) or a watch-list's initial
	// events (OpWatchList) brought the sink in step with the server, and
	// how long that took; initial marks the first time.
	Synced(op Op, took time.Duration, initial bool)
}

// The reasons passed to Observer.Relist.
const (
	// RelistExpired: the resource version was compacted away (410 Gone).
	RelistExpired = "expired"
	// RelistTooLarge: the server had not reached the resource version.
	RelistTooLarge = "too-large-resource-version"
	// RelistWatchEnded: a watch failed otherwise, or one from the current
	// state was cut before it had sent it.
	RelistWatchEnded = "watch-error"
	// RelistRetry: the previous list or watch-list failed.
	RelistRetry = "retry"
)
