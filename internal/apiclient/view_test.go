package apiclient

import (
	"context"
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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
)

// nodeOf is a view of pods: their metadata and node.
type nodeOf struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

func (v *nodeOf) DeepCopyObject() runtime.Object {
	c := *v
	v.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// metaOnly is a view of any resource.
type metaOnly struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func (v *metaOnly) DeepCopyObject() runtime.Object {
	c := *v
	v.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// wrongNode names a field pods do not have.
type wrongNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Node string `json:"node"`
	} `json:"spec"`
}

func (v *wrongNode) DeepCopyObject() runtime.Object { c := *v; return &c }

// noMeta has no metadata: no view.
type noMeta struct{ metav1.TypeMeta }

func (v *noMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func TestIsView(t *testing.T) {
	assert.True(t, IsView(reflect.TypeFor[*nodeOf]()))
	assert.True(t, IsView(reflect.TypeFor[*corev1.Pod]()), "a full type has the shape of a view")
	assert.False(t, IsView(reflect.TypeFor[nodeOf]()))
	assert.False(t, IsView(reflect.TypeFor[*noMeta]()))
	assert.False(t, IsView(reflect.TypeFor[*struct {
		Meta string `json:"metadata"`
	}]()))
}

// A view resolves to its resource and, for a resource the scheme knows,
// to its kind and Go type, against which it is checked; for another (a
// custom resource), to the resource alone.
func TestResolveView(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	for _, tc := range []struct {
		name    string
		resolve func() (Target, error)
		want    Target
		wantErr string
	}{
		{"pods", func() (Target, error) { return Resolve[*nodeOf](scheme.Scheme, pods) },
			Target{Shape: View, GVK: corev1.SchemeGroupVersion.WithKind("Pod"), GVR: pods, API: reflect.TypeFor[*corev1.Pod]()}, ""},
		{"endpoints", func() (Target, error) {
			return Resolve[*metaOnly](scheme.Scheme, corev1.SchemeGroupVersion.WithResource("endpoints"))
		}, Target{Shape: View, GVK: corev1.SchemeGroupVersion.WithKind("Endpoints"), GVR: corev1.SchemeGroupVersion.WithResource("endpoints"), API: reflect.TypeFor[*corev1.Endpoints]()}, ""},
		{"deployments", func() (Target, error) {
			return Resolve[*metaOnly](scheme.Scheme, appsv1.SchemeGroupVersion.WithResource("deployments"))
		}, Target{Shape: View, GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), API: reflect.TypeFor[*appsv1.Deployment]()}, ""},
		{"a custom resource", func() (Target, error) { return Resolve[*nodeOf](scheme.Scheme, widgets) },
			Target{Shape: View, GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1"}, GVR: widgets}, ""},
		{"no resource", func() (Target, error) { return Resolve[*nodeOf](scheme.Scheme, schema.GroupVersionResource{}) },
			Target{}, "*apiclient.nodeOf is not registered in the scheme: register it (FactoryOptions.Scheme), or, for a view, set Options.Resource"},
		{"a field pods have not", func() (Target, error) { return Resolve[*wrongNode](scheme.Scheme, pods) },
			Target{}, `pods.v1: view *apiclient.wrongNode of *v1.Pod: wrongNode.Spec.Node: v1.PodSpec has no field "node"`},
		{"no view", func() (Target, error) { return Resolve[*noMetaObject](scheme.Scheme, pods) },
			Target{}, "is not registered in the scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.resolve()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// noMetaObject is an Object without a metadata field in JSON.
type noMetaObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (v *noMetaObject) DeepCopyObject() runtime.Object { c := *v; return &c }

// listAndWatchViews lists views through lw and reads the first event of a
// watch.
func listAndWatchViews[T Object](t *testing.T, lw *Funcs) ([]T, watch.Event) {
	t.Helper()
	l, err := lw.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	got, ok := l.(*decoded.List[T])
	require.True(t, ok, "decoded by the library's decoders: %T", l)
	w, err := lw.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "12"})
	require.NoError(t, err)
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		return got.Items, ev
	case <-time.After(time.Minute):
		t.Fatal("no watch event")
	}
	return nil, watch.Event{}
}

// Views of a built-in type are asked for in protobuf and decoded from it,
// or from JSON if the server answers so; their decoders are the view's.
func TestViewsOfBuiltInsOnTheWire(t *testing.T) {
	wantList, wantAdded := wirePods()
	target, err := Resolve[*nodeOf](scheme.Scheme, corev1.SchemeGroupVersion.WithResource("pods"))
	require.NoError(t, err)
	for _, answer := range []string{"", runtime.ContentTypeJSON} {
		t.Run("answer="+answer, func(t *testing.T) {
			srv := &wireServer{answer: answer}
			a := New(nil, Config{RESTConfig: srv.start(t), Scheme: scheme.Scheme})
			lw, err := ListWatch[*nodeOf](a, target, "", Decoding{Skip: []string{"metadata.labels"}})
			require.NoError(t, err)
			assert.NotNil(t, lw.Stream, "decoded by the library, streamed")
			items, ev := listAndWatchViews[*nodeOf](t, lw)
			require.Len(t, items, 2)
			for i, v := range items {
				assert.Equal(t, wantList.Items[i].Name, v.Name)
				assert.Equal(t, wantList.Items[i].ResourceVersion, v.ResourceVersion)
				assert.Equal(t, wantList.Items[i].Spec.NodeName, v.Spec.NodeName)
				assert.Nil(t, v.Labels, "skipped")
			}
			require.Equal(t, watch.Added, ev.Type, "%v", ev.Object)
			got, ok := ev.Object.(*nodeOf)
			require.True(t, ok, "%T", ev.Object)
			assert.Equal(t, wantAdded.Name, got.Name)
			assert.Equal(t, wantAdded.Spec.NodeName, got.Spec.NodeName)
			for _, accept := range srv.accepted() {
				assert.Equal(t, "application/vnd.kubernetes.protobuf,application/json", accept)
			}
		})
	}
}

// Views of a custom resource are asked for in JSON, of the kind discovery
// tells; a bookmark keeps the annotations a view skips, whose annotation
// ends a watch-list.
func TestViewsOfCustomResources(t *testing.T) {
	widget := func(name, rv string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv, "annotations": map[string]any{"big": "x"}},
			"spec":     map[string]any{"nodeName": "n-" + name, "size": 3}}
	}
	var mu sync.Mutex
	var accept []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/example.com/v1" {
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true, Kind: "Widget"}}})
			return
		}
		if strings.HasPrefix(r.URL.Path, "/openapi/") {
			http.NotFound(w, r) // the view runs unchecked
			return
		}
		mu.Lock()
		accept = append(accept, r.Header.Get("Accept"))
		mu.Unlock()
		switch {
		case r.URL.Query().Get("watch") == "true":
			bookmark := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"resourceVersion": "13", "annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}}}
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "BOOKMARK", "object": bookmark})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
				"metadata": map[string]any{"resourceVersion": "12"}, "items": []any{widget("a", "10"), widget("b", "11")}})
		}
	}))
	defer srv.Close()
	a := New(nil, Config{RESTConfig: &rest.Config{Host: srv.URL}, Scheme: scheme.Scheme})
	target, err := Resolve[*nodeOf](scheme.Scheme, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	require.NoError(t, err)
	lw, err := ListWatch[*nodeOf](a, target, "", Decoding{Skip: []string{"metadata.annotations"}})
	require.NoError(t, err)
	items, ev := listAndWatchViews[*nodeOf](t, lw)
	require.Len(t, items, 2)
	assert.Equal(t, "n-a", items[0].Spec.NodeName)
	assert.Equal(t, "11", items[1].ResourceVersion)
	assert.Nil(t, items[0].Annotations, "skipped")
	require.Equal(t, watch.Bookmark, ev.Type, "%v", ev.Object)
	bookmark, ok := ev.Object.(*nodeOf)
	require.True(t, ok, "%T", ev.Object)
	assert.Equal(t, "true", bookmark.Annotations[metav1.InitialEventsAnnotationKey], "bookmarks decoded whole")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"application/json", "application/json"}, accept)
}

