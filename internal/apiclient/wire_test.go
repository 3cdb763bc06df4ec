package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
)

// wirePods are the pods the test server serves: two in the list, a third
// in the watch; they share their labels.
func wirePods() (*corev1.PodList, *corev1.Pod) {
	pod := func(name, rv string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, Labels: map[string]string{"app": "web", "tier": "front"}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "registry/app:1"}}},
		}
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}, Items: []corev1.Pod{pod("a", "10"), pod("b", "11")}}
	added := pod("c", "13")
	return list, &added
}

// encodeAs encodes obj in mediaType as kube-apiserver does.
func encodeAs(t *testing.T, mediaType string, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(builtInCodecs().SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	var b bytes.Buffer
	require.NoError(t, builtInCodecs().EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &b))
	return b.Bytes()
}

// encodeEvents encodes a watch stream of events in mediaType.
func encodeEvents(t *testing.T, mediaType string, events ...watch.Event) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(builtInCodecs().SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	var body bytes.Buffer
	frames := info.StreamSerializer.Framer.NewFrameWriter(&body)
	for _, ev := range events {
		var frame bytes.Buffer
		raw := encodeAs(t, mediaType, ev.Object)
		require.NoError(t, info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}, &frame))
		_, err := frames.Write(frame.Bytes())
		require.NoError(t, err)
	}
	return body.Bytes()
}

// wireServer serves the pods' discovery, a list and a watch of them in
// the media type answer names ("" answers as asked: protobuf if the
// request accepts it first, else JSON), and records the Accept headers.
type wireServer struct {
	answer string
	mu     sync.Mutex
	accept []string
}

func (s *wireServer) start(t *testing.T) *rest.Config {
	list, added := wirePods()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}})
			return
		}
		s.mu.Lock()
		s.accept = append(s.accept, r.Header.Get("Accept"))
		s.mu.Unlock()
		media := s.answer
		if media == "" {
			media = runtime.ContentTypeJSON
			if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
				media = runtime.ContentTypeProtobuf
			}
		}
		if r.URL.Query().Get("watch") != "true" {
			w.Header().Set("Content-Type", media)
			body := []byte("pods: [a, b]")
			if media != "text/plain" {
				body = encodeAs(t, media, list)
			}
			_, _ = w.Write(body)
			return
		}
		stream := media
		switch media {
		case runtime.ContentTypeProtobuf:
			stream += ";stream=watch"
		case runtime.ContentTypeCBOR:
			stream = runtime.ContentTypeCBORSequence
		}
		w.Header().Set("Content-Type", stream)
		if media != "text/plain" {
			_, _ = w.Write(encodeEvents(t, media, watch.Event{Type: watch.Added, Object: added}))
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

func (s *wireServer) accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accept...)
}

// podsTarget is the target of a pod informer.
var podsTarget = Target{GVR: corev1.SchemeGroupVersion.WithResource("pods"), GVK: corev1.SchemeGroupVersion.WithKind("Pod")}

// listAndWatch lists pods through a and reads the first event of a watch.
func listAndWatch(t *testing.T, a *Client, dec Decoding) ([]corev1.Pod, watch.Event, error) {
	t.Helper()
	lw, err := ListWatch[*corev1.Pod](a, podsTarget, "", dec)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	l, err := lw.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, watch.Event{}, err
	}
	var items []corev1.Pod
	switch l := l.(type) {
	case *corev1.PodList:
		items = l.Items
	case *decoded.List[*corev1.Pod]:
		for _, p := range l.Items {
			items = append(items, *p)
		}
	default:
		t.Fatalf("a list of %T", l)
	}
	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: "12"})
	if err != nil {
		return items, watch.Event{}, err
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		return items, ev, nil
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	return nil, watch.Event{}, nil
}

