// Package fleet runs typed informers over many clusters as one cache.
//
// A Fleet holds clusters attached and detached at runtime by name, each
// served by its own informers.Factory; Informer[T] gives the fleet's
// informer of objects of type T, which runs on every cluster, those
// attached later too. Its lister and indexes read all clusters at once,
// keyed by cluster, namespace and name, or one cluster through Cluster;
// its handlers receive the cluster of each event:
//
//	fl := fleet.New(fleet.Options{})
//	pods := fleet.Informer[*corev1.Pod](fl)
//	pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{
//		OnAdd: func(cluster string, p *corev1.Pod, initial bool) { ... },
//	})
//	fl.Attach(ctx, "east", fleet.Cluster{RESTConfig: east})
//	fl.Attach(ctx, "west", fleet.Cluster{RESTConfig: west})
//	err := informers.WaitForSync(ctx, fl) // a *SyncError naming each cluster that failed, and why
//
// Failures stay in their cluster: a cluster that refuses a list (403
// Forbidden, a missing resource) or cannot be reached does not hold up the
// others' sync, each cluster's handlers run in their own goroutines, and
// detaching a cluster stops its informers and frees its cache. The
// factories of one fleet share the library's decoders (see
// informers.Decoders), so that what several clusters hold alike is kept
// once. Providers attach clusters from where they are declared:
// kubeconfig files (Static) or kubeconfig Secrets in a hub cluster
// (Secrets).
package fleet
