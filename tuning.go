package informers

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Setting is a tuning value that an informer inherits or sets: the zero
// Setting is unset, and inherits the factory's value (or, unset there
// too, the library's default); Set makes one that is set. A setting set
// to a zero value turns a factory-wide setting off for one informer:
// Set(false), Set(time.Duration(0)), Set[Metrics](nil).
type Setting[V any] struct {
	value V
	set   bool
}

// Set returns a Setting set to v.
func Set[V any](v V) Setting[V] { return Setting[V]{value: v, set: true} }

// Get returns the value of s and whether it is set.
func (s Setting[V]) Get() (V, bool) { return s.value, s.set }

// or returns s if it is set, else def.
func (s Setting[V]) or(def Setting[V]) Setting[V] {
	if s.set {
		return s
	}
	return def
}

// Tuning is the configuration that an informer shares with its factory.
// Embedded in FactoryOptions, it sets the defaults of every informer of
// the factory; embedded in Options, it sets or overrides them for one
// informer. Each field is a Setting: unset, it inherits (the factory's
// value, else the default each field names); set with Set, it applies,
// a zero value included, which turns a factory-wide setting off for one
// informer. The zero Tuning inherits everything.
//
// Through a Factory, Namespace, NamespaceSelector and NamespaceMode tell
// informers apart: requests that resolve to other values get other
// informers. A later request for an existing informer that sets
// StripManagedFields, ResyncPeriod, DisableDecoder or DisableWatchList to
// another value than the informer's conflicts (see Informer); one that
// leaves them unset gets the informer as it is. OnError, Backoff,
// MinWatchTimeout, PageSize, Metrics, SchemaCheck and Staleness are those
// of the request that created the informer; a later request's are
// ignored.
type Tuning struct {
	// Namespace limits namespaced informers to one namespace; "" (the
	// default) means all. An informer made by NewInformer takes its
	// namespace from its ListWatch, and rejects this setting.
	Namespace Setting[string]
	// NamespaceSelector, a label selector on Namespace objects in the
	// syntax of metav1.ListOptions ("team=a"), limits namespaced informers
	// to the objects of the namespaces it selects, as their labels change
	// while they run: a namespace that enters brings its objects as adds,
	// one that leaves takes them away as deletes with Deleted.LeftNamespace
	// set. "" (the default) selects every namespace. The factory follows
	// namespaces with its Namespace informer, to which the setting does
	// not apply; NewInformer rejects it (see NewNamespaceSelectedInformer).
	// See docs/namespaces.md.
	NamespaceSelector Setting[string]
	// NamespaceMode says how an informer with a NamespaceSelector watches:
	// one list and watch per selected namespace, one cluster-wide watch
	// filtered on the client, or (NamespaceModeAuto, the default)
	// whichever suits the selection.
	NamespaceMode Setting[NamespaceMode]
	// StripManagedFields drops metadata.managedFields from every cached
	// object, before the informer's Transform; off by default. For the
	// other ways to keep less, see the table "When to use which" in docs/memory.md.
	StripManagedFields Setting[bool]
	// ResyncPeriod is the default resync period of handlers: every period,
	// each handler receives the whole cache as updates. 0 (the default)
	// means never.
	ResyncPeriod Setting[time.Duration]
	// DisableDecoder turns off the library's decoders (on by default),
	// which decode the protobuf of built-in types and of metadata-only
	// informers, and the JSON of custom resources and of
	// *unstructured.Unstructured, sharing equal strings and parts between
	// cached objects as they decode. Off, objects are decoded by
	// client-go's codecs, as client-go decodes them. See the table
	// "When to use which" in docs/memory.md.
	DisableDecoder Setting[bool]
	// DisableWatchList makes informers sync by listing in pages, then
	// watching, instead of by a watch-list stream (the default where the
	// server offers it). client-go's switch, its WatchListClient feature
	// gate (KUBE_FEATURE_WatchListClient=false in the environment), turns
	// streaming off for every informer too; NewInformer's sources choose
	// with ListWatch.DisableWatchList.
	DisableWatchList Setting[bool]
	// OnError receives every error an informer meets: failed requests
	// (*ListWatchError), objects that cannot be decoded
	// (*UndecodableObjectError), panicking handlers (*HandlerPanicError),
	// transforms (*TransformError) and index functions (*IndexError). It
	// must return quickly. By default (nil), errors are logged.
	OnError Setting[func(error)]
	// Backoff sets the delays between retries after failures; by default
	// (nil), client-go's: 0.8s doubling to 30s with jitter, reset after 2
	// minutes.
	Backoff Setting[*wait.Backoff]
	// MinWatchTimeout is the shortest server-side watch timeout: each
	// watch asks for a random timeout between it and twice it. It is at
	// least 5 minutes (the default), as in client-go, to spare the control
	// plane reconnections; shorter values are raised to it.
	MinWatchTimeout Setting[time.Duration]
	// PageSize, if positive, pages every list by that many objects. 0 (the
	// default) pages by 500 the lists that the API server's watch cache
	// cannot serve whole, and leaves a relist at a known version in one
	// piece, so that the watch cache serves it, as client-go does.
	PageSize Setting[int64]
	// Metrics receives the informers' and their handlers' measurements;
	// by default (nil), none are taken.
	Metrics Setting[Metrics]
	// SchemaCheck says whether a view is checked against the type it
	// projects: by default (SchemaCheckDefault), where a schema can be had;
	// see SchemaCheck.
	SchemaCheck Setting[SchemaCheck]
	// Staleness runs a staleness monitor that measures how far the cache
	// lags the server (see StalenessOptions); by default (nil), none runs.
	Staleness Setting[*StalenessOptions]
}

// over returns t with the settings it leaves unset taken from def.
func (t Tuning) over(def Tuning) Tuning {
	t.Namespace = t.Namespace.or(def.Namespace)
	t.NamespaceSelector = t.NamespaceSelector.or(def.NamespaceSelector)
	t.NamespaceMode = t.NamespaceMode.or(def.NamespaceMode)
	t.StripManagedFields = t.StripManagedFields.or(def.StripManagedFields)
	t.ResyncPeriod = t.ResyncPeriod.or(def.ResyncPeriod)
	t.DisableDecoder = t.DisableDecoder.or(def.DisableDecoder)
	t.DisableWatchList = t.DisableWatchList.or(def.DisableWatchList)
	t.OnError = t.OnError.or(def.OnError)
	t.Backoff = t.Backoff.or(def.Backoff)
	t.MinWatchTimeout = t.MinWatchTimeout.or(def.MinWatchTimeout)
	t.PageSize = t.PageSize.or(def.PageSize)
	t.Metrics = t.Metrics.or(def.Metrics)
	t.SchemaCheck = t.SchemaCheck.or(def.SchemaCheck)
	t.Staleness = t.Staleness.or(def.Staleness)
	return t
}
