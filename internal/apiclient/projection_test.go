package apiclient

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// metaViewOnly is a view of metadata alone without a kind.
type metaViewOnly struct {
	metav1.ObjectMeta `json:"metadata"`
}

func (v *metaViewOnly) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (v *metaViewOnly) DeepCopyObject() runtime.Object {
	c := *v
	v.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// configMapData is a view of config maps' data.
type configMapData struct {
	metav1.ObjectMeta `json:"metadata"`
	Data              map[string]string `json:"data"`
}

func (v *configMapData) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (v *configMapData) DeepCopyObject() runtime.Object   { c := *v; return &c }

func TestMetadataOnly(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		skip []string
		want bool
	}{
		{reflect.TypeFor[*metaOnly](), nil, true},
		{reflect.TypeFor[*metaViewOnly](), nil, true},
		{reflect.TypeFor[*nodeOf](), nil, false},
		{reflect.TypeFor[*nodeOf](), []string{"spec"}, true},
		{reflect.TypeFor[*nodeOf](), []string{"spec.nodeName"}, false},
		{reflect.TypeFor[*corev1.ConfigMap](), nil, false},
		{reflect.TypeFor[*corev1.ConfigMap](), []string{"data", "binaryData"}, false},
		{reflect.TypeFor[*corev1.ConfigMap](), []string{"data", "binaryData", "immutable"}, true},
		{reflect.TypeFor[*corev1.Pod](), []string{"spec", "status", "metadata.managedFields"}, true},
		{reflect.TypeFor[*noMeta](), nil, false},
	} {
		assert.Equal(t, tc.want, metadataOnly(tc.typ, tc.skip), "%v skipping %q", tc.typ, tc.skip)
	}
}

// metaCodecs encode the PartialObjectMetadata of meta.k8s.io/v1.
var metaCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddMetaToScheme(s)
	return serializer.NewCodecFactory(s)
}()

// encodeMeta encodes obj, of meta.k8s.io/v1, in mediaType.
func encodeMeta(t *testing.T, mediaType string, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(metaCodecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	var b bytes.Buffer
	require.NoError(t, metaCodecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion).Encode(obj, &b))
	return b.Bytes()
}

// projectingServer serves two config maps, listed, and a third, watched,
// as whole objects or, to a request that accepts it, as their metadata
// (as=PartialObjectMetadata), in protobuf if the request accepts it first
// and in JSON otherwise. With refuse, it answers a request for the
// metadata alone 406 Not Acceptable, as a server that cannot project
// does; with ignore, it answers it with whole objects, as a server that
// ignores the projection does. It records the Accept header of every
// request.
type projectingServer struct {
	projectingAnswers
	mu     sync.Mutex
	accept []string
}

// projectingAnswers say how a projectingServer answers a request for the
// metadata alone: with it, by default.
type projectingAnswers struct{ refuse, ignore bool }

func (s *projectingServer) start(t *testing.T) *rest.Config {
	cm := func(name, rv string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv, Labels: map[string]string{"app": "web"}},
			Data: map[string]string{"big": strings.Repeat("x", 1000)}}
	}
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}, Items: []corev1.ConfigMap{cm("a", "10"), cm("b", "11")}}
	added := cm("c", "13")
	metaOf := func(c *corev1.ConfigMap) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: c.ObjectMeta}
	}
	metaList := &metav1.PartialObjectMetadataList{ListMeta: list.ListMeta}
	for i := range list.Items {
		metaList.Items = append(metaList.Items, *metaOf(&list.Items[i]))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap"}}})
			return
		}
		accept := r.Header.Get("Accept")
		s.mu.Lock()
		s.accept = append(s.accept, accept)
		s.mu.Unlock()
		projected := strings.Contains(accept, "as=PartialObjectMetadata") && !s.ignore
		if projected && s.refuse {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotAcceptable)
			_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: "only whole objects are served"})
			return
		}
		media := runtime.ContentTypeJSON
		if strings.HasPrefix(accept, runtime.ContentTypeProtobuf) {
			media = runtime.ContentTypeProtobuf
		}
		encode := func(obj runtime.Object) []byte {
			if projected {
				return encodeMeta(t, media, obj)
			}
			return encodeAs(t, media, obj)
		}
		if r.URL.Query().Get("watch") != "true" {
			w.Header().Set("Content-Type", media)
			if projected {
				_, _ = w.Write(encode(metaList))
			} else {
				_, _ = w.Write(encode(list))
			}
			return
		}
		var obj runtime.Object = &added
		if projected {
			obj = metaOf(&added)
		}
		stream := media
		if media == runtime.ContentTypeProtobuf {
			stream += ";stream=watch"
		}
		w.Header().Set("Content-Type", stream)
		info, _ := runtime.SerializerInfoForMediaType(metaCodecs.SupportedMediaTypes(), media)
		frames := info.StreamSerializer.Framer.NewFrameWriter(w)
		var frame bytes.Buffer
		require.NoError(t, info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: encode(obj)}}, &frame))
		_, _ = frames.Write(frame.Bytes())
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

