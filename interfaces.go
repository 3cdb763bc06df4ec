package informers

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/kubetyped/informers/shard"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is the constraint on cached types: a pointer to a Kubernetes API
// type such as *corev1.Pod, *unstructured.Unstructured or
// *metav1.PartialObjectMetadata (a runtime.Object and a metav1.Object).
type Object interface {
	runtime.Object
	metav1.Object
}

// List is the constraint on list types: a runtime.Object with list
// metadata (metav1.ListInterface), such as *corev1.PodList.
type List interface {
	runtime.Object
	metav1.ListInterface
}

// IndexFunc returns the values under which an index files an object, such
// as the node name of a pod. Duplicates are ignored; nil or empty leaves
// the object out of the index.
type IndexFunc[T Object] func(T) []string

// AnyInformer is a *SharedInformer[T] of any T, for code that handles
// informers of several types alike, such as Factory.Release. Only
// *SharedInformer[T] implements it.
type AnyInformer interface {
	fmt.Stringer
	Resource() schema.GroupVersionResource
	Run(ctx context.Context) error
	HasSynced() bool
	Synced() <-chan struct{}
	LastError() error
	Err() error
	Stopped() <-chan struct{}
	Name() string
	Stats() InformerStats

	// What a Factory does with informers of any type.
	stopUnstarted()
	free()
	busyHandlers() []string
	unhealthy() error
	registrations() []Syncer
	waitForSync(ctx context.Context) error
	notReady() error
}

// AnyRegistration is a *Registration[T] of any T, for code that keeps the
// registrations of several informers together.
type AnyRegistration interface {
	fmt.Stringer
	Name() string
	HasSynced() bool
	Synced() <-chan struct{}
	Backlog() int
	Remove()
	Done() <-chan struct{}
	Err() error
}

// runner is a reflector with its list type erased.
type runner interface {
	Run(ctx context.Context)
	LastSyncResourceVersion() string
	UsesWatchList() bool
	SyncProgress() int
	LastEvent() time.Time
}

// isNil reports whether obj is a nil interface or a nil pointer.
func isNil[T any](obj T) bool {
	v := reflect.ValueOf(obj)
	return !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil()
}

// InformerStats is a snapshot of an informer's state, for gauges and
// status pages. Reading it takes no lock the informer's writer holds for
// long.
type InformerStats struct {
	// Objects is the number of objects cached.
	Objects int
	// ResourceVersion is the resource version the cache is at.
	ResourceVersion string
	// Synced reports whether the cache holds a complete list and a watch
	// follows it.
	Synced bool
	// WatchList reports whether the informer gets the server's state by
	// watch-list streaming rather than by listing.
	WatchList bool
	// SyncProgress is the number of objects the list or watch-list in
	// progress has received, or, between them, the last one did.
	SyncProgress int
	// InitialSync is how long the first sync took, from Run; 0 before.
	InitialSync time.Duration
	// LastEvent is when the last list, watch event or bookmark was
	// applied: time.Since(LastEvent) is how stale the cache may be. It is
	// kept only for informers with Metrics; zero before.
	LastEvent time.Time
	// Staleness is how far the cache lags the server, measured now, for
	// an informer with a staleness monitor (Options.Staleness); zero
	// otherwise.
	Staleness Staleness
	// Undecodable is the number of objects the server has that cannot be
	// decoded into the informer's Go type (see UndecodableObjectError).
	Undecodable int
	// Shard is the shard of a sharded informer (Options.Shard), with
	// whether the server or the client filters it; its Filter is
	// shard.FilterNone for an informer that is not sharded.
	Shard shard.Status
}
