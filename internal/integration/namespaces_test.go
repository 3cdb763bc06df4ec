package integration

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// On the real control plane, an informer selecting the namespaces
// labelled team=a caches exactly their config maps, and follows the label:
// a namespace that gains it brings its objects within 2 s, one that loses
// it takes them away within 2 s, with LeftNamespace set.
func TestNamespaceSelectorFollowsLabels(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ctx := testutil.Context(t, 2*time.Minute)
	// A label of this test's own, so that other tests' namespaces are
	// never selected.
	team := fmt.Sprintf("team-%d", time.Now().UnixNano())
	namespaces := []string{testutil.Namespace(t, admin), testutil.Namespace(t, admin), testutil.Namespace(t, admin)}
	label := func(ns, value string) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, team, value)
		_, err := admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	for n, ns := range namespaces {
		label(ns, []string{"a", "b", "b"}[n])
		for i := range 5 {
			_, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}

	f := informers.NewFactoryWith(admin, informers.FactoryOptions{Backoff: fastBackoff})
	cms := informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{NamespaceSelector: team + "=a"})
	var left atomic.Int64
	_, err := cms.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) {
		if d.LeftNamespace {
			left.Add(1)
		}
	}})
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	require.NoError(t, f.WaitForSync(ctx))
	require.Equal(t, namespaces[:1], cachedNamespaces(cms), "only the selected namespace's objects")
	require.Equal(t, 5, cms.Lister().Len())

	label(namespaces[1], "a")
	testutil.EventuallyWithin(t, 2*time.Second, func() bool { return cms.Lister().Len() == 10 }, "the entering namespace's objects within 2 s")
	assert.Equal(t, slices.Sorted(slices.Values(namespaces[:2])), cachedNamespaces(cms))

	label(namespaces[0], "b")
	testutil.EventuallyWithin(t, 2*time.Second, func() bool { return cms.Lister().Len() == 5 && left.Load() == 5 }, "the leaving namespace's objects gone within 2 s")
	assert.Equal(t, namespaces[1:2], cachedNamespaces(cms))

	// A write in an unselected namespace never shows: a Tracker does not
	// wait for it.
	cm, err := admin.CoreV1().ConfigMaps(namespaces[2]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unseen"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr := informers.NewTracker(cms, 0)
	require.NoError(t, tr.Wrote(informers.KeyOf(cm), cm))
	start := time.Now()
	require.NoError(t, tr.Wait(ctx, informers.KeyOf(cm)))
	assert.Less(t, time.Since(start), time.Second)
}

// cachedNamespaces returns the namespaces of the objects cms caches, sorted.
func cachedNamespaces(cms *informers.SharedInformer[*corev1.ConfigMap]) []string {
	var out []string
	for cm := range cms.Lister().All() {
		if !slices.Contains(out, cm.Namespace) {
			out = append(out, cm.Namespace)
		}
	}
	slices.Sort(out)
	return out
}
