package informers

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/shard"
)

// Options configures one informer, the same way for both entry points:
// InformerWith, which asks a Factory for it, and NewInformer, which builds
// it over a ListWatch. The zero value is valid.
//
// Through a Factory, Resource (or T's kind), Namespace, the selectors
// (NamespaceSelector with its NamespaceMode included), Shard and whether T
// is typed, *unstructured.Unstructured, *metav1.PartialObjectMetadata or a
// view (see ViewMeta; each view type its own) tell informers apart: asking twice with the same ones returns the same
// informer. The other fields are those of the request that created it. A
// later request may add Indexers. One that asks for the resource as
// another typed Go type, or sets another Transform, another non-zero
// ResyncPeriod, other SkipFields, DisableDecoder on an informer made
// without it, or DisableWatchList on one that streams, conflicts: the
// informer it returns carries the error (see Informer). Any other field of
// a later request is ignored, with no error: Intern, WaitForResource,
// Staleness, Metrics, Name and the tuning fields. Zero tuning fields (OnError, Backoff,
// MinWatchTimeout, PageSize) take the factory's.
type Options[T Object] struct {
	// Namespace limits the informer to one namespace; "" means the
	// factory's (all namespaces by default). NewInformer takes its
	// namespace from its ListWatch and rejects this field.
	Namespace string
	// LabelSelector and FieldSelector restrict what is listed, watched and
	// cached, in the syntax of metav1.ListOptions. Equivalent spellings
	// name the same informer.
	LabelSelector, FieldSelector string
	// NamespaceSelector, a label selector on Namespace objects in the
	// syntax of metav1.ListOptions ("team=a"), limits the informer to the
	// objects of the namespaces it selects, as their labels change while
	// it runs: a namespace that enters brings its objects as adds, one
	// that leaves takes them away as deletes with Deleted.LeftNamespace
	// set, and the cache never holds the objects of other namespaces. It
	// combines with the other selectors, a namespace, Shard, Transform and
	// Intern. "" means the factory's; NewInformer rejects it
	// (NewNamespaceSelectedInformer takes it, outside a Factory). The factory
	// follows namespaces with its Namespace informer (which it starts with
	// the others), and the informer watches the resource as
	// NamespaceMode says; see docs/namespaces.md. Through a Factory it
	// tells informers apart.
	NamespaceSelector string
	// NamespaceMode says how an informer with a NamespaceSelector watches:
	// one list+watch per selected namespace, one cluster-wide watch
	// filtered on the client, or (the zero value, NamespaceModeAuto)
	// whichever suits the selection. Zero means the factory's. Through a
	// Factory it tells informers apart.
	NamespaceMode NamespaceMode
	// SchemaCheck says whether a view is checked against the type it
	// projects (see SchemaCheck). Zero means the factory's.
	SchemaCheck SchemaCheck
	// Resource is the informer's resource. It is required for
	// *unstructured.Unstructured (a dynamic informer),
	// *metav1.PartialObjectMetadata (a metadata-only informer) and views
	// (see ViewMeta); otherwise it is derived from T's kind. It names the informer in errors and
	// logs and sets the GroupResource of NotFound errors from listers.
	Resource schema.GroupVersionResource
	// ResyncPeriod is the default resync period of handlers: every period,
	// each handler receives the whole cache as updates. 0 means the
	// factory's, or never.
	ResyncPeriod time.Duration
	// Indexers are indexes to create before the informer starts. The name
	// "namespace" is taken by the built-in namespace index.
	Indexers map[string]IndexFunc[T]
	// Transform, if set, changes each object before it is stored and
	// handed to handlers; it runs after the factory's StripManagedFields.
	Transform TransformFunc[T]
	// Intern makes each object the informer caches share its strings and
	// its read-only parts (labels, containers, volumes, owner
	// references...) with equal ones of the objects cached before, after
	// they are decoded: for the objects the library's decoders do not
	// decode (a ListWatch of decoded objects, DisableDecoder), since the
	// decoders share as they decode (built-in types from protobuf,
	// custom resources and built-in types from JSON) and Intern then adds
	// nothing. It does nothing for *unstructured.Unstructured, whose
	// values are interface{}. It costs time on the event path (an
	// initial sync takes 15-45% longer, an update about 3 µs more); see
	// docs/memory.md. Cached objects are read-only either way.
	Intern bool
	// SkipFields names fields the informer never decodes, by their JSON
	// paths: "metadata.managedFields", "status.conditions",
	// "spec.containers.env" (a path goes through lists and inline
	// structs). They read as zero values in the cache and in handlers,
	// and cost neither time nor memory: the generic answer to hand-written
	// slim types. The library's decoder skips them; objects it does not
	// decode (a ListWatch of decoded objects, DisableDecoder) have them cleared
	// before they are cached. It applies to built-in types,
	// *metav1.PartialObjectMetadata, custom resources with a Go type
	// (paths checked against its json names) and *unstructured.Unstructured
	// (paths not checked: removed once decoded). The name, namespace, UID and
	// resource version of the metadata cannot be skipped; everything that
	// reads a skipped field (an index, a transform, a selector on it) sees
	// it empty. Fields that leave nothing but "metadata" (and "kind" and
	// "apiVersion") make a Factory's informer ask the server for the
	// objects' metadata alone (as=PartialObjectMetadata), so that the
	// rest is not even sent. See docs/memory.md.
	SkipFields []string
	// DisableDecoder turns off the library's decoders, which decode the
	// protobuf of built-in types and of metadata-only informers (their
	// JSON too, when the server answers in JSON), and the JSON of custom
	// resources and of *unstructured.Unstructured, through a Factory,
	// sharing equal strings and parts (labels, containers, volumes, owner
	// references) between cached objects as they decode:
	// objects are then decoded by client-go's codecs and the generated
	// code, as client-go decodes them, and share nothing unless Intern is
	// set. Cached objects are read-only either way.
	DisableDecoder bool
	// DisableWatchList makes an informer of a Factory sync by listing in
	// pages, then watching, instead of by a watch-list stream (the
	// default where the server offers it): for a user who measured that
	// lists suit the server or the client better. Through a Factory it
	// does not tell informers apart: the request that creates the informer
	// decides, and a later request that sets it for an informer made
	// streaming conflicts (see Informer). To have every informer of a
	// factory list, set FactoryOptions.DisableWatchList. NewInformer's
	// sources choose with ListWatch.DisableWatchList. client-go's switch,
	// its WatchListClient feature gate (KUBE_FEATURE_WatchListClient=false
	// in the environment), turns streaming off for every informer too.
	DisableWatchList bool
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
	// established (one and a half with this option): the time until it
	// asks again, plus up to a second when the API server is still
	// building the new resource's watch cache, which it says with a 429
	// and Retry-After: 1 that client-go's REST client waits out.
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

	// OnError, if set, receives every error the informer meets: failed
	// requests (*ListWatchError), objects the server has that cannot be
	// decoded into T (*UndecodableObjectError, once per version of the
	// object), panicking handlers (*HandlerPanicError), transforms
	// (*TransformError) and index functions (*IndexError).
	// It must return quickly. If nil, errors are logged.
	OnError func(error)
	// Backoff sets the delays between retries after failures; nil means
	// client-go's (0.8s doubling to 30s with jitter, reset after 2 minutes).
	Backoff *wait.Backoff
	// MinWatchTimeout is the shortest server-side watch timeout, at least 5
	// minutes, as in client-go, to spare the control plane reconnections;
	// shorter values are raised to it. Each watch asks for a random
	// timeout between it and twice it.
	MinWatchTimeout time.Duration
	// PageSize, if positive, pages every list by that many objects. 0 pages
	// by 500 the lists that the API server's watch cache cannot serve
	// whole, and leaves a relist at a known version in one piece, so that
	// the watch cache serves it, as client-go does.
	PageSize int64
	// Metrics, if set, receives the informer's and its handlers'
	// measurements; nil means the factory's, or none.
	Metrics Metrics
	// Staleness, if set, runs a staleness monitor that measures how far
	// the cache lags the server (see StalenessOptions); nil means the
	// factory's, or none.
	Staleness *StalenessOptions
	// Name names the informer in metrics and logs. "" means its resource,
	// with its namespace and selectors if it has any, as in
	// "pods.v1 namespace=shop labels=app=web".
	Name string
}

