package benchfixtures

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// ConfigMapServer serves large config maps over HTTP as kube-apiserver
// serves them in protobuf: whole, or, to a request that accepts
// as=PartialObjectMetadata (client-go's metadata client, or the library's
// informers of metadata alone), their metadata alone, as
// PartialObjectMetadata and PartialObjectMetadataList. It serves discovery
// of the core group; lists, whole whatever their limit (kube-apiserver's
// watch cache answers a list at version "0" so); watch-list streams of an
// Added event per config map, then the bookmark that ends the initial
// events; and watches that send nothing until the client goes. A request
// that accepts no protobuf is answered 406 Not Acceptable. The encodings
// are made once, outside the Go heap (as EncodedPods), and every body is
// put together from them in flushed chunks of 64 KiB.
type ConfigMapServer struct {
	full, meta   *EncodedPods // the config maps, and their metadata
	srv          *httptest.Server
	bookmark     []byte // the frame of the bookmark that ends the initial events
	metaBookmark []byte // the same, as PartialObjectMetadata
	discovery    []byte
	chunks       sync.Pool // of *[]byte, 64 KiB long
	closing      chan struct{}
	once         sync.Once

	lists, watchLists, watches, rejected, projected, sent atomic.Int64
}

// ConfigMapServerRequests counts what a ConfigMapServer answered.
type ConfigMapServerRequests struct {
	PodServerRequests
	// Projected counts the requests answered with metadata alone.
	Projected int64
	// Bytes counts the bytes of the bodies sent.
	Bytes int64
}

// Sub returns r minus before: what was answered since before was taken.
func (r ConfigMapServerRequests) Sub(before ConfigMapServerRequests) ConfigMapServerRequests {
	return ConfigMapServerRequests{r.PodServerRequests.Sub(before.PodServerRequests), r.Projected - before.Projected, r.Bytes - before.Bytes}
}

// The TypeMeta of the envelopes of what a ConfigMapServer sends.
var (
	typeMetaConfigMap       = typeMeta("v1", "ConfigMap")
	typeMetaConfigMapList   = typeMeta("v1", "ConfigMapList")
	typeMetaPartialMeta     = typeMeta("meta.k8s.io/v1", "PartialObjectMetadata")
	typeMetaPartialMetaList = typeMeta("meta.k8s.io/v1", "PartialObjectMetadataList")
)

// typeMeta returns runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}
// as the envelope, runtime.Unknown, holds it.
func typeMeta(apiVersion, kind string) []byte {
	b := append([]byte{tag1, byte(len(apiVersion))}, apiVersion...)
	return append(append(b, tag2, byte(len(kind))), kind...)
}

// NewConfigMap returns config map i of namespace ns, with size bytes of
// random letters (the same for every call with the same i) under the key
// "blob" of its data, labels and the managed fields of the client that
// applied it: a config map of a tenant's, whose bulk is data no
// compression or sharing shrinks.
func NewConfigMap(ns string, i, size int) *corev1.ConfigMap {
	rng := rand.New(rand.NewPCG(uint64(i), 0x0c0ffee))
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	data := make([]byte, size)
	for j := range data {
		data[j] = letters[rng.IntN(len(letters))]
	}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("spark-conf-%04d", i), Namespace: ns,
			UID:             types.UID(fmt.Sprintf("8c0e5f7a-0000-4000-8000-%012d", i)),
			ResourceVersion: strconv.Itoa(1000 + i), CreationTimestamp: created,
			Labels: map[string]string{"app.kubernetes.io/name": "spark", "spark-app-id": fmt.Sprintf("app-%04d", i)},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:blob":{}},"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:spark-app-id":{}}}}`)},
			}},
		},
		Data: map[string]string{"blob": string(data)},
	}
}

// NewConfigMapServer starts a server of count config maps of namespace
// ns (NewConfigMap of size bytes); Close stops it.
func NewConfigMapServer(ns string, count, size int) (*ConfigMapServer, error) {
	rv := strconv.Itoa(1000 + count)
	full, err := encodeObjects(count, rv, func(i int) marshaler { return NewConfigMap(ns, i, size) })
	if err != nil {
		return nil, err
	}
	meta, err := encodeObjects(count, rv, func(i int) marshaler {
		cm := NewConfigMap(ns, i, 0)
		return &metav1.PartialObjectMetadata{ObjectMeta: cm.ObjectMeta}
	})
	if err != nil {
		_ = full.Close()
		return nil, err
	}
	s := &ConfigMapServer{full: full, meta: meta, closing: make(chan struct{})}
	end := metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}
	if s.bookmark, err = WatchFrame(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: end}); err == nil {
		s.metaBookmark, err = metaBookmarkFrame(end)
	}
	if err == nil {
		s.discovery, err = json.Marshal(&metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"get", "list", "watch"}}},
		})
	}
	if err != nil {
		s.unmap()
		return nil, fmt.Errorf("benchfixtures: %w", err)
	}
	s.chunks.New = func() any {
		b := make([]byte, 64<<10)
		return &b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.discovery) })
	mux.HandleFunc("GET /api/v1/configmaps", s.serve)
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/configmaps", s.serve)
	s.srv = httptest.NewServer(mux)
	return s, nil
}

