package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
)

type widget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

// notFoundResource returns the group and resource a NotFound error names.
func notFoundResource(t *testing.T, err error) schema.GroupResource {
	t.Helper()
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	d := status.Status().Details
	require.NotNil(t, d)
	return schema.GroupResource{Group: d.Group, Resource: d.Kind}
}

// The fleet lister's NotFound for a cluster not attached names the
// resource, as the one-cluster lister's does, and the whole key.
func TestListerNotFoundNamesTheResource(t *testing.T) {
	userScheme := runtime.NewScheme()
	userScheme.AddKnownTypes(schema.GroupVersion{Group: "example.com", Version: "v1"}, &widget{})
	tests := []struct {
		name string
		get  func(fl *fleet.Fleet, key fleet.Key) error
		opts fleet.Options
		want schema.GroupResource
		msg  string
	}{{
		name: "built-in type",
		get: func(fl *fleet.Fleet, key fleet.Key) error {
			_, err := fleet.Informer[*corev1.ConfigMap](fl).Lister().Get(key)
			return err
		},
		want: schema.GroupResource{Resource: "configmaps"},
		msg:  `configmaps "zz|ns/cm-03" not found`,
	}, {
		name: "type of the factories' scheme",
		get: func(fl *fleet.Fleet, key fleet.Key) error {
			_, err := fleet.Informer[*widget](fl).Lister().Get(key)
			return err
		},
		opts: fleet.Options{Factory: informers.FactoryOptions{Scheme: userScheme}},
		want: schema.GroupResource{Group: "example.com", Resource: "widgets"},
		msg:  `widgets.example.com "zz|ns/cm-03" not found`,
	}, {
		name: "unstructured",
		get: func(fl *fleet.Fleet, key fleet.Key) error {
			_, err := fleet.InformerWith(fl, informers.Options[*unstructured.Unstructured]{
				Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"},
			}).Lister().Get(key)
			return err
		},
		want: schema.GroupResource{Group: "example.com", Resource: "gadgets"},
		msg:  `gadgets.example.com "zz|ns/cm-03" not found`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.get(fleet.New(tt.opts), fleet.Key{Cluster: "zz", Namespace: "ns", Name: "cm-03"})
			assert.Equal(t, tt.want, notFoundResource(t, err))
			assert.Equal(t, tt.msg, err.Error())
		})
	}
}

// On an attached cluster the fleet lister's NotFound is that cluster's
// lister's, which names the same resource.
func TestListerNotFoundOnAnAttachedCluster(t *testing.T) {
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	require.NoError(t, fl.Attach(ctx, "east", newTestCluster(t, pod("shop", "web-0", "n1")).cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))
	_, attached := pods.Lister().Get(fleet.Key{Cluster: "east", Namespace: "shop", Name: "web-1"})
	_, detached := pods.Lister().Get(fleet.Key{Cluster: "west", Namespace: "shop", Name: "web-1"})
	assert.Equal(t, schema.GroupResource{Resource: "pods"}, notFoundResource(t, attached))
	assert.Equal(t, notFoundResource(t, attached), notFoundResource(t, detached))
}