// FactoryOptions configures a Factory: how it reaches the server, and the
// defaults of its informers' Options. The zero value is valid.
type FactoryOptions struct {
	// Namespace limits every namespaced informer to one namespace; ""
	// means all. Options.Namespace overrides it per informer.
	Namespace string
	// NamespaceSelector is the default of Options.NamespaceSelector for
	// namespaced informers: a label selector on Namespace objects.
	NamespaceSelector string
	// NamespaceMode is the default of Options.NamespaceMode.
	NamespaceMode NamespaceMode
	// SchemaCheck is the default of Options.SchemaCheck.
	SchemaCheck SchemaCheck
	// Tweak edits the options of every list and watch request.
	Tweak func(*metav1.ListOptions)
	// StripManagedFields drops metadata.managedFields from every cached
	// object, typically a fifth to two fifths of its memory.
	StripManagedFields bool
	// ResyncPeriod is the default resync period of handlers; 0 means never.
	ResyncPeriod time.Duration
	// Intern interns the objects of every informer (see Options.Intern).
	Intern bool
	// DisableDecoder turns off the library's decoder for every informer
	// (see Options.DisableDecoder).
	DisableDecoder bool
	// DisableWatchList makes every informer list, then watch (see
	// Options.DisableWatchList).
	DisableWatchList bool

	// OnError, Backoff, MinWatchTimeout, PageSize and Metrics are the
	// defaults of the Options fields of the same names.
	OnError         func(error)
	Backoff         *wait.Backoff
	MinWatchTimeout time.Duration
	PageSize        int64
	Metrics         Metrics

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
	// Staleness runs a staleness monitor on every informer (see
	// StalenessOptions), unless their Options set one.
	Staleness *StalenessOptions
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
