package apiclient

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// openAPIServer serves /openapi/v3, naming the document of
// example.com/v1 by hash, and the document, whose spec.size is of type
// sizeType; it counts the documents served.
type openAPIServer struct {
	mu       sync.Mutex
	hash     string
	sizeType string
	status   int // answers /openapi/v3 with it, if set
	docs     int
}

func (s *openAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case s.status != 0:
		w.WriteHeader(s.status)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":%d,"message":"no"}`, s.status)
	case r.URL.Path == "/openapi/v3":
		fmt.Fprintf(w, `{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=A"},"apis/example.com/v1":{"serverRelativeURL":"/openapi/v3/apis/example.com/v1?hash=%s"}}}`, s.hash)
	case r.URL.Path == "/openapi/v3/apis/example.com/v1" && r.URL.Query().Get("hash") == s.hash:
		s.docs++
		fmt.Fprintf(w, `{"components":{"schemas":{"com.example.v1.Widget":{"type":"object",
			"x-kubernetes-group-version-kind":[{"group":"example.com","version":"v1","kind":"Widget"}],
			"properties":{"spec":{"type":"object","properties":{"size":{"type":%q}}}}}}}}`, s.sizeType)
	default:
		http.NotFound(w, r)
	}
}

func (s *openAPIServer) set(f func(*openAPIServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

type sizeView struct {
	Spec struct {
		Size int64 `json:"size"`
	} `json:"spec"`
}

// A view is checked against the server's schema once per hash of its
// document, again when the hash changes; a server that refuses its
// OpenAPI leaves the view unchecked, or, required, fails it with the 403.
func TestCheckServer(t *testing.T) {
	srv := &openAPIServer{hash: "1", sizeType: "integer"}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: hs.URL, ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	require.NoError(t, err)
	src := NewOpenAPI(rc)
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	view := reflect.TypeFor[*sizeView]()
	ctx := context.Background()

	c := NewSchemaCheck(SchemaDefault)
	require.NoError(t, c.CheckServer(ctx, src, view, gvk, gvr))
	require.NoError(t, c.CheckServer(ctx, src, view, gvk, gvr))
	assert.Equal(t, "checked against the server's schema of example.com/v1, Kind=Widget", c.Status())
	assert.Equal(t, 1, srv.docs, "read once per hash")
	// A second informer's check reads the client's copy.
	require.NoError(t, NewSchemaCheck(SchemaDefault).CheckServer(ctx, src, view, gvk, gvr))
	assert.Equal(t, 1, srv.docs)

	srv.set(func(s *openAPIServer) { s.hash, s.sizeType = "2", "string" })
	err = c.CheckServer(ctx, src, view, gvk, gvr)
	require.ErrorContains(t, err, `widgets.v1.example.com: the server's schema of example.com/v1, Kind=Widget: view *apiclient.sizeView: field "spec.size" (sizeView.Spec.Size): Go type int64 cannot hold the schema's string`)
	assert.True(t, IsMismatch(err))
	assert.Equal(t, err, c.Err())
	assert.Equal(t, 2, srv.docs)
	require.Equal(t, err, c.CheckServer(ctx, src, view, gvk, gvr), "the same document, the same mismatch")
	assert.Equal(t, 2, srv.docs)

	srv.set(func(s *openAPIServer) { s.hash, s.sizeType = "3", "integer" })
	require.NoError(t, c.CheckServer(ctx, src, view, gvk, gvr), "fixed on the server")
	require.NoError(t, c.Err())

	srv.set(func(s *openAPIServer) { s.status = http.StatusForbidden })
	c = NewSchemaCheck(SchemaDefault)
	require.NoError(t, c.CheckServer(ctx, src, view, gvk, gvr))
	assert.Contains(t, c.Status(), "unchecked: the server's OpenAPI v3 schema of example.com/v1 cannot be read")
	required := NewSchemaCheck(SchemaRequire)
	err = required.CheckServer(ctx, src, view, gvk, gvr)
	require.ErrorContains(t, err, "the view must be checked (SchemaCheck), but is unchecked")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	skipped := NewSchemaCheck(SchemaSkip)
	require.NoError(t, skipped.CheckServer(ctx, src, view, gvk, gvr))
	assert.Equal(t, "skipped (SchemaCheck)", skipped.Status())

	// A server that publishes other group versions but not this one's yet
	// is waited for once; one that publishes none is not.
	defer func(d time.Duration) { schemaWait = d }(schemaWait)
	schemaWait = 100 * time.Millisecond
	srv.set(func(s *openAPIServer) { s.status, s.hash = 0, "4" })
	other := schema.GroupVersionKind{Group: "other.example.com", Version: "v1", Kind: "Widget"}
	c = NewSchemaCheck(SchemaDefault)
	require.NoError(t, c.CheckServer(ctx, src, view, other, gvr))
	assert.Equal(t, "unchecked: the server publishes no OpenAPI v3 schema of other.example.com/v1, Kind=Widget", c.Status())
	assert.False(t, src.firstWait(other.GroupVersion()), "waited once")
}
