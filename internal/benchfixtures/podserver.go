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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// EncodedPods are pods encoded once in protobuf, as the generated code
// marshals them, one after the other in a single buffer mapped outside the
// Go heap: what a PodServer puts its responses together from, and all it
// keeps of the pods. Servers can share them. Being off the heap, they
// neither show in a benchmark's heap figures nor let the collector leave
// more garbage, which it paces by the heap: a client process does not hold
// its server's data. Close unmaps them.
type EncodedPods struct {
	data  []byte // pod i is data[ends[i]:ends[i+1]]
	ends  []int
	rv    string
	unmap func() error
	once  sync.Once
}

// EncodePods encodes the pods of l. It builds every pod twice, to size the
// buffer and then to fill it, so that it holds the encodings and nothing
// more at any time.
func EncodePods(l *PodList) (*EncodedPods, error) {
	return encodePods(l.Len(), l.ResourceVersion(), l.Pod)
}

// EncodeUpdates encodes n updates of pods of l, the ones a PodServer with
// these as its Updates sends: update i is Modified of a pod of l picked at
// random (the same for every call with the same seed), with resource
// version i+1 above the list's.
func EncodeUpdates(l *PodList, n int, seed uint64) (*EncodedPods, error) {
	rv, err := strconv.Atoi(l.ResourceVersion())
	if err != nil {
		return nil, fmt.Errorf("benchfixtures: the list's resource version: %w", err)
	}
	return encodePods(n, strconv.Itoa(rv+n), func(i int) *corev1.Pod {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		return Modified(l.Pod(rng.IntN(l.Len())), rv+i+1)
	})
}

// encodePods encodes the n pods pod returns, which must return the same
// pod every time it is called with the same index, with rv as their
// resource version.
func encodePods(n int, rv string, pod func(int) *corev1.Pod) (*EncodedPods, error) {
	return encodeObjects(n, rv, func(i int) marshaler { return pod(i) })
}

// marshaler is an object of the generated API types, which encode
// themselves in protobuf.
type marshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// encodeObjects encodes the n objects obj returns, which must return the
// same object every time it is called with the same index, with rv as
// their list's resource version.
func encodeObjects(n int, rv string, obj func(int) marshaler) (*EncodedPods, error) {
	e := &EncodedPods{ends: make([]int, n+1), rv: rv}
	for i := range n {
		e.ends[i+1] = e.ends[i] + obj(i).Size()
	}
	var err error
	if e.data, e.unmap, err = offHeap(e.ends[n]); err != nil {
		return nil, err
	}
	for i := range n {
		p := obj(i)
		got, err := p.MarshalToSizedBuffer(e.data[e.ends[i]:e.ends[i+1]])
		if err == nil && got != e.ends[i+1]-e.ends[i] {
			err = fmt.Errorf("encoded in %d bytes, sized at %d", got, e.ends[i+1]-e.ends[i])
		}
		if err != nil {
			_ = e.Close()
			return nil, fmt.Errorf("benchfixtures: encoding object %d: %w", i, err)
		}
	}
	return e, nil
}

// Len returns the number of pods.
func (e *EncodedPods) Len() int { return len(e.ends) - 1 }

// Close unmaps the encodings. The servers of them must have been closed.
func (e *EncodedPods) Close() error {
	var err error
	e.once.Do(func() { err = e.unmap() })
	return err
}

// Bytes returns the size of the pods' encodings.
func (e *EncodedPods) Bytes() int { return len(e.data) }

// pod returns the encoding of pod i.
func (e *EncodedPods) pod(i int) []byte { return e.data[e.ends[i]:e.ends[i+1]] }

// PodServerOptions say how a PodServer answers.
type PodServerOptions struct {
	// WholeLists answers a list at resource version "0" or "" in one
	// piece, whatever its limit, as kube-apiserver's watch cache does.
	// Otherwise every list honours its limit and continue token, as a
	// list served from etcd does.
	WholeLists bool
	// NoWatchList answers watch-list requests (sendInitialEvents=true)
	// with 400 Bad Request, as a server without the feature does, so that
	// clients list instead.
	NoWatchList bool
	// ChunkSize is the size of the writes a body is sent in, each flushed
	// to the client; 0 means 64 KiB.
	ChunkSize int
	// Updates are MODIFIED events the server sends, in order, on every
	// watch open when Release lets them go (see EncodeUpdates). A watch
	// sends the updates released after it began, and no others.
	Updates *EncodedPods
}

