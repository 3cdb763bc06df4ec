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

// Syncer is what WaitForSync waits for and ReadyCheck asks about: a
// *Factory, whose informers have synced; an informer (*SharedInformer[T],
// AnyInformer), whose cache has synced once it holds the server's state as
// of a complete list and its watch is open; a registration
// (*Registration[T], AnyRegistration), whose handler has synced once it
// has been delivered that state; or the fleet package's informers,
// registrations and fleet. Synced is closed once the syncer has synced.
// Any other type with such a channel is a Syncer too: WaitForSync waits on
// its channel, and ReadyCheck asks whether it is closed.
type Syncer interface {
	Synced() <-chan struct{}
}

// AnyInformer is a *SharedInformer[T] of any T, for code that handles
// informers of several types alike, such as Factory.Release. Only
// *SharedInformer[T] implements it: its unexported methods are what a
// Factory, WaitForSync and ReadyCheck do with informers of any type, and a
// stand-in would have to fake the cache, the handlers and the sync they
// rely on. To test code that takes one, run a real informer over fake
// objects: a clientset from k8s.io/client-go/kubernetes/fake, or the
// package informerstest, an in-memory server with paging, watches, errors
// and counts of requests. To wait for or check something of your own, a
// Syncer is one method.
type AnyInformer interface {
	fmt.Stringer
	Resource() schema.GroupVersionResource
	Run(ctx context.Context) error
	HasSynced() bool
	Synced() <-chan struct{}
	LastError() error
	Stopped() <-chan struct{}
	Name() string
	Stats() InformerStats

	// What a Factory does with informers of any type.
	stopUnstarted()
	free()
	busyHandlers() []string
	unhealthy() error
	undecodableType() error
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
