package watchstream_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/watchstream"
)

// watchStream is a watch response: events encoded as kube-apiserver
// encodes them.
type watchStream struct {
	contentType string
	body        []byte
}

// encodeWatch encodes events in mediaType, each object with the codec the
// server uses; extra is appended to the body as it is.
func encodeWatch(t *testing.T, mediaType string, events []watch.Event, extra []byte) watchStream {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	objects := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	var body bytes.Buffer
	frames := info.StreamSerializer.Framer.NewFrameWriter(&body)
	for _, ev := range events {
		raw, err := runtime.Encode(objects, ev.Object)
		require.NoError(t, err)
		var frame bytes.Buffer
		require.NoError(t, info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}, &frame))
		_, err = frames.Write(frame.Bytes())
		require.NoError(t, err)
	}
	body.Write(extra)
	return watchStream{contentType: mediaType, body: body.Bytes()}
}

// serveWatch serves stream to every request until the test ends, and
// counts the requests.
func serveWatch(t *testing.T, stream watchStream, hold bool) (*rest.RESTClient, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", stream.contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(stream.body)
		if hold {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	client, err := rest.RESTClientFor(&rest.Config{
		Host:    srv.URL,
		APIPath: "/api",
		ContentConfig: rest.ContentConfig{
			GroupVersion:         &corev1.SchemeGroupVersion,
			NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		},
	})
	require.NoError(t, err)
	return client, &requests
}

// watchPods watches pods through req with Watch.
func watchPods(ctx context.Context, req *rest.Request, kind string) (watch.Interface, error) {
	newPod, ok := watchstream.NewFunc(&corev1.Pod{})
	if !ok {
		return nil, errors.New("a Pod does not decode from protobuf")
	}
	return watchstream.Watch(ctx, req, kind, newPod)
}

func watchRequest(client *rest.RESTClient) *rest.Request {
	return client.Get().Resource("pods").Param("watch", "true").UseProtobufAsDefault()
}

// collect reads w until it closes.
func collect(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var got []watch.Event
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				return got
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatal("the watch did not end")
		}
	}
}

// endStatus checks got, the events of a watch whose first event was good:
// with wantError empty, the watch ended after it; otherwise an Error event
// followed it, whose status endStatus returns (nil in the first case).
func endStatus(t *testing.T, got []watch.Event, wantError string) *metav1.Status {
	t.Helper()
	if wantError == "" {
		assert.Len(t, got, 1)
		return nil
	}
	require.Len(t, got, 2)
	require.Equal(t, watch.Error, got[1].Type)
	status, ok := got[1].Object.(*metav1.Status)
	require.True(t, ok, "%T", got[1].Object)
	return status
}

func watchPod(name, rv string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "node-" + name, Containers: []corev1.Container{{Name: "app", Image: "registry/app:" + rv}}},
	}
}

// The decoder gives what client-go's StreamWatcher gives, event by event,
// for protobuf and, through client-go, for JSON.
func TestWatchStreamMatchesClientGo(t *testing.T) {
	events := []watch.Event{
		{Type: watch.Added, Object: watchPod("a", "10", map[string]string{"app": "web"})},
		{Type: watch.Modified, Object: watchPod("a", "11", map[string]string{"app": "web", "tier": "front"})},
		{Type: watch.Added, Object: watchPod("a-much-longer-name-than-the-first-one", "12", nil)},
		{Type: watch.Deleted, Object: watchPod("a", "13", nil)},
		{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "14", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
		{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}},
	}
	for _, tc := range []struct {
		name      string
		mediaType string
		requests  int32 // per watch
	}{
		{"protobuf", runtime.ContentTypeProtobuf, 1},
		{"json", runtime.ContentTypeJSON, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, requests := serveWatch(t, encodeWatch(t, tc.mediaType, events, nil), false)
			want, err := watchRequest(client).Watch(t.Context())
			require.NoError(t, err)
			got, err := watchPods(t.Context(), watchRequest(client), "Pod")
			require.NoError(t, err)
			gotEvents := collect(t, got)
			assert.Equal(t, collect(t, want), gotEvents)
			require.Len(t, gotEvents, len(events))
			for i, ev := range gotEvents {
				assert.Equal(t, events[i].Type, ev.Type)
			}
			assert.Equal(t, 1+tc.requests, requests.Load(), "client-go's watch, then ours")
		})
	}
}

