package watchstream_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/watchstream"
)

// watchPodsJSON watches pods through req with WatchJSON and the library's
// JSON decoder, leaving apiVersion and kind empty as client-go does.
func watchPodsJSON(t *testing.T, ctx context.Context, req *rest.Request) watch.Interface {
	dec, err := jsondec.New(reflect.TypeFor[*corev1.Pod](), jsondec.Options{Share: true})
	require.NoError(t, err)
	w, err := watchstream.WatchJSON(ctx, req, "Pod", func(data []byte, _ bool) (*corev1.Pod, error) {
		pod, err := decoded.Object(dec, data, func() *corev1.Pod { return &corev1.Pod{} })
		if err == nil {
			pod.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		return pod, err
	})
	require.NoError(t, err)
	return w
}

// A JSON stream decoded by WatchJSON gives what client-go's StreamWatcher
// gives, event by event, in one request.
func TestJSONWatchStreamMatchesClientGo(t *testing.T) {
	events := []watch.Event{
		{Type: watch.Added, Object: watchPod("a", "10", map[string]string{"app": "web"})},
		{Type: watch.Modified, Object: watchPod("a", "11", map[string]string{"app": "web", "tier": "front"})},
		{Type: watch.Deleted, Object: watchPod("a", "13", nil)},
		{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "14", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
		{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}},
	}
	client, requests := serveWatch(t, encodeWatch(t, runtime.ContentTypeJSON, events, nil), false)
	want, err := watchRequest(client).Watch(t.Context())
	require.NoError(t, err)
	got := collect(t, watchPodsJSON(t, t.Context(), watchRequest(client)))
	assert.Equal(t, collect(t, want), got)
	require.Len(t, got, len(events))
	assert.Equal(t, int32(2), requests.Load(), "client-go's watch, then ours")
}

// A JSON stream cut short ends the watch; a line that is not JSON, or
// carries an object of another kind or a field of the wrong type, is an
// Error event naming what failed, so that the informer watches again.
func TestJSONWatchStreamFailures(t *testing.T) {
	good := []watch.Event{{Type: watch.Added, Object: watchPod("a", "10", nil)}}
	for _, tc := range []struct {
		name      string
		extra     string
		wantError string
	}{
		{"truncated", `{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"b"`, ""},
		{"not JSON", "{\"type\":\"ADDED\",\"object\":{]}\n", "not valid JSON"},
		{"another kind", `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"c"}}}` + "\n", "ConfigMap"},
		{"wrong type", `{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":7}}}` + "\n", "metadata.name"},
		{"unknown event type", `{"type":"RENAMED","object":{"kind":"Pod"}}` + "\n", "unknown watch event type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := encodeWatch(t, runtime.ContentTypeJSON, good, []byte(tc.extra))
			client, _ := serveWatch(t, stream, false)
			got := collect(t, watchPodsJSON(t, t.Context(), watchRequest(client)))
			require.NotEmpty(t, got)
			assert.Equal(t, "a", got[0].Object.(*corev1.Pod).Name)
			if status := endStatus(t, got, tc.wantError); status != nil {
				assert.Contains(t, status.Message, tc.wantError)
			}
		})
	}
}
