package informers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testutil"
)

// An informer of metadata alone, a view of it, the full type skipping all
// else or *metav1.PartialObjectMetadata, syncs by one watch-list stream
// (sendInitialEvents=true) of the objects' metadata alone, or, with
// watch-list off, by one list of it; an informer of the full type gets
// whole objects.
func TestMetadataInformersAreProjected(t *testing.T) {
	testutil.NoLeaks(t)
	const count, size = 20, 50 << 10
	srv, err := bf.NewConfigMapServer("tenant", count, size)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	full, meta := srv.Bytes()
	for _, tc := range []struct {
		name      string
		informer  func(f *informers.Factory) (len func() int, watchList func() bool)
		projected bool
	}{
		{"view", metadataInformer(informers.Options[*metaView]{Resource: configMaps}), true},
		{"full type skipping all but metadata", metadataInformer(informers.Options[*corev1.ConfigMap]{SkipFields: []string{"data", "binaryData", "immutable"}}), true},
		{"metadata", metadataInformer(informers.Options[*metav1.PartialObjectMetadata]{Resource: configMaps}), true},
		{"full type", metadataInformer(informers.Options[*corev1.ConfigMap]{}), false},
	} {
		for _, watchList := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/watch-list", false: "/list"}[watchList], func(t *testing.T) {
				before := srv.Requests()
				f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: srv.Config(), Tuning: informers.Tuning{DisableWatchList: informers.Set(!watchList)}})
				n, streams := tc.informer(f)
				testutil.StartFactory(t, f)
				require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
				assert.Equal(t, count, n())
				assert.Equal(t, watchList, streams())
				got := srv.Requests().Sub(before)
				want := bf.PodServerRequests{WatchLists: 1}
				if !watchList {
					want = bf.PodServerRequests{Lists: 1}
				}
				got.Watches = 0 // the watch after a list may not be asked for yet
				assert.Equal(t, want, got.PodServerRequests)
				if tc.projected {
					assert.Positive(t, got.Projected)
					assert.Less(t, got.Bytes, int64(2*meta), "the metadata alone")
				} else {
					assert.Zero(t, got.Projected)
					assert.GreaterOrEqual(t, got.Bytes, int64(full), "whole objects")
				}
			})
		}
	}
}

// metadataInformer returns how to ask a factory for an informer with opts.
func metadataInformer[T informers.Object](opts informers.Options[T]) func(f *informers.Factory) (func() int, func() bool) {
	return func(f *informers.Factory) (func() int, func() bool) {
		inf := informers.InformerWith(f, opts)
		return inf.Lister().Len, inf.UsesWatchList
	}
}
