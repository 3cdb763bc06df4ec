package informers

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"

	"golang.org/x/sync/semaphore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubetyped/informers/internal/apiclient"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/shard"
)

// config is an informer's configuration, resolved once from its Options
// and, through a Factory, the factory's: selectors spelled canonically,
// the shard merged, defaults filled in. NewInformer and a Factory both
// resolve one and hand it to newInformer; nothing is resolved twice, and
// nothing but this file sets its fields.
type config[T Object] struct {
	resource schema.GroupVersionResource
	desc     string // resource and Go type, for errors and logs
	name     string // for metrics
	sel      selection
	filter   selectionFilter // sel as the client evaluates it
	// namespaceKnown says sel.namespace is the informer's namespace, as
	// through a Factory; NewInformer's namespace is its ListWatch's.
	namespaceKnown bool
	shard          *shard.Shard // canonical; nil if not sharded
	shardKey       string       // tells shards apart in a Factory; "" if not sharded
	namespaceMode  NamespaceMode
	transform      TransformFunc[T]
	indexers       map[string]IndexFunc[T]
	resync         time.Duration
	stripManaged   bool               // StripManagedFields, chained before transform
	decoding       apiclient.Decoding // skip sorted
	schemaCheck    SchemaCheck        // of a view
	clear          func(T)            // clears the fields decoding skips; nil if none

	waitForResource bool
	onError         func(error)
	backoff         *wait.Backoff
	minWatchTimeout time.Duration
	pageSize        int64
	metrics         Metrics
	staleness       *StalenessOptions
	listLimiter     reflector.Limiter // a Factory's bound on concurrent lists
	noWatchList     bool              // list, then watch, never a watch-list
	// failOnUndecodable makes readiness fail while objects cannot be
	// decoded.
	failOnUndecodable bool
	// tweak edits every request last but for the list-watch's own tweak:
	// a Factory's FactoryOptions.Tweak.
	tweak func(*metav1.ListOptions)
}

// resolveConfig resolves o, with the settings its Tuning leaves unset
// taken from the factory's options f (the zero FactoryOptions for
// NewInformer), for an informer of resource.
func resolveConfig[T Object](o Options[T], f FactoryOptions, resource schema.GroupVersionResource) (config[T], error) {
	t := o.Tuning.over(factoryDefaultsFor(f, resource).Tuning)
	c := config[T]{
		resource:        resource,
		desc:            describe[T](resource),
		transform:       o.Transform,
		indexers:        o.Indexers,
		resync:          t.ResyncPeriod.value,
		decoding:        apiclient.Decoding{Disabled: t.DisableDecoder.value},
		noWatchList:     t.DisableWatchList.value,
		waitForResource: o.WaitForResource,
		onError:         t.OnError.value,
		backoff:         t.Backoff.value,
		minWatchTimeout: max(t.MinWatchTimeout.value, minWatchTimeout),
		pageSize:        t.PageSize.value,
		metrics:         t.Metrics.value,
		staleness:       t.Staleness.value,
		namespaceMode:   t.NamespaceMode.value,
		stripManaged:    t.StripManagedFields.value,
		tweak:           f.Tweak,

		failOnUndecodable: o.FailReadinessOnUndecodable,
		schemaCheck:       t.SchemaCheck.value,
	}
	if c.stripManaged {
		c.transform = chainOptional(StripManagedFields[T](), o.Transform)
	}
	if o.SkipFields != nil {
		c.decoding.Skip = slices.Sorted(slices.Values(o.SkipFields))
		clear, err := clearerOf[T](o.SkipFields)
		if err != nil {
			return config[T]{}, fmt.Errorf("SkipFields: %w", err)
		}
		c.clear = clear
	}
	namespaceSel := t.NamespaceSelector.value
	if err := checkNamespaceMode(c.namespaceMode, o.Shard != nil && namespaceSel != ""); err != nil {
		return config[T]{}, err
	}
	sel, filter, err := newSelection(t.Namespace.value, o.LabelSelector, o.FieldSelector, namespaceSel)
	if err != nil {
		return config[T]{}, err
	}
	c.sel, c.filter, c.name = sel, filter, cmp.Or(o.Name, sel.name(resource))
	if o.Shard != nil {
		if err := o.Shard.Validate(); err != nil {
			return config[T]{}, err
		}
		s := o.Shard.Canonical()
		c.shard, c.shardKey = &s, string(s.Field)+"|"+s.Selector()
	}
	return c, nil
}

