package controllerruntime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testutil"
)

// The cache decodes built-in types and metadata with the library's
// decoder: objects equal to the server's, sharing their equal parts,
// without the fields to skip; with the decoder off they share nothing.
func TestCacheDecoding(t *testing.T) {
	env, cs := sharedServer(t)
	ns := testutil.Namespace(t, cs)
	ctx := testutil.Context(t, time.Minute)
	for i := range 5 {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Labels: map[string]string{"app": "web"}},
			Data:       map[string]string{"k": "v"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	server, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	opts := cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, DefaultUnsafeDisableDeepCopy: ptr.To(true)}
	for _, tc := range []struct {
		name     string
		decoding controllerruntime.Decoding
		shared   bool
	}{
		{"default", controllerruntime.Decoding{}, true},
		{"skip", controllerruntime.Decoding{SkipFields: map[client.Object][]string{
			&corev1.ConfigMap{}:             {"data", "metadata.managedFields"},
			&metav1.PartialObjectMetadata{}: {"metadata.managedFields"},
		}}, true},
		{"disabled", controllerruntime.Decoding{Disable: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := controllerruntime.NewWithOptions(env.Config(), opts, controllerruntime.Options{Decoding: tc.decoding})
			require.NoError(t, err)
			startCache(t, c)
			require.True(t, c.WaitForCacheSync(ctx), "started")
			var cms corev1.ConfigMapList
			require.NoError(t, c.List(ctx, &cms))
			require.Len(t, cms.Items, 5)
			var metas metav1.PartialObjectMetadataList
			metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
			require.NoError(t, c.List(ctx, &metas))
			require.Len(t, metas.Items, 5)
			for i := range server.Items {
				want := server.Items[i].DeepCopy()
				if tc.name == "skip" {
					want.Data, want.ManagedFields = nil, nil
				}
				got := cms.Items[i]
				got.TypeMeta = metav1.TypeMeta{}
				assert.True(t, apiequality.Semantic.DeepEqual(*want, got), "%s", want.Name)
				assert.True(t, apiequality.Semantic.DeepEqual(want.ObjectMeta, metas.Items[i].ObjectMeta), "%s", want.Name)
			}
			assert.Equal(t, tc.shared, fmt.Sprintf("%p", cms.Items[0].Labels) == fmt.Sprintf("%p", cms.Items[1].Labels), "labels shared")
			assert.Equal(t, tc.shared, fmt.Sprintf("%p", metas.Items[0].Labels) == fmt.Sprintf("%p", metas.Items[1].Labels), "metadata labels shared")
		})
	}
	_, err = controllerruntime.NewWithOptions(env.Config(), opts, controllerruntime.Options{Decoding: controllerruntime.Decoding{SkipFields: map[client.Object][]string{&corev1.ConfigMap{}: {"nothing"}}}})
	require.ErrorContains(t, err, "nothing")
}
