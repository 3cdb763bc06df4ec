package informers_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testutil"
)

// A list's pages are not reachable once their objects are cached: every
// page's item array is collected while the cache holds all the objects.
func TestListPagesAreNotRetained(t *testing.T) {
	wire, err := bf.NewWirePods(bf.NewPodList(1000, bf.PodOptions{Namespaces: 4, Nodes: 10, Deployments: 10, ManagedFields: true, Seed: 3}), bf.Protobuf, 100)
	require.NoError(t, err)
	var pages, freed atomic.Int64
	inf := runListed(t, informers.Options[*corev1.Pod]{}, func(opts metav1.ListOptions) (*corev1.PodList, error) {
		opts.Limit = 100
		list, err := wire.List(opts)
		if err == nil {
			pages.Add(1)
			runtime.AddCleanup(&list.Items[0], func(*atomic.Int64) { freed.Add(1) }, &freed)
		}
		return list, err
	})
	require.Equal(t, 1000, inf.Lister().Len())
	require.EqualValues(t, 10, pages.Load())
	require.Eventually(t, func() bool {
		runtime.GC()
		return freed.Load() == pages.Load()
	}, 10*time.Second, 10*time.Millisecond)
	runtime.KeepAlive(inf)
}

// runListed runs an informer of opts that lists with list and then
// watches a watch that sends nothing, and waits until it has synced.
func runListed(t *testing.T, opts informers.Options[*corev1.Pod], list func(metav1.ListOptions) (*corev1.PodList, error)) *informers.SharedInformer[*corev1.Pod] {
	t.Helper()
	lw := informers.NewListWatch[*corev1.Pod](
		func(_ context.Context, o metav1.ListOptions) (*corev1.PodList, error) { return list(o) },
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	)
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, opts)
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	return inf
}
