// Package controllerruntime runs controller-runtime's managers and
// controllers on the informers of github.com/kubetyped/informers.
//
// NewCache is a cache.NewCacheFunc: set it as the manager's NewCache and
// the manager's cache, its client's reads and its controllers' watches run
// on our engine, with the manager's cache.Options (namespaces, selectors,
// transforms, ByObject, deep copies on read unless turned off):
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		NewCache: controllerruntime.NewCache, // the one line
//	})
//
// NewCacheWithOptions adds what cache.Options has no field for: a
// namespace selector that follows namespace labels while the cache runs
// (Options.NamespaceSelector), how objects are decoded, and views
// (Options.Views).
//
// A view is a struct of the fields of a resource a controller reads (see
// the informers package's ViewMeta), which the cache decodes each object
// straight into, so that it holds only those. Being a client.Object of
// its own, a view is registered in the manager's scheme under a kind of
// its own, which no server serves, with its list type, and Options.Views
// maps it to the resource it views:
//
//	scheme.AddKnownTypeWithName(viewsGV.WithKind("PodView"), &PodView{})
//	scheme.AddKnownTypeWithName(viewsGV.WithKind("PodViewList"), &PodViewList{})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Scheme: scheme,
//		NewCache: controllerruntime.NewCacheWithOptions(controllerruntime.Options{
//			Views: map[client.Object]schema.GroupVersionResource{&PodView{}: corev1.SchemeGroupVersion.WithResource("pods")},
//		}),
//	})
//
// Get, List, GetInformer and controllers' watches then serve the view as
// any type. Never write a view back: an update made from one drops every
// field it omits; patch the fields you own instead.
//
// Source feeds a controller's work queue from a typed informer of ours,
// for builder.WatchesRawSource.
//
// The package is a Go module of its own, so that the library's go.mod does
// not carry controller-runtime.
package controllerruntime
