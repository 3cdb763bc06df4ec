package adapter_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/adapter"
)

// object is the type of the objects of the tests' informers: an
// interface, as an adapter's (controller-runtime's client.Object) is.
type object interface {
	runtime.Object
	metav1.Object
}

// testPods are the pods the test server serves: two in the list, a third
// in the watch; they share their labels.
func testPods() (*corev1.PodList, *corev1.Pod) {
	pod := func(name, rv string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv, Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "registry/app:1"}}},
		}
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}, Items: []corev1.Pod{pod("a", "10"), pod("b", "11")}}
	added := pod("c", "13")
	return list, &added
}

// encode encodes obj in mediaType as kube-apiserver does.
func encode(t *testing.T, mediaType string, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	var b bytes.Buffer
	require.NoError(t, scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &b))
	return b.Bytes()
}

// serve serves the list and a watch of the test pods in mediaType and
// returns the requests of a client that prefers protobuf.
func serve(t *testing.T, mediaType string) adapter.Requests {
	t.Helper()
	list, added := testPods()
	return serveList(t, mediaType, encode(t, mediaType, list), added)
}

// serveList serves list, a list body in mediaType, and a watch of added,
// and returns the requests of a client that prefers protobuf.
func serveList(t *testing.T, mediaType string, list []byte, added *corev1.Pod) adapter.Requests {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	require.True(t, ok, mediaType)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		var frame bytes.Buffer
		ev := &metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: encode(t, mediaType, added)}}
		if err := info.StreamSerializer.Serializer.Encode(ev, &frame); err != nil {
			t.Error(err)
			return
		}
		_, _ = info.StreamSerializer.Framer.NewFrameWriter(w).Write(frame.Bytes())
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

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// listAndWatch lists through lw and reads the first event of its watch.
func listAndWatch(t *testing.T, lw *informers.ListWatch[object, informers.List]) (informers.List, watch.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	l, err := lw.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w, err := lw.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		return l, ev
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	return nil, watch.Event{}
}

// A decoder of pods decodes lists and watches in protobuf and in JSON into
// objects without the fields it skips, which share their equal parts;
// without a decoder, client-go's codecs and the generated code decode
// them whole.
func TestListWatchTyped(t *testing.T) {
	newPod := func() object { return &corev1.Pod{} }
	for _, tc := range []struct {
		name, mediaType string
		decode          bool
	}{
		{"protobuf", runtime.ContentTypeProtobuf, true},
		{"JSON", runtime.ContentTypeJSON, true},
		{"protobuf without a decoder", runtime.ContentTypeProtobuf, false},
		{"JSON without a decoder", runtime.ContentTypeJSON, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dec *adapter.Decoder
			if tc.decode {
				var err error
				dec, err = adapter.NewDecoder(reflect.TypeFor[*corev1.Pod](), []string{"spec.nodeName"})
				require.NoError(t, err)
				require.NotNil(t, dec)
			}
			lw, err := adapter.ListWatch(serve(t, tc.mediaType), podsGVR, "Pod", dec, newPod, scheme.Codecs)
			require.NoError(t, err)
			l, ev := listAndWatch(t, lw)
			assert.Equal(t, "12", l.GetResourceVersion())
			items := podsOf(t, l)
			require.Len(t, items, 2)
			assert.Equal(t, "a", items[0].Name)
			assert.Equal(t, "registry/app:1", items[1].Spec.Containers[0].Image)
			require.Equal(t, watch.Added, ev.Type)
			added, ok := ev.Object.(*corev1.Pod)
			require.True(t, ok, "%T", ev.Object)
			assert.Equal(t, "c", added.Name)
			if tc.decode {
				assert.Empty(t, items[0].Spec.NodeName, "skipped")
				assert.Empty(t, added.Spec.NodeName, "skipped")
				assert.Equal(t, reflect.ValueOf(items[0].Labels).Pointer(), reflect.ValueOf(items[1].Labels).Pointer(), "labels shared")
			} else {
				assert.Equal(t, "node-1", items[0].Spec.NodeName)
				assert.NotEqual(t, reflect.ValueOf(items[0].Labels).Pointer(), reflect.ValueOf(items[1].Labels).Pointer())
			}
		})
	}
}

// podsOf returns the items of list l, pods.
func podsOf(t *testing.T, l runtime.Object) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	require.NoError(t, meta.EachListItem(l, func(o runtime.Object) error {
		pod, ok := o.(*corev1.Pod)
		require.True(t, ok, "%T", o)
		pods = append(pods, pod)
		return nil
	}))
	return pods
}

