// Package informers is a generics-first replacement for client-go's
// informers: a typed cache of Kubernetes objects kept in step with the API
// server by list and watch, with typed handlers, listers and indexes. The
// store, the reflector and the handler dispatch are generic in the object
// type T, so reads need no type assertion and events are not boxed.
//
//	f := informers.NewFactory(clientset)
//	pods := informers.Informer[*corev1.Pod](f)
//	reg, err := pods.AddHandler(informers.Enqueue[*corev1.Pod](queue))
//	if err != nil { ... }
//	f.Start(ctx)
//	if err := informers.WaitForSync(ctx, pods, reg); err != nil { ... }
//	p, err := pods.Lister().Namespace("default").Get("web-0") // p is a *corev1.Pod
//
// A [Factory], made by [NewFactory] or [NewFactoryWith], shares one
// [SharedInformer] per resource, namespace and selectors. [Informer] returns
// the informer of T, whose resource it finds through the scheme;
// [InformerWith] takes [Options] as well: a namespace, selectors, a
// transform, indexes, or the Resource of a dynamic
// (*unstructured.Unstructured) or metadata-only
// (*metav1.PartialObjectMetadata) informer. Neither panics: an informer that
// cannot be served carries the error, returned by its LastError, AddHandler and
// [WaitForSync]. Informers requested after Start start at once;
// [Factory.Release] stops one and [Factory.Shutdown] stops them all. Without a
// factory, [NewInformer] runs one informer, configured by the same Options,
// over a [ListWatch] from [FromClient] or [NewListWatch].
//
// [SharedInformer.AddHandler] registers a [Handler], such as [HandlerFuncs],
// and returns its [Registration]. Each handler has its own goroutine and
// queue, so a slow handler delays only itself; a delete arrives as a
// [Deleted] holding a T, with no tombstone to unwrap. [Enqueue],
// [EnqueueOwner] and [EnqueueMapped] are handlers that add keys ([KeyOf]) to
// a client-go workqueue.
//
// [SharedInformer.Lister] reads the cache through a [Lister]: List, Get,
// Namespace, ByIndex, and the iterators All and Select.
// [SharedInformer.AddIndex] adds an [Index], before or after start.
// [WaitForSync] waits for a factory, informers and registrations together
// (each a [Syncer]), and [ReadyCheck] is their readiness check. It needs no
// timeout to report a failure: it returns once each has synced or failed
// in a way that needs a fix on the server (a 403, a missing CRD), with a
// [NotSyncedError] that says why.
//
// A controller that reads right after it writes uses a [Tracker]: it
// records the controller's own writes and makes the next read wait until
// the cache shows them ([SharedInformer.WaitForVersion] waits for any
// version). [StalenessOptions] turns on a monitor of how far a cache lags
// the server, in metrics and readiness ([ReadyCheck]).
//
// Built-in types and metadata-only objects are decoded by the library's own
// protobuf decoder, which shares equal strings and parts between cached
// objects as it decodes: a cache of pods takes about a quarter of
// client-go's memory; custom resources, and built-in types the server
// answers in JSON, by its JSON decoder, which shares alike.
// [Options].SkipFields names fields never decoded;
// [Options].DisableDecoder turns the decoder off.
//
// Package [github.com/kubetyped/informers/informerstest] tests controllers
// without a server: its Source is an in-memory API for one resource, for
// NewInformer, and its Cluster serves several to a Factory through
// [FactoryOptions].Server.
//
// Objects handed out by informers, listers and handlers are shared with the
// cache. Treat them as read-only; DeepCopy before modifying.
package informers
