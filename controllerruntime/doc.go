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
// (Options.NamespaceSelector), and how objects are decoded.
//
// Source feeds a controller's work queue from a typed informer of ours,
// for builder.WatchesRawSource.
//
// The package is a Go module of its own, so that the library's go.mod does
// not carry controller-runtime.
package controllerruntime