// Whatever the request asked for, the response's Content-Type decides how
// a built-in type's list and watch are decoded: JSON by the library's JSON
// decoder (sharing equal labels), protobuf by its protobuf decoder, CBOR by
// client-go's codecs; each gives the objects the server sent. A content
// type that is none of the server's is an error naming the resource and
// the content type.
func TestBuiltInsDecodedByContentType(t *testing.T) {
	wantList, wantAdded := wirePods()
	for _, tc := range []struct {
		name        string
		contentType string // of the client's rest.Config
		answer      string
		clientset   bool // through a clientset, whose transport is the user's
		disable     bool
		wantAccept  string
		wantShared  bool
		wantErr     string
	}{
		{name: "JSON answer to a protobuf request", answer: runtime.ContentTypeJSON, wantAccept: "application/vnd.kubernetes.protobuf,application/json", wantShared: true},
		{name: "client configured for JSON", contentType: runtime.ContentTypeJSON, wantAccept: "application/json, */*", wantShared: true},
		{name: "protobuf", wantAccept: "application/vnd.kubernetes.protobuf,application/json", wantShared: true},
		{name: "JSON through a clientset", answer: runtime.ContentTypeJSON, clientset: true, wantAccept: "application/vnd.kubernetes.protobuf,application/json", wantShared: true},
		{name: "JSON, decoder off", contentType: runtime.ContentTypeJSON, disable: true, wantAccept: "application/json, */*"},
		{name: "an unknown content type", answer: "text/plain", wantErr: `list of pods.v1: the response's content type "text/plain" is none the library decodes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &wireServer{answer: tc.answer}
			cfg := srv.start(t)
			cfg.ContentType = tc.contentType
			a := New(nil, Config{RESTConfig: cfg, Scheme: scheme.Scheme})
			if tc.clientset {
				cs, err := kubernetes.NewForConfig(cfg)
				require.NoError(t, err)
				a = New(cs, Config{})
			}
			items, ev, err := listAndWatch(t, a, Decoding{Disabled: tc.disable})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, items, 2)
			for i := range items {
				assert.Equal(t, wantList.Items[i].ObjectMeta, items[i].ObjectMeta)
				assert.Equal(t, wantList.Items[i].Spec, items[i].Spec)
			}
			assert.Equal(t, tc.wantShared, fmt.Sprintf("%p", items[0].Labels) == fmt.Sprintf("%p", items[1].Labels), "labels shared")
			require.Equal(t, watch.Added, ev.Type, "%v", ev.Object)
			got, ok := ev.Object.(*corev1.Pod)
			require.True(t, ok, "%T", ev.Object)
			assert.Equal(t, wantAdded.ObjectMeta, got.ObjectMeta)
			assert.Equal(t, wantAdded.Spec, got.Spec)
			assert.Equal(t, metav1.TypeMeta{}, got.TypeMeta, "as client-go's decoder leaves it")
			for _, accept := range srv.accepted() {
				assert.Equal(t, tc.wantAccept, accept)
			}
		})
	}
}

// A watch answered in a content type that is none of the server's fails
// with an error naming the resource and the content type.
func TestWatchOfUnknownContentType(t *testing.T) {
	srv := &wireServer{answer: "text/plain"}
	a := New(nil, Config{RESTConfig: srv.start(t), Scheme: scheme.Scheme})
	lw, err := ListWatch[*corev1.Pod](a, podsTarget, "", Decoding{})
	require.NoError(t, err)
	_, err = lw.Watch(t.Context(), metav1.ListOptions{})
	require.ErrorContains(t, err, `watch of pods.v1: the response's content type "text/plain" is none the library decodes`)
}

// With client-go's ClientsAllowCBOR on, a list and a watch answered in
// CBOR are decoded by client-go's codecs into the objects the server sent.
func TestBuiltInsInCBOR(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true)
	wantList, wantAdded := wirePods()
	srv := &wireServer{answer: runtime.ContentTypeCBOR}
	cfg := srv.start(t)
	cfg.ContentType = runtime.ContentTypeCBOR
	items, ev, err := listAndWatch(t, New(nil, Config{RESTConfig: cfg, Scheme: scheme.Scheme}), Decoding{})
	require.NoError(t, err)
	require.Len(t, items, 2)
	for i := range items {
		assert.Equal(t, wantList.Items[i].ObjectMeta, items[i].ObjectMeta)
	}
	require.Equal(t, watch.Added, ev.Type, "%v", ev.Object)
	got, ok := ev.Object.(*corev1.Pod)
	require.True(t, ok, "%T", ev.Object)
	assert.Equal(t, wantAdded.ObjectMeta, got.ObjectMeta)
	assert.Equal(t, []string{"application/cbor, */*"}, srv.accepted()[:1])
}

// A metadata-only informer answered in JSON, as the server answers for
// resources without protobuf, decodes lists and watch events with the
// library's JSON decoder, sharing equal labels.
func TestMetadataDecodedFromJSON(t *testing.T) {
	meta := func(name, rv string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, Labels: map[string]string{"app": "web"}},
		}
	}
	list := metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "12"},
		Items:    []metav1.PartialObjectMetadata{meta("a", "10"), meta("b", "11")},
	}
	added := meta("c", "13")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/example.com/v1":
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true, Kind: "Widget"}}})
		case r.URL.Query().Get("watch") == "true":
			raw, _ := json.Marshal(&added)
			_ = json.NewEncoder(w).Encode(&metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: raw}})
		default:
			_ = json.NewEncoder(w).Encode(&list)
		}
	}))
	t.Cleanup(srv.Close)
	a := New(nil, Config{RESTConfig: &rest.Config{Host: srv.URL}, Scheme: scheme.Scheme})
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	lw, err := ListWatch[*metav1.PartialObjectMetadata](a, Target{GVR: gvr, Shape: Metadata}, "", Decoding{})
	require.NoError(t, err)
	require.NotNil(t, lw.Stream, "decoded by the library, streamed")
	l, err := lw.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	got, ok := l.(*decoded.List[*metav1.PartialObjectMetadata])
	require.True(t, ok, "decoded by the library's JSON decoder: %T", l)
	require.Len(t, got.Items, 2)
	for i, item := range got.Items {
		assert.Equal(t, list.Items[i], *item)
	}
	assert.Equal(t, fmt.Sprintf("%p", got.Items[0].Labels), fmt.Sprintf("%p", got.Items[1].Labels), "labels shared")

	w, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "12"})
	require.NoError(t, err)
	defer w.Stop()
	var ev watch.Event
	select {
	case ev = <-w.ResultChan():
	case <-time.After(time.Minute):
		t.Fatal("no watch event")
	}
	require.Equal(t, watch.Added, ev.Type, "%v", ev.Object)
	obj, ok := ev.Object.(*metav1.PartialObjectMetadata)
	require.True(t, ok, "%T", ev.Object)
	assert.Equal(t, added.ObjectMeta, obj.ObjectMeta)
}
