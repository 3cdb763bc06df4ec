package adapter_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/adapter"
)

// podView is what a test controller reads of a pod.
type podView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

func (p *podView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// viewServer serves, in one media type, a list of the test pods (with an
// annotation each) and a watch of a third pod and of the bookmark that
// ends a watch-list's initial events; it records the Accept header of
// each request.
type viewServer struct {
	mu      sync.Mutex
	accepts []string
}

func (s *viewServer) accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accepts...)
}

// start serves in mediaType, the list's body being list if it is not
// nil, and returns the requests of a client that prefers protobuf.
func (s *viewServer) start(t *testing.T, mediaType string, list []byte) adapter.Requests {
	t.Helper()
	pods, added := testPods()
	for i := range pods.Items {
		pods.Items[i].Annotations = map[string]string{"note": "large and unread"}
	}
	if list == nil {
		list = encode(t, mediaType, pods)
	}
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "14", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok { // a format the decoders do not know: its list only
		info = runtime.SerializerInfo{StreamSerializer: &runtime.StreamSerializerInfo{}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.accepts = append(s.accepts, r.Header.Get("Accept"))
		s.mu.Unlock()
		if r.URL.Query().Get("watch") != "true" {
			w.Header().Set("Content-Type", mediaType)
			_, _ = w.Write(list)
			return
		}
		stream := mediaType
		if mediaType == runtime.ContentTypeProtobuf {
			stream += ";stream=watch"
		}
		w.Header().Set("Content-Type", stream)
		fw := info.StreamSerializer.Framer.NewFrameWriter(w)
		for _, ev := range []struct {
			typ watch.EventType
			obj *corev1.Pod
		}{{watch.Added, added}, {watch.Bookmark, bookmark}} {
			var frame bytes.Buffer
			wev := &metav1.WatchEvent{Type: string(ev.typ), Object: runtime.RawExtension{Raw: encode(t, mediaType, ev.obj)}}
			if err := info.StreamSerializer.Serializer.Encode(wev, &frame); err != nil {
				t.Error(err)
				return
			}
			_, _ = fw.Write(frame.Bytes())
		}
	}))
	t.Cleanup(srv.Close)
	rc, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion:         &corev1.SchemeGroupVersion,
		NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		ContentType:          runtime.ContentTypeProtobuf,
		AcceptContentTypes:   runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON,
	}})
	require.NoError(t, err)
	return func(opts *metav1.ListOptions) *rest.Request {
		return rc.Get().Namespace("ns").Resource("pods").VersionedParams(opts, scheme.ParameterCodec)
	}
}

// A decoder of views decodes lists and watches of pods into views,
// from protobuf if it knows the pod's Go type, else from JSON, and asks
// for no other format; it skips the fields it is told to, but not on
// bookmarks.
func TestListWatchViews(t *testing.T) {
	const protobufOrJSON = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	for _, tc := range []struct {
		name, mediaType string
		api             reflect.Type // the Go type of the views' resource
		accept          string
	}{
		{"protobuf", runtime.ContentTypeProtobuf, reflect.TypeFor[*corev1.Pod](), protobufOrJSON},
		{"JSON answered to protobuf", runtime.ContentTypeJSON, reflect.TypeFor[*corev1.Pod](), protobufOrJSON},
		{"JSON only", runtime.ContentTypeJSON, nil, runtime.ContentTypeJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := adapter.NewViewDecoder(reflect.TypeFor[*podView](), tc.api, []string{"metadata.annotations"})
			require.NoError(t, err)
			srv := &viewServer{}
			lw, err := adapter.ListWatch(srv.start(t, tc.mediaType, nil), podsGVR, "Pod", dec, func() object { return &podView{} }, scheme.Codecs)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			l, err := lw.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			assert.Equal(t, "12", l.GetResourceVersion())
			var views []*podView
			require.NoError(t, meta.EachListItem(l, func(o runtime.Object) error {
				v, ok := o.(*podView)
				require.True(t, ok, "%T", o)
				views = append(views, v)
				return nil
			}))
			require.Len(t, views, 2)
			assert.Equal(t, "a", views[0].Name)
			assert.Equal(t, "11", views[1].ResourceVersion)
			assert.Equal(t, "node-1", views[1].Spec.NodeName)
			assert.Equal(t, map[string]string{"app": "web"}, views[0].Labels)
			assert.Nil(t, views[0].Annotations, "skipped")

			w, err := lw.Watch(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			defer w.Stop()
			var events []watch.Event
			for ev := range w.ResultChan() {
				events = append(events, ev)
			}
			require.Len(t, events, 2)
			require.Equal(t, watch.Added, events[0].Type)
			added, ok := events[0].Object.(*podView)
			require.True(t, ok, "%T", events[0].Object)
			assert.Equal(t, "c", added.Name)
			assert.Equal(t, "node-1", added.Spec.NodeName)
			require.Equal(t, watch.Bookmark, events[1].Type, "%v", events[1].Object)
			bookmark, ok := events[1].Object.(*podView)
			require.True(t, ok, "%T", events[1].Object)
			assert.Equal(t, "true", bookmark.Annotations[metav1.InitialEventsAnnotationKey], "bookmarks decoded whole")
			assert.Equal(t, []string{tc.accept, tc.accept}, srv.accepted())
		})
	}
}

