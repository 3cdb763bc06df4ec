package informers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// FromClient works over client-go's fake clientset, which does not stream
// initial events: the informer must not wait for a bookmark that never
// comes.
func TestFromFakeClient(t *testing.T) {
	cs := fake.NewClientset(pod("a", "x", nil), pod("b", "y", nil))
	lw := informers.FromClient[*corev1.Pod](cs.CoreV1().Pods("a"))
	assert.True(t, lw.DisableWatchList)
	inf, rec := startRecording(t, lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	assert.Equal(t, []string{"a/x"}, names(mustList(t, inf.Lister())), "the client's namespace only")

	ctx := testutil.Context(t, 10*time.Second)
	_, err := cs.CoreV1().Pods("a").Create(ctx, pod("a", "z", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return rec.Has("add a/z") }, "watch event delivered")
}

func TestListWatchSelectorsAndTweak(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src,
		pod("a", "web", map[string]string{"app": "web"}),
		pod("a", "db", map[string]string{"app": "db"}),
		pod("b", "web", map[string]string{"app": "web"}),
	)
	var tweaked int
	lw := src.ListWatch("")
	lw.Tweak = func(o *metav1.ListOptions) { tweaked++ }
	_, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Namespace: informers.Set("a")}})
	require.ErrorContains(t, err, "Options.Namespace is for a Factory")
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{
		LabelSelector: "app=web", FieldSelector: "metadata.namespace=a", Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	assert.Equal(t, []string{"a/web"}, names(mustList(t, inf.Lister())))
	assert.NotZero(t, tweaked)
	mustAdd(t, src, pod("a", "web2", map[string]string{"app": "web"}), pod("a", "db2", map[string]string{"app": "db"}))
	testutil.Eventually(t, func() bool { return inf.Lister().Len() == 2 }, "only matching objects arrive")
	assert.Equal(t, []string{"a/web", "a/web2"}, names(mustList(t, inf.Lister())))
}