// One view type of two resources, through shared decoders, decodes each
// with a plan of its own resource's type; a view of metadata alone also
// has the one decoder of PartialObjectMetadata that both resources'
// projections share.
func TestViewDecodersByResource(t *testing.T) {
	ds := new(Decoders)
	srv := &wireServer{}
	a := New(nil, Config{RESTConfig: srv.start(t), Scheme: scheme.Scheme, Decoders: ds})
	for _, resource := range []string{"pods", "configmaps"} {
		target, err := Resolve[*metaOnly](scheme.Scheme, corev1.SchemeGroupVersion.WithResource(resource))
		require.NoError(t, err)
		_, err = ListWatch[*metaOnly](a, target, "", Decoding{})
		require.NoError(t, err)
	}
	protobuf := 0
	for key := range ds.byType {
		if !key.json {
			protobuf++
		}
	}
	assert.Equal(t, 3, protobuf, "a protobuf decoder per resource, and one of their metadata")
}

// podServer serves a list of pods and a watch whose events it is given.
type podServer struct {
	list   *corev1.PodList
	events []watch.Event
}

func (s *podServer) List(context.Context, schema.GroupVersionResource, string, metav1.ListOptions) (runtime.Object, error) {
	return s.list, nil
}

func (s *podServer) Watch(context.Context, schema.GroupVersionResource, string, metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(len(s.events), false)
	for _, ev := range s.events {
		w.Action(ev.Type, ev.Object)
	}
	return w, nil
}

// Over a Server, which hands out pods, views are projected through JSON,
// skipping what the view skips, but not on bookmarks.
func TestViewsOverAServer(t *testing.T) {
	list, added := wirePods()
	list.Items[0].Annotations = map[string]string{"big": "x"}
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "14", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	srv := &podServer{list: list, events: []watch.Event{{Type: watch.Added, Object: added}, {Type: watch.Bookmark, Object: bookmark}}}
	a := New(nil, Config{Server: srv})
	target, err := Resolve[*nodeOf](scheme.Scheme, corev1.SchemeGroupVersion.WithResource("pods"))
	require.NoError(t, err)
	lw, err := ListWatch[*nodeOf](a, target, "", Decoding{Skip: []string{"metadata.annotations"}})
	require.NoError(t, err)
	items, ev := listAndWatchViews[*nodeOf](t, lw)
	require.Len(t, items, 2)
	assert.Equal(t, "a", items[0].Name)
	assert.Equal(t, "node-1", items[0].Spec.NodeName)
	assert.Nil(t, items[0].Annotations, "skipped")
	l, err := lw.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, "12", l.GetResourceVersion())
	require.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, "c", ev.Object.(*nodeOf).Name)

	w, err := lw.Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	<-w.ResultChan()
	end := <-w.ResultChan()
	require.Equal(t, watch.Bookmark, end.Type)
	assert.Equal(t, "true", end.Object.(*nodeOf).Annotations[metav1.InitialEventsAnnotationKey], "bookmarks decoded whole")
}
