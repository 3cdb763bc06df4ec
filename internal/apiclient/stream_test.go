package apiclient

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/reflector"
)

// splitServer serves a list body in two parts: the first, which holds
// the first item whole, then, once the client has handed that item over
// (or after a minute), the rest; gzip-encoded if the client accepts it.
type splitServer struct {
	body    []byte
	media   string
	arrived chan struct{} // closed by the test when the first item arrives
	mu      sync.Mutex
	early   bool // the first item arrived before the rest was sent
	gzip    bool // to gzip the body
	gzipped bool // the body was gzipped: the client accepted it
}

func (s *splitServer) start(t *testing.T) *rest.Config {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}})
			return
		}
		w.Header().Set("Content-Type", s.media)
		out := io.Writer(w)
		flush := w.(http.Flusher).Flush
		if s.gzip && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out, flush = gz, func() { _ = gz.Flush(); w.(http.Flusher).Flush() }
			s.mu.Lock()
			s.gzipped = true
			s.mu.Unlock()
		}
		half := len(s.body) / 2
		_, _ = out.Write(s.body[:half])
		flush()
		select {
		case <-s.arrived:
			s.mu.Lock()
			s.early = true
			s.mu.Unlock()
		case <-time.After(time.Minute):
		case <-r.Context().Done():
		}
		_, _ = out.Write(s.body[half:])
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// nameItems records the names of the items of a stream, and signals the
// first.
type nameItems struct {
	first func()
	names []string
	once  sync.Once
}

func (n *nameItems) Put(obj runtime.Object) {
	n.names = append(n.names, obj.(metav1.Object).GetName())
	n.once.Do(n.first)
}
func (n *nameItems) Undecodable(u reflector.Undecodable) { n.names = append(n.names, "undecodable") }

// A list response is decoded and handed over item by item as it arrives:
// its first item before the server sent the rest of it, in protobuf and
// in JSON, typed, unstructured and as metadata, compressed or not.
func TestListStreamsAsTheBodyArrives(t *testing.T) {
	big := strings.Repeat("x", 100<<10) // items larger than any read buffer
	pods := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "12"}}
	meta := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "12"}}
	for _, name := range []string{"a", "b", "c"} {
		om := metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "10", Annotations: map[string]string{"big": big}}
		pods.Items = append(pods.Items, corev1.Pod{ObjectMeta: om})
		meta.Items = append(meta.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: om})
	}
	funcs := map[Shape]func(*testing.T, *Client) *Funcs{
		Typed: func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*corev1.Pod](a, podsTarget, "", Decoding{})
			require.NoError(t, err)
			return lw
		},
		Dynamic: func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*unstructured.Unstructured](a, Target{GVR: podsTarget.GVR, Shape: Dynamic}, "", Decoding{})
			require.NoError(t, err)
			return lw
		},
		Metadata: func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*metav1.PartialObjectMetadata](a, Target{GVR: podsTarget.GVR, Shape: Metadata}, "", Decoding{})
			require.NoError(t, err)
			return lw
		},
	}
	for _, tc := range []struct {
		name  string
		shape Shape
		media string
		list  runtime.Object
	}{
		{"typed protobuf", Typed, runtime.ContentTypeProtobuf, pods},
		{"typed JSON", Typed, runtime.ContentTypeJSON, pods},
		{"unstructured", Dynamic, runtime.ContentTypeJSON, pods},
		{"metadata protobuf", Metadata, runtime.ContentTypeProtobuf, meta},
		{"metadata JSON", Metadata, runtime.ContentTypeJSON, meta},
	} {
		for _, compressed := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: " gzip"}[compressed], func(t *testing.T) {
				s := &splitServer{body: encodeListAs(t, tc.media, tc.list), media: tc.media, arrived: make(chan struct{}), gzip: compressed}
				cfg := s.start(t)
				lw := funcs[tc.shape](t, New(nil, Config{RESTConfig: cfg, Scheme: scheme.Scheme}))
				require.NotNil(t, lw.Stream, "the library's decoders stream")
				items := &nameItems{first: func() { close(s.arrived) }}
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				got, err := lw.Stream(ctx, metav1.ListOptions{}, items)
				require.NoError(t, err)
				assert.Equal(t, []string{"a", "b", "c"}, items.names)
				assert.Equal(t, "12", got.ResourceVersion)
				s.mu.Lock()
				defer s.mu.Unlock()
				assert.True(t, s.early, "the first item was handed over before the server sent the rest")
				assert.Equal(t, compressed, s.gzipped)
			})
		}
	}
}

// encodeListAs encodes list, of a built-in or a meta.k8s.io type, in
// mediaType as kube-apiserver does.
func encodeListAs(t *testing.T, mediaType string, list runtime.Object) []byte {
	if _, ok := list.(*metav1.PartialObjectMetadataList); !ok {
		return encodeAs(t, mediaType, list)
	}
	sch := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(sch))
	codecs := serializer.NewCodecFactory(sch)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	var b bytes.Buffer
	require.NoError(t, codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion).Encode(list, &b))
	return b.Bytes()
}
