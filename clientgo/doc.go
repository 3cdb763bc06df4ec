// Package clientgo connects the informers of github.com/kubetyped/informers
// to code written for client-go's tools/cache: the one package of the
// library, beside its benchmarks, that imports it.
//
//   - Handler and AddEventHandler register a cache.ResourceEventHandler on
//     a SharedInformer; deletes arrive as client-go delivers them, the
//     object or a cache.DeletedFinalStateUnknown.
//   - SharedIndexInformer returns a read-only cache.SharedIndexInformer
//     view of a SharedInformer, for cache.WaitForCacheSync, generated
//     listers (over its GetIndexer) and any code that takes an informer.
//   - DynamicFactory is a dynamicinformer.DynamicSharedInformerFactory
//     over a Factory: unstructured informers by resource, decoded in one
//     pass by the library's JSON decoder.
//   - FromListerWatcher turns a cache.ListerWatcher into a ListWatch.
//
// The switch in a client-go controller is one line: where it took an
// informer from a client-go factory, it takes the view of ours.
//
//	podInformer := clientgo.SharedIndexInformer(informers.Informer[*corev1.Pod](factory))
package clientgo
