package benchfixtures_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// A ConfigMapServer serves its config maps whole to a clientset and their
// metadata alone to client-go's metadata client, as lists and as
// watch-list streams that end with the bookmark of the initial events,
// and counts the bytes it sends.
func TestConfigMapServer(t *testing.T) {
	const count, size = 3, 5000
	s, err := bf.NewConfigMapServer("tenant", count, size)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	ctx := t.Context()

	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	full, err := cs.CoreV1().ConfigMaps("tenant").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, full.Items, count)
	for i := range count {
		want := bf.NewConfigMap("tenant", i, size)
		assert.Equal(t, want.Name, full.Items[i].Name)
		assert.Equal(t, want.Data, full.Items[i].Data)
	}
	wholeBytes := s.Requests().Bytes
	assert.Greater(t, wholeBytes, int64(count*size))

	mc, err := metadata.NewForConfig(s.Config())
	require.NoError(t, err)
	configMaps := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("tenant")
	meta, err := configMaps.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, meta.Items, count)
	for i := range count {
		want := bf.NewConfigMap("tenant", i, size)
		assert.True(t, apiequality.Semantic.DeepEqual(want.ObjectMeta, meta.Items[i].ObjectMeta), "%s", want.Name)
	}
	got := s.Requests()
	assert.Less(t, got.Bytes-wholeBytes, int64(size), "the metadata alone")
	assert.Equal(t, int64(1), got.Projected)
	assert.Equal(t, int64(2), got.Lists)

	w, err := configMaps.Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer w.Stop()
	var names []string
	for ev := range w.ResultChan() {
		m, ok := ev.Object.(*metav1.PartialObjectMetadata)
		require.True(t, ok, "%T", ev.Object)
		if ev.Type == watch.Bookmark {
			assert.Equal(t, "true", m.Annotations[metav1.InitialEventsAnnotationKey])
			break
		}
		require.Equal(t, watch.Added, ev.Type)
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"spark-conf-0000", "spark-conf-0001", "spark-conf-0002"}, names)
	assert.Equal(t, int64(1), s.Requests().WatchLists)
}
