package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// createLabeled creates n config maps with the same labels and data in ns.
func createLabeled(t *testing.T, env *testenv.Env, ns string, n int) {
	t.Helper()
	cs := clientset(t, env.Config())
	ctx := testutil.Context(t, time.Minute)
	require.NoError(t, parallel(n, 8, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Labels: map[string]string{"app": "web", "tier": "front"}},
			Data:       map[string]string{"config.yaml": "replicas: 3"},
		}, metav1.CreateOptions{})
		return err
	}))
}

// A factory's informers decode what the server sends with the library's
// decoder: objects equal to the server's, sharing their equal parts,
// without the fields to skip; with the decoder off they share nothing.
// Updates arrive the same way through the watch.
func TestDecoderAgainstServer(t *testing.T) {
	env, cs, ns, _ := sharedServer(t, time.Minute)
	createLabeled(t, env, ns, 10)
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	shared := informers.Informer[*corev1.ConfigMap](f)
	plain := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff), DisableDecoder: informers.Set(true)}})
	apart := informers.Informer[*corev1.ConfigMap](plain)
	skipping := informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{LabelSelector: "app=web", SkipFields: []string{"metadata.managedFields", "data"}})
	testutil.StartFactory(t, f)
	testutil.StartFactory(t, plain)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), plain))

	server, err := cs.CoreV1().ConfigMaps(ns).List(testutil.Context(t, time.Minute), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, server.Items, 10)
	for i := range server.Items {
		want := &server.Items[i]
		got, err := shared.Lister().Namespace(ns).Get(want.Name)
		require.NoError(t, err)
		assert.True(t, apiequality.Semantic.DeepEqual(want, got), "%s", want.Name)
		got, err = skipping.Lister().Namespace(ns).Get(want.Name)
		require.NoError(t, err)
		assert.Empty(t, got.ManagedFields, "skipped")
		assert.Nil(t, got.Data, "skipped")
		assert.Equal(t, want.Labels, got.Labels)
	}
	a, b := pair(t, shared.Lister().List(labels.Everything()))
	assert.Equal(t, fmt.Sprintf("%p", a.Labels), fmt.Sprintf("%p", b.Labels), "labels shared")
	a, b = pair(t, apart.Lister().List(labels.Everything()))
	assert.NotEqual(t, fmt.Sprintf("%p", a.Labels), fmt.Sprintf("%p", b.Labels), "nothing shared without the decoder")

	cm := server.Items[0].DeepCopy()
	cm.Data["config.yaml"] = "replicas: 5"
	updated, err := cs.CoreV1().ConfigMaps(ns).Update(testutil.Context(t, time.Minute), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		got, err := shared.Lister().Namespace(ns).Get(cm.Name)
		return err == nil && apiequality.Semantic.DeepEqual(updated, got)
	}, "the update arrives decoded")
}

// A metadata-only informer of a factory with a rest.Config lists and
// watches metadata in protobuf, decoded by the library's decoder.
func TestMetadataDecoded(t *testing.T) {
	env, cs, ns, _ := sharedServer(t, time.Minute)
	createLabeled(t, env, ns, 5)
	w, cfg := recorded(env)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}, RESTConfig: cfg})
	inf := informers.InformerWith(f, informers.Options[*metav1.PartialObjectMetadata]{Resource: corev1.SchemeGroupVersion.WithResource("configmaps")})
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
	require.Equal(t, 5, inf.Lister().Len())
	server, err := cs.CoreV1().ConfigMaps(ns).List(testutil.Context(t, time.Minute), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range server.Items {
		got, err := inf.Lister().Namespace(ns).Get(server.Items[i].Name)
		require.NoError(t, err)
		assert.True(t, apiequality.Semantic.DeepEqual(server.Items[i].ObjectMeta, got.ObjectMeta))
	}
	a, b := pair(t, inf.Lister().List(labels.Everything()))
	assert.Equal(t, fmt.Sprintf("%p", a.Labels), fmt.Sprintf("%p", b.Labels), "labels shared")
	checked := 0
	for _, ex := range w.exchanges() {
		if ex.status == 200 && pathEndsWithURL(ex.url, "configmaps") {
			want := "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList"
			if strings.Contains(ex.url, "watch=true") {
				want = "application/vnd.kubernetes.protobuf;stream=watch"
			}
			assert.True(t, strings.HasPrefix(ex.contentType, want), "%s: %s", ex.url, ex.contentType)
			checked++
		}
	}
	assert.Positive(t, checked)
}

// pair returns two of objs, which must hold at least two.
func pair[T any](t *testing.T, objs []T) (T, T) {
	t.Helper()
	require.GreaterOrEqual(t, len(objs), 2)
	return objs[0], objs[1]
}