// A stream that ends in the middle of a frame closes the watch, as a
// closed connection does; a frame that does not decode, or carries an
// object of another kind, is an Error event whose status says the client
// failed, with client-go's cause, but no HTTP code: not a 500 from the
// server.
func TestWatchStreamFailures(t *testing.T) {
	good := []watch.Event{{Type: watch.Added, Object: watchPod("a", "10", nil)}}
	for _, tc := range []struct {
		name      string
		stream    watchStream
		wantError string
	}{
		{"truncated frame", encodeWatch(t, runtime.ContentTypeProtobuf, good, []byte{0, 0, 1, 0, 1, 2, 3}), ""},
		{"not protobuf", encodeWatch(t, runtime.ContentTypeProtobuf, good, []byte{0, 0, 0, 3, 0xff, 0xff, 0xff}), "decoding watch event: malformed protobuf"},
		{"oversized frame", encodeWatch(t, runtime.ContentTypeProtobuf, good, []byte{0x7f, 0, 0, 0}), "larger than"},
		{"another kind", encodeWatch(t, runtime.ContentTypeProtobuf, append(good, watch.Event{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}}), nil), "carries a ConfigMap, want Pod"},
		{"unknown event type", encodeWatch(t, runtime.ContentTypeProtobuf, append(good, watch.Event{Type: "RENAMED", Object: watchPod("b", "11", nil)}), nil), `unknown watch event type "RENAMED"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := serveWatch(t, tc.stream, false)
			w, err := watchPods(t.Context(), watchRequest(client), "Pod")
			require.NoError(t, err)
			got := collect(t, w)
			require.NotEmpty(t, got)
			assert.Equal(t, good[0], got[0])
			status := endStatus(t, got, tc.wantError)
			if status == nil {
				return
			}
			assert.Zero(t, status.Code, "no response had this code")
			assert.Equal(t, metav1.StatusReasonUnknown, status.Reason)
			assert.Contains(t, status.Message, "the client failed reading the watch stream of Pod: ")
			assert.Contains(t, status.Message, tc.wantError)
			require.NotNil(t, status.Details)
			var causes []string
			for _, c := range status.Details.Causes {
				if c.Type == "ClientWatchDecoding" {
					causes = append(causes, c.Message)
				}
			}
			require.Len(t, causes, 1, "client-go's cause: %v", status.Details.Causes)
			assert.Contains(t, causes[0], tc.wantError)
		})
	}
}

// Stop ends a stream the server holds open, and closes the result channel,
// whether or not the informer reads what was decoded.
func TestWatchStreamStop(t *testing.T) {
	events := make([]watch.Event, 200) // more than the queue holds
	for i := range events {
		events[i] = watch.Event{Type: watch.Added, Object: watchPod("a", "10", nil)}
	}
	client, _ := serveWatch(t, encodeWatch(t, runtime.ContentTypeProtobuf, events, nil), true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := watchPods(ctx, watchRequest(client), "Pod")
	require.NoError(t, err)
	<-w.ResultChan()
	w.Stop()
	collect(t, w)
}

// Types without a protobuf decoding of their own are refused before any
// request.
func TestWatchRefusesTypesWithoutProtobuf(t *testing.T) {
	_, ok := watchstream.NewFunc(&unstructured.Unstructured{})
	assert.False(t, ok, "NewFunc of an unstructured object")
	_, ok = watchstream.NewFunc[runtime.Object](nil)
	assert.False(t, ok, "NewFunc of no object")
	client, requests := serveWatch(t, watchStream{contentType: runtime.ContentTypeJSON}, false)
	_, err := watchstream.Watch(t.Context(), watchRequest(client), "Pod", func() runtime.Object { return &unstructured.Unstructured{} })
	require.ErrorContains(t, err, "does not decode from protobuf")
	assert.Zero(t, requests.Load())
}
