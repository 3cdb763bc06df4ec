package informers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers/internal/store"
)

// KeyOf returns the key of obj that controllers queue and listers look up:
// its namespace ("" when cluster-scoped) and name.
func KeyOf(obj metav1.Object) types.NamespacedName { return store.KeyOf(obj) }

// Enqueue returns a handler that adds the key of every object added,
// updated or deleted to q, for a controller that reconciles T itself:
//
//	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
//	_, err := deployments.AddHandler(informers.Enqueue[*appsv1.Deployment](queue))
func Enqueue[T Object](q workqueue.TypedInterface[types.NamespacedName]) Handler[T] {
	return EnqueueMapped(q, func(obj T) []types.NamespacedName {
		return []types.NamespacedName{KeyOf(obj)}
	})
}

// EnqueueOwner returns a handler that adds to q the key of the controller
// owner of every object added, updated or deleted, if that owner is of
// kind owner: a Deployment controller enqueues the Deployment of each
// ReplicaSet that changes. On an update whose controller changed, both
// owners are enqueued.
func EnqueueOwner[T Object](q workqueue.TypedInterface[types.NamespacedName], owner schema.GroupKind) Handler[T] {
	return EnqueueMapped(q, func(obj T) []types.NamespacedName {
		key, ok := ControllerOf(obj, owner)
		if !ok {
			return nil
		}
		return []types.NamespacedName{key}
	})
}

// EnqueueMapped returns a handler that adds to q the keys that keys maps
// every object added, updated or deleted to; on an update, those of the
// old and of the new object, so that a key the object no longer maps to
// is reconciled too. Keys may be of any comparable type.
func EnqueueMapped[T Object, K comparable](q workqueue.TypedInterface[K], keys func(T) []K) Handler[T] {
	add := func(obj T) {
		for _, k := range keys(obj) {
			q.Add(k)
		}
	}
	return HandlerFuncs[T]{
		OnAdd: func(obj T, _ bool) { add(obj) },
		OnUpdate: func(oldObj, newObj T) {
			add(oldObj) // the queue merges a key added twice
			add(newObj)
		},
		OnDelete: func(d Deleted[T]) { add(d.Object) },
	}
}