// metaBookmarkFrame returns the frame of a bookmark of PartialObjectMetadata
// with metadata m.
func metaBookmarkFrame(m metav1.ObjectMeta) ([]byte, error) {
	raw, err := (&metav1.PartialObjectMetadata{ObjectMeta: m}).Marshal()
	if err != nil {
		return nil, err
	}
	env := append(append([]byte{}, protobufMagic...), tag1, byte(len(typeMetaPartialMeta)))
	env = append(env, typeMetaPartialMeta...)
	env = append(binary.AppendUvarint(append(env, tag2), uint64(len(raw))), raw...)
	env = append(env, unknownTail...)
	ev := metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: env}}
	body, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...), nil
}

// Len returns the number of config maps served.
func (s *ConfigMapServer) Len() int { return s.full.Len() }

// Bytes returns the size of the config maps' encodings, and of their
// metadata's.
func (s *ConfigMapServer) Bytes() (full, meta int) { return s.full.Bytes(), s.meta.Bytes() }

// Config is a client configuration for the server: protobuf, no
// client-side rate limit.
func (s *ConfigMapServer) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}, QPS: -1}
}

// Requests returns what the server answered so far.
func (s *ConfigMapServer) Requests() ConfigMapServerRequests {
	return ConfigMapServerRequests{
		PodServerRequests{s.lists.Load(), s.watchLists.Load(), s.watches.Load(), s.rejected.Load()},
		s.projected.Load(), s.sent.Load(),
	}
}

// Close ends open watches, stops the server and unmaps the encodings.
func (s *ConfigMapServer) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.Close()
	s.unmap()
}

func (s *ConfigMapServer) unmap() {
	_ = s.full.Close()
	_ = s.meta.Close()
}

// countingWriter counts the bytes written through it. It counts them
// before it writes them, so that a client that has read them finds them
// counted (a count made after the write could lag the client's read of
// the last bytes); what a failed write did not take is taken off again.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	n, err := w.ResponseWriter.Write(p)
	if n < len(p) {
		w.n.Add(int64(n - len(p)))
	}
	return n, err
}

func (w countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *ConfigMapServer) serve(rw http.ResponseWriter, r *http.Request) {
	w := countingWriter{rw, &s.sent}
	accept := r.Header.Get("Accept")
	if !strings.Contains(accept, "application/vnd.kubernetes.protobuf") {
		s.rejected.Add(1)
		http.Error(w, "only protobuf is served", http.StatusNotAcceptable)
		return
	}
	objs, tm, listTM, bookmark := s.full, typeMetaConfigMap, typeMetaConfigMapList, s.bookmark
	if strings.Contains(accept, "as=PartialObjectMetadata") {
		s.projected.Add(1)
		objs, tm, listTM, bookmark = s.meta, typeMetaPartialMeta, typeMetaPartialMetaList, s.metaBookmark
	}
	c := &chunker{w: w, f: w, chunk: s.chunks.Get().(*[]byte)}
	defer s.chunks.Put(c.chunk)
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		s.lists.Add(1)
		writeItems(w, c, objs, listTM)
		return
	}
	initial := q.Get("sendInitialEvents") == "true"
	if initial {
		s.watchLists.Add(1)
	} else {
		s.watches.Add(1)
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	w.WriteHeader(http.StatusOK)
	if initial {
		for i := range objs.Len() {
			if c.err != nil || r.Context().Err() != nil {
				break
			}
			c.eventOf(eventAdded, tm, objs.pod(i))
		}
		c.write(bookmark)
	}
	c.send()
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
}

// writeItems writes objs, whole, as a list whose TypeMeta in the envelope
// is tm.
func writeItems(w http.ResponseWriter, c *chunker, objs *EncodedPods, tm []byte) {
	meta, err := (&metav1.ListMeta{ResourceVersion: objs.rv}).Marshal()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	size := field(len(meta))
	for i := range objs.Len() {
		size += field(objs.ends[i+1] - objs.ends[i])
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	w.Header().Set("Content-Length", strconv.Itoa(envelope(tm, size)))
	w.WriteHeader(http.StatusOK)
	c.write(protobufMagic)
	c.header(tag1, len(tm))
	c.write(tm)
	c.header(tag2, size)
	c.header(tag1, len(meta))
	c.write(meta)
	for i := 0; i < objs.Len() && c.err == nil; i++ {
		c.header(tag2, objs.ends[i+1]-objs.ends[i])
		c.write(objs.pod(i))
	}
	c.write(unknownTail)
	c.send()
}
