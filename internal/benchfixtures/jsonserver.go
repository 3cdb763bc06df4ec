package benchfixtures

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// JSONServer serves pre-encoded JSON list pages of one custom resource as
// an API server does: discovery of its group version, lists paged by the
// continue tokens it hands out (every page the same size, whatever limit
// a client asks for), and watches that stay open without events until
// the client or Close ends them. The pages are encoded once, in memory.
type JSONServer struct {
	srv     *httptest.Server
	pages   [][]byte
	n       int
	closing chan struct{}
	once    sync.Once
}

// NewApplicationServer serves count applications (NewApplication with
// seed 1) in JSON pages of pageSize, with their managed fields or, when
// managedFields is false, without them (as a server that clears them).
func NewApplicationServer(count, pageSize int, managedFields bool) (*JSONServer, error) {
	s := &JSONServer{n: count, closing: make(chan struct{})}
	rv := strconv.Itoa(1000 + count)
	for first := 0; first < count; first += pageSize {
		l := ApplicationList{TypeMeta: metav1.TypeMeta{Kind: "ApplicationList", APIVersion: ApplicationGV.String()}}
		l.ResourceVersion = rv
		for i := first; i < min(first+pageSize, count); i++ {
			a := NewApplication(i, 1)
			if !managedFields {
				a.ManagedFields = nil
			}
			l.Items = append(l.Items, *a)
		}
		if first+pageSize < count {
			l.Continue = strconv.Itoa(len(s.pages) + 1)
		}
		b, err := json.Marshal(&l)
		if err != nil {
			return nil, fmt.Errorf("benchfixtures: encoding applications: %w", err)
		}
		s.pages = append(s.pages, b)
	}
	discovery, err := json.Marshal(&metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: ApplicationGV.String(),
		APIResources: []metav1.APIResource{{Name: ApplicationResource.Resource, SingularName: "application", Namespaced: true, Kind: "Application",
			Verbs: metav1.Verbs{"get", "list", "watch"}}},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	base := "/apis/" + ApplicationGV.String()
	mux.HandleFunc("GET "+base, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, discovery) })
	mux.HandleFunc("GET "+base+"/"+ApplicationResource.Resource, s.serve)
	mux.HandleFunc("GET "+base+"/namespaces/{ns}/"+ApplicationResource.Resource, s.serve)
	s.srv = httptest.NewServer(mux)
	return s, nil
}

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

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}
