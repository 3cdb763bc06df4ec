package controllerruntime

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers"
)

// defaultSyncPeriod is controller-runtime's default resync period.
const defaultSyncPeriod = 10 * time.Hour

// partConfig is what one informer of a type caches: a namespace ("" for
// all) and the settings that cache.Options resolve to for it.
type partConfig struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
	transform toolscache.TransformFunc
	noCopy    bool
	sync      time.Duration
}

// partsFor resolves cache.Options for a type the way controller-runtime
// does: ByObject's namespace settings, then ByObject's, then
// DefaultNamespaces', then the Default* options; a cluster-scoped type
// takes ByObject's, then the Default* options. A type cached in all
// namespaces but some, with settings of their own, gets one informer for
// each of those and one for the rest.
func partsFor(o *cache.Options, byObject *cache.ByObject, namespaced bool) []partConfig {
	var bo cache.ByObject
	if byObject != nil {
		bo = *byObject
	}
	if !namespaced {
		// Cluster-scoped: ByObject's settings, then the Default* options;
		// DefaultNamespaces, even its AllNamespaces entry, are about
		// namespaces and do not apply.
		return []partConfig{{
			namespace: cache.AllNamespaces,
			labels:    firstNonNil(bo.Label, o.DefaultLabelSelector),
			fields:    firstNonNil(bo.Field, o.DefaultFieldSelector),
			transform: firstNonNil(bo.Transform, o.DefaultTransform),
			noCopy:    deref(firstNonNil(bo.UnsafeDisableDeepCopy, o.DefaultUnsafeDisableDeepCopy)),
			sync:      jittered(firstNonNil(bo.SyncPeriod, o.SyncPeriod)),
		}}
	}
	namespaces := bo.Namespaces
	if namespaces == nil {
		namespaces = o.DefaultNamespaces
	}
	if len(namespaces) == 0 {
		namespaces = map[string]cache.Config{cache.AllNamespaces: {}}
	}
	var parts []partConfig
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		nsCfg := namespaces[ns]
		def := o.DefaultNamespaces[ns]
		p := partConfig{
			namespace: ns,
			labels:    firstNonNil(nsCfg.LabelSelector, bo.Label, def.LabelSelector, o.DefaultLabelSelector),
			fields:    firstNonNil(nsCfg.FieldSelector, bo.Field, def.FieldSelector, o.DefaultFieldSelector),
			transform: firstNonNil(nsCfg.Transform, bo.Transform, def.Transform, o.DefaultTransform),
			noCopy:    deref(firstNonNil(nsCfg.UnsafeDisableDeepCopy, bo.UnsafeDisableDeepCopy, def.UnsafeDisableDeepCopy, o.DefaultUnsafeDisableDeepCopy)),
			sync:      jittered(firstNonNil(nsCfg.SyncPeriod, bo.SyncPeriod, def.SyncPeriod, o.SyncPeriod)),
		}
		if ns == cache.AllNamespaces && len(namespaces) > 1 {
			// The rest: every namespace without settings of its own.
			var others []fields.Selector
			if p.fields != nil && !p.fields.Empty() {
				others = append(others, p.fields)
			}
			for other := range namespaces {
				if other != cache.AllNamespaces {
					others = append(others, fields.OneTermNotEqualSelector("metadata.namespace", other))
				}
			}
			p.fields = fields.AndSelectors(others...)
		}
		parts = append(parts, p)
	}
	return parts
}

// firstNonNil returns the first of vs that is set: not a nil selector,
// function or pointer.
func firstNonNil[V any](vs ...V) V {
	for _, v := range vs {
		rv := reflect.ValueOf(v)
		if !rv.IsValid() {
			continue
		}
		switch rv.Kind() {
		case reflect.Pointer, reflect.Func, reflect.Interface, reflect.Map, reflect.Slice:
			if rv.IsNil() {
				continue
			}
		}
		return v
	}
	var zero V
	return zero
}

func deref(b *bool) bool { return b != nil && *b }

// jittered returns the resync period, between 0.9 and 1.1 times the period
// asked for (10 hours by default), as controller-runtime does, so that the
// informers of a fleet do not resync together.
func jittered(d *time.Duration) time.Duration {
	period := defaultSyncPeriod
	if d != nil {
		period = *d
	}
	return time.Duration(float64(period) * (0.9 + rand.Float64()/5))
}

// informerOptions turns a part's settings into an informer's options.
func (p partConfig) informerOptions(onError func(error)) informers.Options[client.Object] {
	o := informers.Options[client.Object]{Tuning: informers.Tuning{ResyncPeriod: informers.Set(p.sync), OnError: informers.Set(onError)}}
	if p.labels != nil && !p.labels.Empty() {
		o.LabelSelector = p.labels.String()
	}
	if p.fields != nil && !p.fields.Empty() {
		o.FieldSelector = p.fields.String()
	}
	if p.transform != nil {
		o.Transform = transform(p.transform)
	}
	return o
}

// transform adapts a client-go transform; one that returns something other
// than a client.Object fails, and the informer reports it.
func transform(fn toolscache.TransformFunc) informers.TransformFunc[client.Object] {
	return func(obj client.Object) (client.Object, error) {
		out, err := fn(obj)
		if err != nil {
			return nil, err
		}
		o, ok := out.(client.Object)
		if !ok {
			return nil, fmt.Errorf("transform returned %T, not a client.Object", out)
		}
		return o, nil
	}
}
