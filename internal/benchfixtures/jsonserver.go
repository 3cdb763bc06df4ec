package benchfixtures

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// JSONServer serves pre-encoded JSON list pages of one resource as an API
// server does: discovery of its group version, lists paged by the
// continue tokens it hands out (every page the same size, whatever limit
// a client asks for), and watches that stay open without events until
// the client or Close ends them. The pages are encoded once, in memory.
// It sends whole objects in JSON and nothing else: a request that
// accepts neither (the objects' metadata alone, as=PartialObjectMetadata,
// or protobuf alone) gets 406 Not Acceptable, as from an API server that
// cannot encode what it asks for.
type JSONServer struct {
	srv      *httptest.Server
	resource schema.GroupVersionResource
	kind     string
	pages    [][]byte
	n        int
	closing  chan struct{}
	once     sync.Once
}

// jsonList is a list page: items are objects encoded by encoding/json,
// or json.RawMessage embedded as they are.
type jsonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []any `json:"items"`
}

// NewJSONServer serves count objects of resource, item(i) for i in [0,
// count), in JSON list pages of pageSize whose kind is kind + "List".
// Discovery of resource's group version lists it, namespaced or not, at
// /api/v1 for the core group and /apis/<group>/<version> for any other,
// and the lists and watches are served at the resource's path and, if
// namespaced, at its path in any namespace.
func NewJSONServer(resource schema.GroupVersionResource, kind string, namespaced bool, count, pageSize int, item func(i int) any) (*JSONServer, error) {
	s := &JSONServer{resource: resource, kind: kind, n: count, closing: make(chan struct{})}
	gv := resource.GroupVersion().String()
	rv := strconv.Itoa(1000 + count)
	for first := 0; first < count; first += pageSize {
		l := jsonList{TypeMeta: metav1.TypeMeta{Kind: kind + "List", APIVersion: gv}}
		l.ResourceVersion = rv
		for i := first; i < min(first+pageSize, count); i++ {
			l.Items = append(l.Items, item(i))
		}
		if first+pageSize < count {
			l.Continue = strconv.Itoa(len(s.pages) + 1)
		}
		b, err := json.Marshal(&l)
		if err != nil {
			return nil, fmt.Errorf("benchfixtures: encoding %s: %w", resource.Resource, err)
		}
		s.pages = append(s.pages, b)
	}
	discovery, err := json.Marshal(&metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv,
		APIResources: []metav1.APIResource{{Name: resource.Resource, SingularName: strings.ToLower(kind), Namespaced: namespaced, Kind: kind,
			Verbs: metav1.Verbs{"get", "list", "watch"}}},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	base := "/apis/" + gv
	if resource.Group == "" {
		base = "/api/" + resource.Version
	}
	mux.HandleFunc("GET "+base, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, discovery) })
	mux.HandleFunc("GET "+base+"/"+resource.Resource, s.serve)
	if namespaced {
		mux.HandleFunc("GET "+base+"/namespaces/{ns}/"+resource.Resource, s.serve)
	}
	s.srv = httptest.NewServer(mux)
	return s, nil
}

// NewApplicationServer serves count applications (NewApplication with
// seed 1) in JSON pages of pageSize, with their managed fields or, when
// managedFields is false, without them (as a server that clears them).
func NewApplicationServer(count, pageSize int, managedFields bool) (*JSONServer, error) {
	return NewJSONServer(ApplicationResource, "Application", true, count, pageSize, func(i int) any {
		a := NewApplication(i, 1)
		if !managedFields {
			a.ManagedFields = nil
		}
		return a
	})
}

// Resource is the resource served.
func (s *JSONServer) Resource() schema.GroupVersionResource { return s.resource }

// Kind is the kind of the objects served.
func (s *JSONServer) Kind() string { return s.kind }

// Len is the number of objects served.
func (s *JSONServer) Len() int { return s.n }

// Bytes is the size of all the pages.
func (s *JSONServer) Bytes() int {
	n := 0
	for _, p := range s.pages {
		n += len(p)
	}
	return n
}

// Config is a client configuration for the server.
func (s *JSONServer) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, QPS: -1}
}

// Close ends open watches and stops the server.
func (s *JSONServer) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.Close()
}

func (s *JSONServer) serve(w http.ResponseWriter, r *http.Request) {
	if !acceptsJSON(r.Header.Get("Accept")) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotAcceptable)
		_, _ = w.Write(notAcceptable)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	page := 0
	if c := q.Get("continue"); c != "" {
		var err error
		if page, err = strconv.Atoi(c); err != nil || page < 0 || page >= len(s.pages) {
			http.Error(w, "bad continue token", http.StatusBadRequest)
			return
		}
	}
	writeJSON(w, s.pages[page])
}

// notAcceptable is the Status of a refused request.
var notAcceptable, _ = json.Marshal(&metav1.Status{
	TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
	Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotAcceptable, Code: http.StatusNotAcceptable,
	Message: "only whole objects in application/json are served",
})

// acceptsJSON reports whether an Accept header admits whole objects in
// JSON: it is empty, or one of its media ranges is application/json (or
// application/*, */*) without an "as" parameter, which would ask for
// another kind.
func acceptsJSON(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for r := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(r))
		if err != nil || params["as"] != "" {
			continue
		}
		if mt == "application/json" || mt == "application/*" || mt == "*/*" {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}
