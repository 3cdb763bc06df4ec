package apiclient

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The bookmark that ends a watch-list's initial events keeps its
// annotation whatever the fields skipped, in every shape and format: the
// reflector reads it there.
func TestBookmarksKeepTheirAnnotationsWhateverIsSkipped(t *testing.T) {
	bookmark := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "13", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	skip := Decoding{Skip: []string{"metadata.annotations"}}
	metaBookmark := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: bookmark.ObjectMeta}
	for _, tc := range []struct {
		name   string
		media  string
		object runtime.Object // the bookmark as sent, if not bookmark
		watch  func(t *testing.T, a *Client) *Funcs
	}{
		{"typed protobuf", runtime.ContentTypeProtobuf, nil, func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*corev1.Pod](a, podsTarget, "", skip)
			require.NoError(t, err)
			return lw
		}},
		{"typed JSON", runtime.ContentTypeJSON, nil, func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*corev1.Pod](a, podsTarget, "", skip)
			require.NoError(t, err)
			return lw
		}},
		{"unstructured", runtime.ContentTypeJSON, nil, func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*unstructured.Unstructured](a, Target{GVR: podsTarget.GVR, Shape: Dynamic}, "", skip)
			require.NoError(t, err)
			return lw
		}},
		{"metadata", runtime.ContentTypeJSON, metaBookmark, func(t *testing.T, a *Client) *Funcs {
			lw, err := ListWatch[*metav1.PartialObjectMetadata](a, Target{GVR: podsTarget.GVR, Shape: Metadata}, "", skip)
			require.NoError(t, err)
			return lw
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api/v1" {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}})
					return
				}
				stream := tc.media
				if stream == runtime.ContentTypeProtobuf {
					stream += ";stream=watch"
				}
				w.Header().Set("Content-Type", stream)
				if tc.object != nil {
					raw, _ := json.Marshal(tc.object)
					_ = json.NewEncoder(w).Encode(&metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: raw}})
					return
				}
				_, _ = w.Write(encodeEvents(t, tc.media, watch.Event{Type: watch.Bookmark, Object: bookmark}))
			}))
			defer srv.Close()
			lw := tc.watch(t, New(nil, Config{RESTConfig: &rest.Config{Host: srv.URL}, Scheme: scheme.Scheme}))
			w, err := lw.Watch(t.Context(), metav1.ListOptions{AllowWatchBookmarks: true})
			require.NoError(t, err)
			defer w.Stop()
			select {
			case ev := <-w.ResultChan():
				require.Equal(t, watch.Bookmark, ev.Type, "%v", ev.Object)
				m, ok := ev.Object.(metav1.Object)
				require.True(t, ok, "%T", ev.Object)
				require.Equal(t, "true", m.GetAnnotations()[metav1.InitialEventsAnnotationKey])
			case <-time.After(time.Minute):
				t.Fatal("no event")
			}
		})
	}
}