// PodServerRequests counts the requests a PodServer has answered, by kind.
type PodServerRequests struct {
	// Lists counts list requests (one per page), WatchLists watch-list
	// streams, Watches the other watches, and Rejected the requests
	// answered with an error.
	Lists, WatchLists, Watches, Rejected int64
}

// Sub returns r minus before: the requests answered since before was
// taken.
func (r PodServerRequests) Sub(before PodServerRequests) PodServerRequests {
	return PodServerRequests{r.Lists - before.Lists, r.WatchLists - before.WatchLists, r.Watches - before.Watches, r.Rejected - before.Rejected}
}

// PodServer serves EncodedPods over HTTP as kube-apiserver serves pods in
// protobuf, enough for client-go's informers and the library's factories:
// discovery of the core group; lists of /api/v1/pods, paged or whole (see
// PodServerOptions); watch-list streams of an Added event per pod, then
// the bookmark that ends the initial events, carrying the list's resource
// version and the k8s.io/initial-events-end annotation, then nothing until
// the client goes; and watches that send nothing until the client goes,
// but for the updates Release lets go. A request for the pods' metadata
// alone (as=PartialObjectMetadata) is answered 406 Not Acceptable, as by a
// server that cannot project, and not counted in Requests: the library's
// views of metadata alone read whole pods here, as they did before they
// asked for the projection (ConfigMapServer projects).
// Every body is put together from the pods' encodings as it is written, in
// chunks flushed one at a time, so that clients read it as it arrives and
// the server allocates nothing per pod: its buffers are pooled.
type PodServer struct {
	pods      *EncodedPods
	opts      PodServerOptions
	srv       *httptest.Server
	bookmark  []byte // the frame of the bookmark that ends the initial events
	discovery []byte
	chunks    sync.Pool // of *[]byte, ChunkSize long
	closing   chan struct{}
	once      sync.Once

	mu       sync.Mutex
	released int           // updates released so far
	wake     chan struct{} // closed when more are released

	lists, watchLists, watches, rejected atomic.Int64
}

// NewPodServer starts a server of pods; Close stops it.
func NewPodServer(pods *EncodedPods, opts PodServerOptions) (*PodServer, error) {
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 64 << 10
	}
	bookmark, err := WatchFrame(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: pods.rv,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	if err != nil {
		return nil, fmt.Errorf("benchfixtures: encoding the bookmark: %w", err)
	}
	discovery, err := json.Marshal(&metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "watch"}}},
	})
	if err != nil {
		return nil, err
	}
	s := &PodServer{pods: pods, opts: opts, bookmark: bookmark, discovery: discovery, closing: make(chan struct{}), wake: make(chan struct{})}
	s.chunks.New = func() any {
		b := make([]byte, opts.ChunkSize)
		return &b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.discovery) })
	mux.HandleFunc("GET /api/v1/pods", s.serve)
	s.srv = httptest.NewServer(mux)
	return s, nil
}

// Len returns the number of pods served.
func (s *PodServer) Len() int { return s.pods.Len() }

// URL is the server's base URL.
func (s *PodServer) URL() string { return s.srv.URL }

// Config is a client configuration for the server: protobuf, no
// client-side rate limit.
func (s *PodServer) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}, QPS: -1}
}

// Requests returns the requests answered so far.
func (s *PodServer) Requests() PodServerRequests {
	return PodServerRequests{s.lists.Load(), s.watchLists.Load(), s.watches.Load(), s.rejected.Load()}
}

// Release lets n more of the updates go to the watches open. It fails if
// the server has fewer updates left.
func (s *PodServer) Release(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.Updates == nil || s.released+n > s.opts.Updates.Len() {
		return fmt.Errorf("benchfixtures: releasing %d updates after %d: the server has %d", n, s.released, s.updates())
	}
	s.released += n
	close(s.wake)
	s.wake = make(chan struct{})
	return nil
}