// A view is checked against the Go type of its resource, and decodes no
// other type's objects; a list in a format its decoders do not decode
// fails rather than decoding into the full type.
func TestNewViewDecoder(t *testing.T) {
	_, err := adapter.NewViewDecoder(reflect.TypeFor[*struct{ Name string }](), nil, nil)
	require.ErrorContains(t, err, "is not a view")
	_, err = adapter.NewViewDecoder(nil, nil, nil)
	require.ErrorContains(t, err, "is not a view")

	type badView struct {
		informers.ViewMeta `json:"metadata"`
		Spec               struct {
			Node string `json:"node"`
		} `json:"spec"`
	}
	_, err = adapter.NewViewDecoder(reflect.TypeFor[*badView](), reflect.TypeFor[*corev1.Pod](), nil)
	require.ErrorContains(t, err, `has no field "node"`)
	_, err = adapter.NewViewDecoder(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), []string{"spec.nothing"})
	require.ErrorContains(t, err, `no field "nothing"`)

	dec, err := adapter.NewViewDecoder(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), nil)
	require.NoError(t, err)
	srv := &viewServer{}
	requests := srv.start(t, runtime.ContentTypeCBOR, []byte("\xd9\xd9\xf7 not decoded"))
	_, err = adapter.ListWatch(requests, podsGVR, "Pod", dec, func() object { return &corev1.Pod{} }, scheme.Codecs)
	require.ErrorContains(t, err, "for a decoder of views *adapter_test.podView")
	lw, err := adapter.ListWatch(requests, podsGVR, "Pod", dec, func() object { return &podView{} }, scheme.Codecs)
	require.NoError(t, err)
	_, err = lw.List(t.Context(), metav1.ListOptions{})
	require.ErrorContains(t, err, "PodList")
}

// widget is a custom resource's JSON-only Go type.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Group string `json:"group"`
		Size  int32  `json:"size"`
	} `json:"spec"`
}

// A view of a JSON-only Go type is checked against it: field names, with
// a hint, and JSON kinds; a view that matches it decodes from JSON.
func TestNewViewDecoderOfJSONOnlyType(t *testing.T) {
	type misspelt struct {
		informers.ViewMeta `json:"metadata"`
		Spec               struct {
			Grup string `json:"grup"`
		} `json:"spec"`
	}
	type wrongKind struct {
		informers.ViewMeta `json:"metadata"`
		Spec               struct {
			Size string `json:"size"`
		} `json:"spec"`
	}
	type correct struct {
		informers.ViewMeta `json:"metadata"`
		Spec               struct {
			Size int64 `json:"size"`
		} `json:"spec"`
	}
	api := reflect.TypeFor[*widget]()
	_, err := adapter.NewViewDecoder(reflect.TypeFor[*misspelt](), api, nil)
	require.ErrorContains(t, err, `field "spec.grup" (misspelt.Spec.Grup): object adapter_test.widget.spec has no field`)
	require.ErrorContains(t, err, `has no field "grup" (did you mean "group"?)`)
	_, err = adapter.NewViewDecoder(reflect.TypeFor[*wrongKind](), api, nil)
	require.ErrorContains(t, err, `field "spec.size" (wrongKind.Spec.Size): Go type string cannot hold the schema's integer`)
	_, err = adapter.NewViewDecoder(reflect.TypeFor[*correct](), api, nil)
	require.NoError(t, err)
	_, err = adapter.NewViewDecoder(reflect.TypeFor[*correct](), api, []string{"spec.sise"})
	require.ErrorContains(t, err, `has no field "sise" (did you mean "size"?)`, "SkipFields paths get hints too")
	_, err = adapter.NewViewDecoder(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), []string{"spec.nodeNmae"})
	require.ErrorContains(t, err, `has no field "nodeNmae" (did you mean "nodeName"?)`)
}
