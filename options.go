package informers

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/shard"
)

// Options configures one informer, the same way for both entry points:
// InformerWith, which asks a Factory for it, and NewInformer, which builds
// it over a ListWatch. Its Tuning overrides the factory's, setting by
// setting. The zero value is valid.
//
// Through a Factory, Resource (or T's kind), the namespace settings of
// Tuning, the selectors, Shard and whether T is typed,
// *unstructured.Unstructured, *metav1.PartialObjectMetadata or a view
// (see ViewMeta; each view type its own) tell informers apart: asking
// twice with the same ones returns the same informer. A later request may
// add Indexers. One that asks for the resource as another typed Go type,
// or sets another Transform or other SkipFields, conflicts, as do the
// Tuning settings that say so: the informer it returns carries the error
// (see Informer). The other fields of a later request are ignored.
type Options[T Object] struct {
	Tuning
	// LabelSelector and FieldSelector restrict what is listed, watched and
	// cached, in the syntax of metav1.ListOptions. Equivalent spellings
	// name the same informer.
	LabelSelector, FieldSelector string
	// Resource is the informer's resource. It is required for
	// *unstructured.Unstructured (a dynamic informer),
	// *metav1.PartialObjectMetadata (a metadata-only informer) and views
	// (see ViewMeta); otherwise it is derived from T's kind. It names the
	// informer in errors and logs and sets the GroupResource of NotFound
	// errors from listers.
	Resource schema.GroupVersionResource
	// Indexers are indexes to create before the informer starts. The name
	// "namespace" is taken by the built-in namespace index.
	Indexers map[string]IndexFunc[T]
	// Transform, if set, changes each object before it is stored and
	// handed to handlers; it runs after StripManagedFields. For the other
	// ways to keep less, see the table "When to use which" in docs/memory.md.
	Transform TransformFunc[T]
	// SkipFields names fields the informer never decodes, by their JSON
	// paths: "metadata.managedFields", "status.conditions",
	// "spec.containers.env" (a path goes through lists and inline
	// structs). They read as zero values in the cache and in handlers,
	// and cost neither time nor memory. The library's decoder skips them;
	// objects it does not decode (a ListWatch of decoded objects,
	// DisableDecoder) have them cleared before they are cached. It
	// applies to built-in types, *metav1.PartialObjectMetadata, custom
	// resources with a Go type (paths checked against its json names) and
	// *unstructured.Unstructured (paths not checked: removed once
	// decoded). The name, namespace, UID and resource version of the
	// metadata cannot be skipped; everything that reads a skipped field
	// (an index, a transform, a selector on it) sees it empty. See the
	// table "When to use which" in docs/memory.md. Fields that leave
	// nothing but "metadata" (and "kind" and "apiVersion") make a
	// Factory's informer ask the server for the objects' metadata alone
	// (as=PartialObjectMetadata), so that the rest is not even sent.
	SkipFields []string
	// FailReadinessOnUndecodable makes ReadyCheck fail, with an
	// *UndecodableObjectsError, while the server has objects of the
	// resource that cannot be decoded into T. By default one tenant's bad
	// object does not make a controller unready: every other object is
	// cached, the bad one is named (UndecodableObjectError) and counted
	// (InformerStats.Undecodable). Most objects failing at the same field
	// fail readiness with or without it (UndecodableTypeError).
	FailReadinessOnUndecodable bool
	// WaitForResource makes WaitForSync wait for a resource that is not
	// served yet (a custom resource whose definition is not installed),
	// saying it is waiting for it, instead of failing at once with the
	// 404 that names it. Either way the informer asks again for such a
	// resource every second (with this option, every 500 ms) rather than
	// backing off, so it syncs within about two seconds of a CRD being
	// established.
	WaitForResource bool
	// Shard, if set, caches only the objects whose field hashes into its
	// ranges: the informer sends the shard selector on every list and
	// watch, and filters on the client too, with the same hash, since a
	// server without the ShardedListAndWatch feature gate ignores it; see
	// SharedInformer.Shard for which filter is in effect. A sharded
	// informer lists rather than streams its initial state (list responses
	// tell whether the server filtered) and can be re-scoped with
	// SetShardRanges. A Shard with no ranges caches nothing. Through a
	// Factory, the shard as first given tells informers apart.
	Shard *shard.Shard
	// Name names the informer in metrics and logs. "" means its resource,
	// with its namespace and selectors if it has any, as in
	// "pods.v1 namespace=shop labels=app=web".
	Name string
}

// FactoryOptions configures a Factory: how it reaches the server, and,
// in its Tuning, the defaults of its informers, which their Options
// override setting by setting. The zero value is valid.
type FactoryOptions struct {
	Tuning
	// Tweak edits the options of every list and watch request.
	Tweak func(*metav1.ListOptions)
	// Scheme maps Go types to kinds, in addition to client-go's scheme of
	// built-in types, which serves every type Scheme does not register.
	// Types outside client-go's scheme (custom resources) need RESTConfig.
	Scheme *runtime.Scheme
	// RESTConfig, if set, is used to reach the server instead of the
	// clientset, for every typed informer, and to create the dynamic and
	// metadata clients that Dynamic and Metadata informers need.
	RESTConfig *rest.Config
	// Dynamic and Metadata override the clients made from RESTConfig, for
	// example with client-go's fakes.
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// Server, if set, serves the list and watch requests of every typed
	// informer instead of a Kubernetes API server: in tests, an
	// informerstest.Cluster, whose sources have resource versions,
	// compaction, closing watches and injected failures.
	Server Server
	// MaxConcurrentLists, if positive, bounds how many of the factory's
	// informers list at once (or stream a watch-list's initial events):
	// a controller that starts 40 informers does not send the control
	// plane 40 lists together, and relists after an API server restart
	// queue up the same way. Informers get their turn in request order.
	MaxConcurrentLists int
	// ShutdownGracePeriod bounds how long Shutdown and Release wait for
	// handlers to return when their context has already ended; 0 means 30
	// seconds.
	ShutdownGracePeriod time.Duration
	// Decoders, if set, shares the library's decoders with the other
	// factories that set the same Decoders (see Decoders).
	Decoders *Decoders
}

// Server serves list and watch requests for any resource, in place of a
// Kubernetes API server; see FactoryOptions.Server. List returns a list
// object of the resource's list type (*corev1.PodList for pods), and Watch
// a watch whose events carry objects of its Go type. Namespace "" means
// all namespaces. A resource it does not serve is a 404 Not Found.
type Server interface {
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}