// updates returns how many updates the server has.
func (s *PodServer) updates() int {
	if s.opts.Updates == nil {
		return 0
	}
	return s.opts.Updates.Len()
}

// releasedUpdates returns how many updates are released, and a channel
// closed when more are.
func (s *PodServer) releasedUpdates() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released, s.wake
}

// Close ends open watches and stops the server.
func (s *PodServer) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.Close()
}

func (s *PodServer) serve(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotAcceptable)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: "only whole pods are served",
		})
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		s.serveWatch(w, r, q.Get("sendInitialEvents") == "true")
		return
	}
	n := s.pods.Len()
	limit := int64(0)
	if l := q.Get("limit"); l != "" {
		var err error
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			s.reject(w, http.StatusBadRequest, fmt.Sprintf("bad limit %q", l))
			return
		}
	}
	start, cont := 0, q.Get("continue")
	if cont != "" {
		var err error
		if start, err = strconv.Atoi(cont); err != nil || start <= 0 || start >= n {
			s.reject(w, http.StatusBadRequest, fmt.Sprintf("bad continue token %q", cont))
			return
		}
	}
	rv := q.Get("resourceVersion")
	end := n
	if limit > 0 && !(s.opts.WholeLists && cont == "" && (rv == "" || rv == "0")) {
		end = min(start+int(limit), n)
	}
	next := ""
	if end < n {
		next = strconv.Itoa(end)
	}
	s.lists.Add(1)
	s.writeList(w, start, end, next)
}

// Protobuf's tags of the fields written here (field number << 3 | 2, a
// length-delimited field), and the parts of the envelope that do not
// depend on the object.
const (
	tag1 = 1<<3 | 2
	tag2 = 2<<3 | 2
	tag3 = 3<<3 | 2
	tag4 = 4<<3 | 2
)

var (
	// protobufMagic starts every protobuf body of the API server.
	protobufMagic = []byte{'k', '8', 's', 0}
	// typeMetaPod and typeMetaPodList are runtime.TypeMeta{APIVersion:
	// "v1", Kind: ...} as the envelope, runtime.Unknown, holds them.
	typeMetaPod     = []byte{tag1, 2, 'v', '1', tag2, 3, 'P', 'o', 'd'}
	typeMetaPodList = []byte{tag1, 2, 'v', '1', tag2, 7, 'P', 'o', 'd', 'L', 'i', 's', 't'}
	// unknownTail is the envelope's empty contentEncoding and contentType.
	unknownTail = []byte{tag3, 0, tag4, 0}
	// eventAdded and eventModified are watch events' types, ADDED and
	// MODIFIED.
	eventAdded    = []byte{tag1, 5, 'A', 'D', 'D', 'E', 'D'}
	eventModified = []byte{tag1, 8, 'M', 'O', 'D', 'I', 'F', 'I', 'E', 'D'}
)

// field returns the size of a length-delimited field of size n.
func field(n int) int { return 1 + uvarintLen(n) + n }

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// envelope returns the size of the envelope of an object of size n,
// whose TypeMeta is tm.
func envelope(tm []byte, n int) int {
	return len(protobufMagic) + field(len(tm)) + field(n) + len(unknownTail)
}

