package informers

import (
	"context"
	"fmt"
	"time"

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

// Syncer is what WaitForSync waits for: an informer (AnyInformer, or
// *SharedInformer[T]), whose cache has synced once it holds the server's
// state as of a complete list and its watch is open; or a registration
// (AnyRegistration, or *Registration[T]), whose handler has synced once it
// has been delivered that state.
type Syncer interface {
	HasSynced() bool
	WaitForSync(ctx context.Context) error
}

// AnyInformer is a *SharedInformer[T] of any T, for code that handles
// informers of several types alike, such as Factory.Release. Only
// *SharedInformer[T] implements it.
type AnyInformer interface {
	fmt.Stringer
	Resource() schema.GroupVersionResource
	Run(ctx context.Context) error
	HasSynced() bool
	WaitForSync(ctx context.Context) error
	LastError() error
	Err() error
	Stopped() <-chan struct{}
	Name() string
	Stats() InformerStats

	// What a Factory does with informers of any type.
	stopUnstarted()
	free()
	busyHandlers() []string
	staleErr() error
	registrations() []Syncer
}

// AnyRegistration is a *Registration[T] of any T, for code that keeps the
// registrations of several informers together.
type AnyRegistration interface {
	fmt.Stringer
	Name() string
	HasSynced() bool
	WaitForSync(ctx context.Context) error
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
