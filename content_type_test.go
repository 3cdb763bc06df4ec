package informers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// A server that answers a list in a content type the library does not
// decode leaves the cache empty and unsynced, and WaitForSync says why:
// the resource and the content type.
func TestWaitForSyncNamesAnUnknownContentType(t *testing.T) {
	testutil.NoLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}}})
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>a proxy's login page</html>"))
	}))
	t.Cleanup(srv.Close)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: &rest.Config{Host: srv.URL}, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	pods := informers.Informer[*corev1.Pod](f)
	testutil.StartFactory(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	err := informers.WaitForSync(ctx, f)
	require.ErrorContains(t, err, `pods.v1: the response's content type "text/html" is none the library decodes`)
	require.Zero(t, pods.Lister().Len())
}
