package clientgo

import (
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
)

// Handler adapts a client-go event handler to a Handler of T. Deletes are
// delivered as client-go delivers them: the object, or, when the deletion
// was found by a relist rather than seen on the watch, a
// cache.DeletedFinalStateUnknown holding the last state the cache knew,
// under the key cache.MetaNamespaceKeyFunc gives.
func Handler[T informers.Object](h cache.ResourceEventHandler) informers.Handler[T] {
	return handler[T]{h}
}

type handler[T informers.Object] struct{ h cache.ResourceEventHandler }

func (a handler[T]) HandleAdd(obj T, isInInitialList bool) { a.h.OnAdd(obj, isInInitialList) }
func (a handler[T]) HandleUpdate(oldObj, newObj T)         { a.h.OnUpdate(oldObj, newObj) }
func (a handler[T]) HandleDelete(d informers.Deleted[T]) {
	if d.FinalStateUnknown {
		a.h.OnDelete(cache.DeletedFinalStateUnknown{Key: storeKey(d.Key.Namespace, d.Key.Name), Obj: d.Object})
		return
	}
	a.h.OnDelete(d.Object)
}

// AddEventHandler registers a client-go event handler on inf:
//
//	reg, err := clientgo.AddEventHandler(pods, cache.ResourceEventHandlerFuncs{AddFunc: ..., DeleteFunc: ...})
//
// With handler options, register Handler[T](h) with inf.AddHandlerWith.
func AddEventHandler[T informers.Object](inf *informers.SharedInformer[T], h cache.ResourceEventHandler) (*informers.Registration[T], error) {
	return inf.AddHandler(Handler[T](h))
}

// storeKey is client-go's key of an object: "namespace/name", or "name"
// for a cluster-scoped object.
func storeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
