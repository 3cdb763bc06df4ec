package watchstream_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/watchstream"
)

// An event whose object does not decode, but whose metadata names it,
// carries an *decoded.Undecodable as its object, with the event's own
// type, and the stream goes on: in protobuf and in JSON.
func TestWatchStreamUndecodable(t *testing.T) {
	limited := watchPod("b", "11", nil)
	limited.UID = "u-b"
	limited.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("123m")}
	events := []watch.Event{
		{Type: watch.Added, Object: watchPod("a", "10", nil)},
		{Type: watch.Modified, Object: limited},
		{Type: watch.Added, Object: watchPod("c", "12", nil)},
		{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "13"}}},
	}
	newPod := func() *corev1.Pod { return &corev1.Pod{} }
	for _, tc := range []struct {
		mediaType string
		// bad and worse spell the CPU limit that does not decode.
		bad, worse string
		path       string
		decoders   func(t *testing.T) watchstream.Decoders[*corev1.Pod]
	}{
		{runtime.ContentTypeProtobuf, "123m", "12xm", "spec.containers[0].resources.limits.cpu", func(t *testing.T) watchstream.Decoders[*corev1.Pod] {
			dec, err := protodec.New(reflect.TypeFor[*corev1.Pod](), protodec.Options{Share: true})
			require.NoError(t, err)
			return watchstream.Decoders[*corev1.Pod]{Protobuf: protodec.EventDecoder(dec, newPod)}
		}},
		{runtime.ContentTypeJSON, `"cpu":"123m"`, `"cpu":[1,2]`, "spec.containers[0].resources.limits.cpu", func(t *testing.T) watchstream.Decoders[*corev1.Pod] {
			dec, err := jsondec.New(reflect.TypeFor[*corev1.Pod](), jsondec.Options{Share: true})
			require.NoError(t, err)
			return watchstream.Decoders[*corev1.Pod]{JSON: jsondec.EventDecoder(dec, newPod)}
		}},
	} {
		t.Run(tc.mediaType, func(t *testing.T) {
			stream := encodeWatch(t, tc.mediaType, events, nil)
			require.Equal(t, 1, bytes.Count(stream.body, []byte(tc.bad)))
			if tc.mediaType == runtime.ContentTypeProtobuf {
				require.Len(t, tc.worse, len(tc.bad), "the frame keeps its length")
			}
			stream.body = bytes.Replace(stream.body, []byte(tc.bad), []byte(tc.worse), 1)
			client, _ := serveWatch(t, stream, false)
			body, err := watchRequest(client).Stream(t.Context())
			require.NoError(t, err)
			w, err := watchstream.FromResponse(t.Context(), body, tc.mediaType, "Pod", tc.decoders(t))
			require.NoError(t, err)
			got := collect(t, w)
			require.Len(t, got, len(events), "the stream goes on")
			for i, ev := range got {
				assert.Equal(t, events[i].Type, ev.Type)
			}
			assert.Equal(t, "a", got[0].Object.(*corev1.Pod).Name)
			assert.Equal(t, "c", got[2].Object.(*corev1.Pod).Name)
			assert.Equal(t, "13", got[3].Object.(*corev1.Pod).ResourceVersion)
			u, ok := got[1].Object.(*decoded.Undecodable)
			require.True(t, ok, "%T", got[1].Object)
			assert.Equal(t, decoded.Undecodable{Namespace: "ns", Name: "b", UID: "u-b", ResourceVersion: "11", Path: tc.path, Err: u.Err}, *u)
			require.Error(t, u.Err)
		})
	}
}