// factoryDefaultsFor returns the factory options that are the defaults of
// an informer of resource: the factory's namespace selection is not one
// of the Namespace informer's, which it needs.
func factoryDefaultsFor(f FactoryOptions, resource schema.GroupVersionResource) FactoryOptions {
	if resource == namespacesResource {
		f.NamespaceSelector, f.NamespaceMode = Setting[string]{}, Setting[NamespaceMode]{}
	}
	return f
}

// clearerOf returns what zeroes the fields that paths name in objects of
// type T that the library's decoders did not decode (they skip them
// themselves): by the protobuf plans of built-in types, the JSON plans of
// other structs, or by key for unstructured objects.
func clearerOf[T Object](paths []string) (func(T), error) {
	t := reflect.TypeFor[T]()
	if t == reflect.TypeFor[*unstructured.Unstructured]() {
		clearer, err := jsondec.NewUnstructuredClearer(paths)
		if err != nil {
			return nil, err
		}
		return func(obj T) {
			if u := any(obj).(*unstructured.Unstructured); u != nil && u.Object != nil {
				clearer.Clear(u.Object)
			}
		}, nil
	}
	clearer, err := apiclient.NewClearer(t, paths)
	if err != nil {
		return nil, err
	}
	return func(obj T) { clearer.Clear(reflect.ValueOf(obj).UnsafePointer()) }, nil
}

// minWatchTimeout is the shortest server-side timeout of a watch, as in
// client-go: it spares the control plane reconnections. It is the default
// of Tuning.MinWatchTimeout and its floor.
const minWatchTimeout = 5 * time.Minute

// viaFactory completes c for an informer that a Factory makes over list
// and watch functions of its own: its namespace is the factory's, lists
// holds its lists to the factory's bound (nil: none), and an informer that
// watches its namespaces one by one shares one decoder among them.
func (c config[T]) viaFactory(lists *semaphore.Weighted) config[T] {
	c.namespaceKnown = true
	c.decoding.Schema = apiclient.NewSchemaCheck(c.schemaCheck.mode())
	if lists != nil {
		c.listLimiter = lists
	}
	if c.filter.namespaces != nil {
		c.decoding.Shared = new(apiclient.Decoders)
	}
	return c
}

// describe names an informer by resource and Go type, as in
// "deployments.v1.apps (*v1.Deployment)".
func describe[T Object](gvr schema.GroupVersionResource) string {
	typ := reflect.TypeFor[T]().String() // names interface types too
	if gvr.Empty() {
		return typ
	}
	return fmt.Sprintf("%s (%s)", apiclient.ResourceName(gvr), typ)
}

func chainOptional[T Object](first, second TransformFunc[T]) TransformFunc[T] {
	if second == nil {
		return first
	}
	return Chain(first, second)
}

// checkNamespaceMode rejects a mode that is not one, and a watch per
// namespace of an informer with a shard and a namespace selection
// (shardedSelection).
func checkNamespaceMode(mode NamespaceMode, shardedSelection bool) error {
	switch mode {
	case NamespaceModeAuto, NamespaceModeClusterWide:
		return nil
	case NamespaceModePerNamespace:
		if shardedSelection {
			return fmt.Errorf("NamespaceModePerNamespace does not combine with Shard: use NamespaceModeClusterWide or NamespaceModeAuto")
		}
		return nil
	}
	return fmt.Errorf("%v is not a NamespaceMode", mode)
}