// writeList writes pods start to end as a PodList whose continue token is
// next, in the API server's envelope.
func (s *PodServer) writeList(w http.ResponseWriter, start, end int, next string) {
	meta, err := (&metav1.ListMeta{ResourceVersion: s.pods.rv, Continue: next}).Marshal()
	if err != nil {
		s.reject(w, http.StatusInternalServerError, err.Error())
		return
	}
	size := field(len(meta))
	for i := start; i < end; i++ {
		size += field(s.pods.ends[i+1] - s.pods.ends[i])
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	w.Header().Set("Content-Length", strconv.Itoa(envelope(typeMetaPodList, size)))
	w.WriteHeader(http.StatusOK)
	c := s.newChunker(w)
	defer s.chunks.Put(c.chunk)
	c.write(protobufMagic)
	c.header(tag1, len(typeMetaPodList))
	c.write(typeMetaPodList)
	c.header(tag2, size)
	c.header(tag1, len(meta))
	c.write(meta)
	for i := start; i < end && c.err == nil; i++ {
		pod := s.pods.pod(i)
		c.header(tag2, len(pod))
		c.write(pod)
	}
	c.write(unknownTail)
	c.send()
}

// serveWatch answers a watch: with the initial events first if initial,
// then the updates released after it began, until the client goes or the
// server closes.
func (s *PodServer) serveWatch(w http.ResponseWriter, r *http.Request, initial bool) {
	if initial && s.opts.NoWatchList {
		s.reject(w, http.StatusBadRequest, "watch-list is not served")
		return
	}
	if initial {
		s.watchLists.Add(1)
	} else {
		s.watches.Add(1)
	}
	next, _ := s.releasedUpdates()
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	w.WriteHeader(http.StatusOK)
	c := s.newChunker(w)
	defer func() { s.chunks.Put(c.chunk) }()
	if initial {
		for i := range s.pods.Len() {
			if c.err != nil || r.Context().Err() != nil {
				break
			}
			c.event(eventAdded, s.pods.pod(i))
		}
		c.write(s.bookmark)
	}
	c.send()
	for c.err == nil {
		released, wake := s.releasedUpdates()
		for ; next < released && c.err == nil; next++ {
			c.event(eventModified, s.opts.Updates.pod(next))
		}
		c.send()
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// reject answers with a Status of code.
func (s *PodServer) reject(w http.ResponseWriter, code int, msg string) {
	s.rejected.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReason(http.StatusText(code)), Message: msg,
	})
}

// chunker writes a body in chunks of the server's chunk size, flushing
// each to the client.
type chunker struct {
	w       http.ResponseWriter
	f       http.Flusher
	chunk   *[]byte // from the server's pool, to which the caller returns it
	n       int     // bytes of chunk in use
	err     error
	scratch [32]byte // for field headers
}

func (s *PodServer) newChunker(w http.ResponseWriter) *chunker {
	c := &chunker{w: w, chunk: s.chunks.Get().(*[]byte)}
	c.f, _ = w.(http.Flusher)
	return c
}

// write appends p to the body, sending every chunk it fills.
func (c *chunker) write(p []byte) {
	for len(p) > 0 && c.err == nil {
		k := copy((*c.chunk)[c.n:], p)
		c.n += k
		p = p[k:]
		if c.n == len(*c.chunk) {
			c.send()
		}
	}
}

// header writes the tag and length of a length-delimited field of size n.
func (c *chunker) header(tag byte, n int) {
	c.write(binary.AppendUvarint(append(c.scratch[:0], tag), uint64(n)))
}

// event writes the frame of a watch event of type typ (eventAdded or
// eventModified) of pod, as WatchFrame encodes it: a 4-byte length, then a
// metav1.WatchEvent whose object is pod in its envelope.
func (c *chunker) event(typ, pod []byte) { c.eventOf(typ, typeMetaPod, pod) }

// eventOf writes the frame of a watch event of type typ of obj, whose
// TypeMeta in the envelope is tm.
func (c *chunker) eventOf(typ, tm, obj []byte) {
	env := envelope(tm, len(obj))
	body := len(typ) + field(field(env))
	c.write(binary.BigEndian.AppendUint32(c.scratch[:0], uint32(body)))
	c.write(typ)
	c.header(tag2, field(env)) // the event's object, a RawExtension
	c.header(tag1, env)        // its raw bytes
	c.write(protobufMagic)
	c.header(tag1, len(tm))
	c.write(tm)
	c.header(tag2, len(obj))
	c.write(obj)
	c.write(unknownTail)
}

// send writes the bytes the chunk holds and flushes them.
func (c *chunker) send() {
	if c.n > 0 && c.err == nil {
		_, c.err = c.w.Write((*c.chunk)[:c.n])
	}
	c.n = 0
	if c.f != nil && c.err == nil {
		c.f.Flush()
	}
}