// An unstructured decoder decodes JSON lists and watches into
// unstructured objects.
func TestListWatchUnstructured(t *testing.T) {
	lw, err := adapter.ListWatch[object](serve(t, runtime.ContentTypeJSON), podsGVR, "Pod", adapter.NewUnstructuredDecoder(), nil, scheme.Codecs)
	require.NoError(t, err)
	l, ev := listAndWatch(t, lw)
	ul, ok := l.(*unstructured.UnstructuredList)
	require.True(t, ok, "%T", l)
	require.Len(t, ul.Items, 2)
	assert.Equal(t, "b", ul.Items[1].GetName())
	u, ok := ev.Object.(*unstructured.Unstructured)
	require.True(t, ok, "%T", ev.Object)
	assert.Equal(t, "c", u.GetName())
}

// A decoder decodes objects of its own type only; a type it does not know
// has none.
func TestNewDecoder(t *testing.T) {
	dec, err := adapter.NewDecoder(reflect.TypeFor[*corev1.Pod](), nil)
	require.NoError(t, err)
	_, err = adapter.ListWatch(serve(t, runtime.ContentTypeProtobuf), podsGVR, "Pod", dec, func() object { return &corev1.ConfigMap{} }, scheme.Codecs)
	require.ErrorContains(t, err, "for a decoder of *v1.Pod")

	dec, err = adapter.NewDecoder(reflect.TypeFor[*unstructured.Unstructured](), nil)
	require.NoError(t, err)
	assert.Nil(t, dec, "unstructured objects have NewUnstructuredDecoder")

	_, err = adapter.NewDecoder(reflect.TypeFor[*corev1.Pod](), []string{"spec.nothing"})
	require.ErrorContains(t, err, `no field "nothing"`)
	_, err = adapter.NewDecoder(reflect.TypeFor[*corev1.Pod](), []string{"metadata.name"})
	require.ErrorContains(t, err, "the informer needs it")
}

// A Clearer zeroes the fields to skip of objects of its type, and leaves
// others alone.
func TestClearer(t *testing.T) {
	c, err := adapter.NewClearer(reflect.TypeFor[*corev1.Pod](), []string{"spec.nodeName", "metadata.labels"})
	require.NoError(t, err)
	_, pod := testPods()
	c.Clear(pod)
	assert.Empty(t, pod.Spec.NodeName)
	assert.Nil(t, pod.Labels)
	assert.Equal(t, "c", pod.Name)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}
	c.Clear(cm)
	assert.NotNil(t, cm.Labels)

	_, err = adapter.NewClearer(reflect.TypeFor[*corev1.Pod](), []string{"spec.nothing"})
	require.ErrorContains(t, err, `no field "nothing"`)
	_, err = adapter.NewClearer(reflect.TypeFor[*corev1.Pod](), []string{"metadata.uid"})
	require.True(t, strings.Contains(err.Error(), "the informer needs it"), err)
}

// A list whose items hold one that does not decode returns the others,
// and names that one in its Undecodable, in protobuf and in JSON.
func TestListWatchUndecodable(t *testing.T) {
	list, added := testPods()
	list.Items = append(list.Items, list.Items[1], list.Items[0])
	list.Items[1].Name, list.Items[1].UID = "bad", "u-bad"
	list.Items[1].Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("123m")}
	dec, err := adapter.NewDecoder(reflect.TypeFor[*corev1.Pod](), nil)
	require.NoError(t, err)
	for _, tc := range []struct{ mediaType, bad, worse string }{
		{runtime.ContentTypeProtobuf, "123m", "12xm"},
		{runtime.ContentTypeJSON, `"cpu":"123m"`, `"cpu":{}`},
	} {
		t.Run(tc.mediaType, func(t *testing.T) {
			body := bytes.Replace(encode(t, tc.mediaType, list), []byte(tc.bad), []byte(tc.worse), 1)
			lw, err := adapter.ListWatch(serveList(t, tc.mediaType, body, added), podsGVR, "Pod", dec, func() object { return &corev1.Pod{} }, scheme.Codecs)
			require.NoError(t, err)
			l, err := lw.List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			var names []string
			for _, p := range podsOf(t, l) {
				names = append(names, p.Name)
			}
			assert.Equal(t, []string{"a", "b", "a"}, names)
			assert.Equal(t, "12", l.GetResourceVersion())
			u := adapter.Undecodable(l)
			require.Len(t, u, 1)
			assert.ErrorContains(t, u[0], "object ns/bad (uid u-bad, resourceVersion 11) does not decode at spec.containers[0].resources.limits.cpu")
		})
	}
}
