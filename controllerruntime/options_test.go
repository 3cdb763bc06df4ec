package controllerruntime

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TestPartsForClusterScoped checks that a cluster-scoped type takes each
// setting from ByObject, then from the Default* options, and never from
// DefaultNamespaces, whose AllNamespaces entry is about namespaced types.
func TestPartsForClusterScoped(t *testing.T) {
	nsLabels := labels.SelectorFromSet(labels.Set{"from": "all-namespaces"})
	nsFields := fields.OneTermNotEqualSelector("metadata.namespace", "kube-system")
	defLabels := labels.SelectorFromSet(labels.Set{"from": "default"})
	defFields := fields.OneTermEqualSelector("metadata.name", "default")
	boLabels := labels.SelectorFromSet(labels.Set{"from": "by-object"})
	boFields := fields.OneTermEqualSelector("metadata.name", "by-object")
	nsTransform := func(o any) (any, error) { return o, nil }
	defTransform := func(o any) (any, error) { return o, nil }
	boTransform := func(o any) (any, error) { return o, nil }
	allNamespaces := cache.Config{
		LabelSelector:         nsLabels,
		FieldSelector:         nsFields,
		Transform:             nsTransform,
		UnsafeDisableDeepCopy: ptr.To(true),
		SyncPeriod:            ptr.To(time.Minute),
	}
	namespaces := map[string]cache.Config{cache.AllNamespaces: allNamespaces, "ns": {}}

	type want struct {
		labels    labels.Selector
		fields    fields.Selector
		transform any
		noCopy    bool
		sync      time.Duration // before jitter
	}
	tests := []struct {
		name     string
		opts     cache.Options
		byObject *cache.ByObject
		want     want
	}{{
		name: "DefaultNamespaces alone: nothing applies",
		opts: cache.Options{DefaultNamespaces: namespaces},
		want: want{sync: defaultSyncPeriod},
	}, {
		name: "Default options apply, DefaultNamespaces do not",
		opts: cache.Options{
			DefaultNamespaces:            namespaces,
			DefaultLabelSelector:         defLabels,
			DefaultFieldSelector:         defFields,
			DefaultTransform:             defTransform,
			DefaultUnsafeDisableDeepCopy: ptr.To(false),
			SyncPeriod:                   ptr.To(time.Hour),
		},
		want: want{labels: defLabels, fields: defFields, transform: defTransform, sync: time.Hour},
	}, {
		name: "ByObject before the Default options",
		opts: cache.Options{
			DefaultNamespaces:    namespaces,
			DefaultLabelSelector: defLabels,
			DefaultFieldSelector: defFields,
			DefaultTransform:     defTransform,
			SyncPeriod:           ptr.To(time.Hour),
		},
		byObject: &cache.ByObject{
			Label:                 boLabels,
			Field:                 boFields,
			Transform:             boTransform,
			UnsafeDisableDeepCopy: ptr.To(true),
			SyncPeriod:            ptr.To(2 * time.Hour),
		},
		want: want{labels: boLabels, fields: boFields, transform: boTransform, noCopy: true, sync: 2 * time.Hour},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := partsFor(&tt.opts, tt.byObject, false)
			require.Len(t, parts, 1, "one informer for a cluster-scoped type")
			p := parts[0]
			assert.Equal(t, cache.AllNamespaces, p.namespace)
			assert.Equal(t, tt.want.labels, p.labels, "label selector")
			assert.Equal(t, tt.want.fields, p.fields, "field selector")
			if tt.want.transform == nil {
				assert.Nil(t, p.transform, "transform")
			} else {
				require.NotNil(t, p.transform, "transform")
				assert.Equal(t, ptrOf(tt.want.transform), ptrOf(p.transform), "transform")
			}
			assert.Equal(t, tt.want.noCopy, p.noCopy, "UnsafeDisableDeepCopy")
			assert.InDelta(t, float64(tt.want.sync), float64(p.sync), float64(tt.want.sync)/10+1, "SyncPeriod, jittered by at most 10 %%")
		})
	}

	t.Run("a namespaced type still takes the AllNamespaces entry", func(t *testing.T) {
		parts := partsFor(&cache.Options{DefaultNamespaces: namespaces}, nil, true)
		require.Len(t, parts, 2)
		assert.Equal(t, cache.AllNamespaces, parts[0].namespace)
		assert.Equal(t, nsLabels, parts[0].labels)
		assert.True(t, parts[0].noCopy)
	})
}

// ptrOf is the code pointer of a function, to tell functions apart.
func ptrOf(fn any) uintptr { return reflect.ValueOf(fn).Pointer() }
