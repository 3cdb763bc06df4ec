package controllerruntime

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers/adapter"
)

// A list whose items hold one that does not decode (a quantity that does
// not parse) gives the cache its other objects, and names the one it
// leaves out, for the informer to report through its error path: from
// protobuf and from JSON.
func TestListDecodingUndecodable(t *testing.T) {
	pod := func(name string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("u-" + name), ResourceVersion: "7"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Pod{pod("a"), pod("bad"), pod("c")}}
	list.Items[1].Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("123m")}
	for _, tc := range []struct{ mediaType, bad, worse string }{
		{runtime.ContentTypeProtobuf, "123m", "12xm"},
		{runtime.ContentTypeJSON, `"cpu":"123m"`, `"cpu":true`},
	} {
		t.Run(tc.mediaType, func(t *testing.T) {
			info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), tc.mediaType)
			require.True(t, ok)
			var body bytes.Buffer
			require.NoError(t, scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(list, &body))
			require.Equal(t, 1, bytes.Count(body.Bytes(), []byte(tc.bad)))
			served := bytes.Replace(body.Bytes(), []byte(tc.bad), []byte(tc.worse), 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.mediaType)
				_, _ = w.Write(served)
			}))
			t.Cleanup(srv.Close)
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
			c, err := New(&rest.Config{Host: srv.URL}, cache.Options{Mapper: mapper})
			require.NoError(t, err)
			lw, err := c.listWatch(corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithResource("pods"), typed, "ns", new(partDecoder))
			require.NoError(t, err)
			l, err := lw.List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			var names []string
			require.NoError(t, meta.EachListItem(l, func(o runtime.Object) error {
				names = append(names, o.(client.Object).GetName())
				return nil
			}))
			assert.Equal(t, []string{"a", "c"}, names)
			assert.Equal(t, "9", l.GetResourceVersion())
			bad := adapter.Undecodable(l)
			require.Len(t, bad, 1)
			assert.ErrorContains(t, bad[0], "object ns/bad (uid u-bad, resourceVersion 7) does not decode at spec.containers[0].resources.limits.cpu")
		})
	}
}
