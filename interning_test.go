package informers_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testutil"
)

// A list's pages are not reachable once their objects are cached and
// interned: every page's item array is collected while the cache holds
// all the objects.
func TestListPagesAreNotRetained(t *testing.T) {
	wire, err := bf.NewWirePods(bf.NewPodList(1000, bf.PodOptions{Namespaces: 4, Nodes: 10, Deployments: 10, ManagedFields: true, Seed: 3}), bf.Protobuf, 100)
	require.NoError(t, err)
	var pages, freed atomic.Int64
	inf := runListed(t, informers.Options[*corev1.Pod]{Intern: true}, func(opts metav1.ListOptions) (*corev1.PodList, error) {
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

// Cached objects share their equal parts when the informer interns;
// a deep copy of one is independent of the others.
func TestInterning(t *testing.T) {
	for _, intern := range []bool{false, true} {
		t.Run(fmt.Sprintf("intern=%v", intern), func(t *testing.T) {
			wire, err := bf.NewWirePods(bf.NewPodList(200, bf.PodOptions{Namespaces: 1, Nodes: 4, Deployments: 2, Seed: 9}), bf.Protobuf, 0)
			require.NoError(t, err)
			inf := runListed(t, informers.Options[*corev1.Pod]{Intern: intern}, wire.List)
			pods := inf.Lister().List(labels.Everything())
			require.Len(t, pods, 200)
			byApp := map[string][]*corev1.Pod{}
			for _, p := range pods {
				byApp[p.Labels["app.kubernetes.io/name"]] = append(byApp[p.Labels["app.kubernetes.io/name"]], p)
			}
			require.Len(t, byApp, 2)
			for _, ps := range byApp {
				a, b := ps[0], ps[1]
				shared := &a.Spec.Containers[0] == &b.Spec.Containers[0]
				require.Equal(t, intern, shared, "containers of one deployment shared")
				before := b.DeepCopy()
				c := a.DeepCopy()
				c.Spec.Containers[0].Image = "changed"
				c.Labels["changed"] = "yes"
				require.Equal(t, before, b)
			}
		})
	}
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

// FactoryOptions.Intern interns the objects of the factory's informers.
func TestFactoryIntern(t *testing.T) {
	for _, intern := range []bool{false, true} {
		t.Run(fmt.Sprintf("intern=%v", intern), func(t *testing.T) {
			pods := newPodSource()
			app := map[string]string{"app": "web"}
			mustAdd(t, pods, pod("a", "p1", app), pod("a", "p2", app))
			cluster := informerstest.NewCluster()
			informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), pods)
			f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster, Backoff: fastBackoff, Intern: intern})
			inf := informers.Informer[*corev1.Pod](f)
			testutil.StartFactory(t, f)
			waitSynced(t, inf)
			p1, err := inf.Lister().Namespace("a").Get("p1")
			require.NoError(t, err)
			p2, err := inf.Lister().Namespace("a").Get("p2")
			require.NoError(t, err)
			require.Equal(t, p1.Labels, p2.Labels)
			require.Equal(t, intern, fmt.Sprintf("%p", p1.Labels) == fmt.Sprintf("%p", p2.Labels), "labels shared")
		})
	}
}
