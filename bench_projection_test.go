package informers_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// BenchmarkMetadataSync measures an initial sync of large objects by
// informers that read their metadata alone: 150 config maps of 900 KiB of
// random data each (a tenant's, which an operator with the edit role may
// have to cache), served over HTTP as kube-apiserver serves them in
// protobuf (benchfixtures.ConfigMapServer: whole, or their metadata alone
// to a request that accepts as=PartialObjectMetadata), by a watch-list
// stream (path=watchlist) or by a list, then a watch (path=list). The
// impls, all our factory's from the server's rest.Config:
//
//	metadata              *metav1.PartialObjectMetadata
//	informers-view-meta   a view of metadata alone (ViewMeta)
//	informers-skip-data   *corev1.ConfigMap skipping data, binaryData and
//	                      immutable: nothing but metadata left
//	informers             *corev1.ConfigMap, whole: what the others spare
//
// Besides the heap figures of benchMeasureSync it reports read-MB, the
// bytes the server sent for a sync. Each sync is checked: every config map
// added once and cached, no error reported, the server asked for one
// watch-list stream or one list, for metadata alone unless impl=informers.
func BenchmarkMetadataSync(b *testing.B) {
	const count, size = 150, 900 << 10
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	skip := []string{"data", "binaryData", "immutable"}
	impls := []struct {
		impl      benchServerImpl
		projected bool
	}{
		{benchServerImpl{"metadata", benchServerInformers(informers.Options[*metav1.PartialObjectMetadata]{Resource: configMaps})}, true},
		{benchServerImpl{"informers-view-meta", benchServerInformers(informers.Options[*metaView]{Resource: configMaps})}, true},
		{benchServerImpl{"informers-skip-data", benchServerInformers(informers.Options[*corev1.ConfigMap]{SkipFields: skip})}, true},
		{benchServerImpl{"informers", benchServerInformers(informers.Options[*corev1.ConfigMap]{})}, false},
	}
	var srv *bf.ConfigMapServer
	defer func() {
		if srv != nil {
			srv.Close()
		}
	}()
	for _, path := range benchServerPaths[:2] {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("configmaps=%d/size=900KiB/path=%s/impl=%s", count, path.name, impl.impl.name), func(b *testing.B) {
				if srv == nil {
					var err error
					if srv, err = bf.NewConfigMapServer("tenant", count, size); err != nil {
						b.Fatal(err)
					}
				}
				benchMetadataSync(b, srv, path, impl.impl, impl.projected)
			})
		}
	}
}

// benchMetadataSync measures syncs of impl from srv by path, each checked
// (see BenchmarkMetadataSync), and reports read-MB.
func benchMetadataSync(b *testing.B, srv *bf.ConfigMapServer, path benchServerPath, impl benchServerImpl, projected bool) {
	benchClientGoWatchListFor(b, path.watchList)
	n := srv.Len()
	var read, syncs int64
	b.ReportAllocs()
	benchMeasureSync(b, n, func(onAdd func()) func() {
		before := srv.Requests()
		var adds atomic.Int64
		c, err := impl.start(b.Context(), srv.Config(), path.watchList, func() {
			adds.Add(1)
			onAdd()
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			defer func() {
				if err := c.stop(); err != nil {
					b.Error(err)
				}
			}()
			benchWait(b, c.synced)
			got := srv.Requests().Sub(before)
			read += got.Bytes
			syncs++
			var errs []error
			if err := c.lastErr(); err != nil {
				errs = append(errs, fmt.Errorf("reported: %w", err))
			}
			if got := adds.Load(); got != int64(n) {
				errs = append(errs, fmt.Errorf("%d config maps added, want %d", got, n))
			}
			if got := c.len(); got != n {
				errs = append(errs, fmt.Errorf("%d config maps cached, want %d", got, n))
			}
			want := bf.PodServerRequests{WatchLists: 1}
			if !path.watchList {
				want = bf.PodServerRequests{Lists: 1}
			}
			if got.Watches = 0; got.PodServerRequests != want {
				errs = append(errs, fmt.Errorf("path=%s: the server answered %+v, want %+v", path.name, got.PodServerRequests, want))
			}
			if projected != (got.Projected > 0) {
				errs = append(errs, fmt.Errorf("%d requests answered with metadata alone", got.Projected))
			}
			if err := errors.Join(errs...); err != nil {
				b.Fatalf("impl=%s: %v", impl.name, err)
			}
		}
	})
	b.ReportMetric(bf.MB(float64(read)/float64(syncs)), "read-MB")
}