func (s *projectingServer) accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accept...)
}

// An informer whose objects hold only metadata, a view of it or the full
// type with every other field skipped, asks for the metadata alone, in
// protobuf where its type decodes from it, and decodes it into its type,
// its kind cleared; a server that refuses the projection, or answers it
// with whole objects, gets the requests of whole objects, from that one
// on.
func TestMetadataProjected(t *testing.T) {
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	projectedProtobufAccept := []string{projectedProtobuf.list, projectedProtobuf.watch}
	wholeProtobuf := []string{"application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf,application/json"}
	for _, tc := range []struct {
		name   string
		server projectingAnswers
		json   bool // the config asks for JSON
		lw     func(t *testing.T, a *Client) (*Funcs, error)
		want   []string // the Accept headers of the list and the watch
	}{
		{"view", projectingAnswers{}, false, projectedLW[*metaOnly](configMaps, Decoding{}), projectedProtobufAccept},
		{"view without TypeMeta", projectingAnswers{}, false, projectedLW[*metaViewOnly](configMaps, Decoding{}), projectedProtobufAccept},
		{"view skipping the rest", projectingAnswers{}, false, projectedLW[*configMapData](configMaps, Decoding{Skip: []string{"data"}}), []string{projectedJSON.list, projectedJSON.watch}},
		{"full type skipping the rest", projectingAnswers{}, false, projectedLW[*corev1.ConfigMap](configMaps, Decoding{Skip: []string{"data", "binaryData", "immutable"}}), projectedProtobufAccept},
		{"view refused", projectingAnswers{refuse: true}, false, projectedLW[*metaOnly](configMaps, Decoding{}), append([]string{projectedProtobuf.list}, wholeProtobuf...)},
		{"full type refused", projectingAnswers{refuse: true}, false, projectedLW[*corev1.ConfigMap](configMaps, Decoding{Skip: []string{"data", "binaryData", "immutable"}}), append([]string{projectedProtobuf.list}, wholeProtobuf...)},
		{"full type", projectingAnswers{}, false, projectedLW[*corev1.ConfigMap](configMaps, Decoding{}), wholeProtobuf},
		{"view, projection ignored", projectingAnswers{ignore: true}, false, projectedLW[*metaOnly](configMaps, Decoding{}), append([]string{projectedProtobuf.list}, wholeProtobuf...)},
		{"full type, projection ignored", projectingAnswers{ignore: true}, false, projectedLW[*corev1.ConfigMap](configMaps, Decoding{Skip: []string{"data", "binaryData", "immutable"}}), append([]string{projectedProtobuf.list}, wholeProtobuf...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &projectingServer{projectingAnswers: tc.server}
			a := New(nil, Config{RESTConfig: srv.start(t), Scheme: scheme.Scheme})
			lw, err := tc.lw(t, a)
			require.NoError(t, err)
			assert.NotNil(t, lw.Stream, "decoded by the library, streamed")
			names, labels, kinds, ev := listAndWatchMeta(t, lw)
			assert.Equal(t, []string{"a", "b"}, names)
			assert.Equal(t, []string{"web", "web"}, labels)
			assert.Equal(t, []string{"", ""}, kinds, "no item keeps the kind PartialObjectMetadata")
			require.Equal(t, watch.Added, ev.Type, "%v", ev.Object)
			assert.Equal(t, "c", ev.Object.(metav1.Object).GetName())
			assert.Equal(t, tc.want, srv.accepted())
		})
	}
}

// projectedLW returns the functions of an informer of T of resource.
func projectedLW[T Object](resource schema.GroupVersionResource, dec Decoding) func(t *testing.T, a *Client) (*Funcs, error) {
	return func(t *testing.T, a *Client) (*Funcs, error) {
		target, err := Resolve[T](scheme.Scheme, resource)
		require.NoError(t, err)
		return ListWatch[T](a, target, "", dec)
	}
}

// listAndWatchMeta lists through lw, returning the names, "app" labels
// and kinds of the items, and reads the first event of a watch.
func listAndWatchMeta(t *testing.T, lw *Funcs) (names, labels, kinds []string, ev watch.Event) {
	t.Helper()
	l, err := lw.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NoError(t, meta.EachListItem(l, func(obj runtime.Object) error {
		m := obj.(metav1.Object)
		names, labels = append(names, m.GetName()), append(labels, m.GetLabels()["app"])
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
		return nil
	}))
	w, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "12"})
	require.NoError(t, err)
	defer w.Stop()
	select {
	case ev = <-w.ResultChan():
	case <-time.After(time.Minute):
		t.Fatal("no watch event")
	}
	return names, labels, kinds, ev
}
