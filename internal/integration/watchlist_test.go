package integration

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// requests counts the lists, plain watches and watch-list streams of one
// resource among the exchanges.
func requests(t *testing.T, w *wire, resource string) (lists, watches, streams int) {
	t.Helper()
	for _, ex := range w.exchanges() {
		u, err := url.Parse(ex.url)
		require.NoError(t, err)
		switch kindOf(ex.method, u, resource) {
		case listRequest:
			lists++
		case watchRequest:
			watches++
		case watchListRequest:
			streams++
		}
	}
	return lists, watches, streams
}

func createConfigMaps(t *testing.T, env *testenv.Env, ns string, n int) {
	t.Helper()
	cs := clientset(t, env.Config())
	ctx := testutil.Context(t, time.Minute)
	require.NoError(t, parallel(n, 8, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "cm-"}}, metav1.CreateOptions{})
		return err
	}))
}

// Against kube-apiserver 1.34 and later the initial state arrives by
// watch-list streaming: one watch request with sendInitialEvents, no list.
func TestWatchListIsUsed(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	ns := testutil.Namespace(t, clientset(t, env.Config()))
	createConfigMaps(t, env, ns, 50)

	inf, w := syncRecorded(t, env, ns)
	assert.Equal(t, 50, inf.Lister().Len())
	assert.True(t, inf.UsesWatchList())
	lists, _, streams := requests(t, w, "configmaps")
	assert.Equal(t, 1, streams, "one watch-list stream")
	assert.Zero(t, lists, "no list request")
}

// syncRecorded runs a factory's informer of the config maps of ns, on a
// configuration of env that w records, and waits for its sync.
func syncRecorded(t *testing.T, env *testenv.Env, ns string) (*informers.SharedInformer[*corev1.ConfigMap], *wire) {
	t.Helper()
	w, cfg := recorded(env)
	f := informers.NewFactoryWith(clientset(t, cfg), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	inf := informers.Informer[*corev1.ConfigMap](f)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
	return inf, w
}

// With streaming turned off on the client, the informer lists and watches.
func TestListAndWatchWhenWatchListIsOff(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	ns := testutil.Namespace(t, clientset(t, env.Config()))
	createConfigMaps(t, env, ns, 50)

	w, cfg := recorded(env)
	lw := informers.FromClient[*corev1.ConfigMap](clientset(t, cfg).CoreV1().ConfigMaps(ns))
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{PageSize: informers.Set[int64](20), Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), inf))
	// The first list asks for resource version "0", which the watch cache
	// may answer from before the last creations; the watch brings them.
	testutil.Eventually(t, func() bool { return inf.Lister().Len() == 50 }, "the 50 config maps cached")
	lists, watches, streams := requests(t, w, "configmaps")
	assert.Zero(t, streams)
	assert.GreaterOrEqual(t, lists, 1)
	assert.Equal(t, 1, watches)
}

// A server with the WatchList feature off refuses streaming; the informer
// falls back to list and watch on its own. (The gate is beta and on by
// default from 1.34 to 1.37.)
func TestFallbackWhenServerRefusesWatchList(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.New(t, testenv.Options{FeatureGates: map[string]bool{"WatchList": false}})
	require.True(t, env.Server().HasGate("WatchList"), "kube-apiserver %s has the WatchList gate", env.Server().Version)
	ns := testutil.Namespace(t, clientset(t, env.Config()))
	createConfigMaps(t, env, ns, 20)

	inf, w := syncRecorded(t, env, ns)
	assert.Equal(t, 20, inf.Lister().Len())
	assert.False(t, inf.UsesWatchList())
	lists, watches, streams := requests(t, w, "configmaps")
	assert.Equal(t, 1, streams, "tried once")
	assert.Equal(t, 1, lists)
	assert.Equal(t, 1, watches)
	for _, ex := range w.exchanges() {
		if ex.status >= 400 {
			t.Logf("refused: %d %s", ex.status, ex.url)
		}
	}
}
