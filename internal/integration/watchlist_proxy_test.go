package integration

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// proxyMode is what a manglingProxy does to watch-list streams.
type proxyMode int

const (
	// passEverything lets streams through unchanged.
	passEverything proxyMode = iota
	// cutAtEndBookmark ends a stream cleanly where the bookmark that ends
	// its initial events would be, as a proxy that cuts streams does.
	cutAtEndBookmark
	// dropEndBookmark leaves that bookmark out and keeps the stream open.
	dropEndBookmark
)

func (m proxyMode) String() string {
	return [...]string{"pass", "cut-at-end-bookmark", "drop-end-bookmark"}[m]
}

// manglingProxy is a reverse proxy in front of kube-apiserver, reached
// over plain HTTP and sending the test credentials on; it mangles the
// watch-list streams of one resource, in JSON or protobuf, and counts that
// resource's requests by kind.
type manglingProxy struct {
	resource string
	mode     proxyMode
	srv      *httptest.Server

	mu   sync.Mutex
	sent map[requestKind]int
	// requested is signalled, without blocking, at each request for the
	// resource.
	requested chan struct{}
}

// newManglingProxy starts a proxy to env's kube-apiserver that mangles
// the watch-list streams of resource as mode says, and returns it with a
// client configuration that reaches the server through it.
func newManglingProxy(t *testing.T, env *testenv.Env, resource string, mode proxyMode) (*manglingProxy, *rest.Config) {
	t.Helper()
	upstream := env.Config()
	target, err := url.Parse(upstream.Host)
	require.NoError(t, err)
	transport, err := rest.TransportFor(upstream) // TLS and the bearer token
	require.NoError(t, err)
	p := &manglingProxy{resource: resource, mode: mode, sent: map[requestKind]int{}, requested: make(chan struct{}, 1)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The proxy's transport then asks for gzip itself and hands
			// over the streams decompressed, for the proxy to read.
			r.Out.Header.Del("Accept-Encoding")
		},
		Transport:      transport,
		FlushInterval:  -1,
		ModifyResponse: p.modifyResponse,
		ErrorLog:       log.New(testWriter{t}, "proxy: ", 0),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if kind := kindOf(r.Method, r.URL, resource); kind != otherRequest {
			p.mu.Lock()
			p.sent[kind]++
			p.mu.Unlock()
			select {
			case p.requested <- struct{}{}:
			default:
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close) // after the informers, whose cleanups run first
	return p, &rest.Config{Host: p.srv.URL, QPS: -1}
}

// counts returns how many lists (list pages), plain watches and watch-list
// streams of the resource were asked for.
func (p *manglingProxy) counts() (lists, watches, streams int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent[listRequest], p.sent[watchRequest], p.sent[watchListRequest]
}

// modifyResponse mangles the successful watch-list streams of the
// resource.
func (p *manglingProxy) modifyResponse(resp *http.Response) error {
	if p.mode == passEverything || resp.StatusCode != http.StatusOK ||
		kindOf(resp.Request.Method, resp.Request.URL, p.resource) != watchListRequest {
		return nil
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" {
		return fmt.Errorf("watch-list stream of %s: the proxy reads no %s", p.resource, enc)
	}
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("watch-list stream of %s: %w", p.resource, err)
	}
	var next func() ([]byte, bool, error)
	switch mediaType {
	case "application/json":
		next = jsonEvents(resp.Body)
	case "application/vnd.kubernetes.protobuf":
		next = protobufEvents(resp.Body)
	default:
		return fmt.Errorf("watch-list stream of %s in %s: the proxy reads JSON and protobuf", p.resource, mediaType)
	}
	resp.Body = &mangledStream{src: resp.Body, next: next, mode: p.mode}
	return nil
}

// mangledStream is a watch-list stream's body with the bookmark that ends
// the initial events dropped, or cut at: the stream then ends cleanly.
type mangledStream struct {
	src  io.ReadCloser
	next func() (event []byte, endBookmark bool, err error) // the next event as sent
	mode proxyMode
	out  bytes.Buffer
	cut  bool
}

func (s *mangledStream) Read(b []byte) (int, error) {
	for s.out.Len() == 0 {
		if s.cut {
			return 0, io.EOF
		}
		event, end, err := s.next()
		if err != nil {
			return 0, err
		}
		switch {
		case end && s.mode == cutAtEndBookmark:
			s.cut = true
		case end && s.mode == dropEndBookmark:
		default:
			s.out.Write(event)
		}
	}
	return s.out.Read(b)
}

func (s *mangledStream) Close() error { return s.src.Close() }

// jsonEvents reads the events of a JSON watch stream, one JSON object
// each.
func jsonEvents(r io.Reader) func() ([]byte, bool, error) {
	dec := json.NewDecoder(r)
	return func() ([]byte, bool, error) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false, err
		}
		var ev struct {
			Type   watch.EventType `json:"type"`
			Object struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, false, fmt.Errorf("JSON watch event: %w", err)
		}
		end := ev.Type == watch.Bookmark && ev.Object.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true"
		return append(raw, '\n'), end, nil
	}
}

// protoMagic starts an object in kube-apiserver's protobuf encoding.
var protoMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufEvents reads the events of a protobuf watch stream: frames of a
// 4-byte big-endian length and a metav1.WatchEvent, whose object is
// runtime.Unknown after protoMagic.
func protobufEvents(r io.Reader) func() ([]byte, bool, error) {
	br := bufio.NewReader(r)
	return func() ([]byte, bool, error) {
		frame := make([]byte, 4)
		if _, err := io.ReadFull(br, frame); err != nil {
			return nil, false, err
		}
		frame = append(frame, make([]byte, binary.BigEndian.Uint32(frame))...)
		if _, err := io.ReadFull(br, frame[4:]); err != nil {
			return nil, false, err
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(frame[4:]); err != nil {
			return nil, false, fmt.Errorf("protobuf watch event: %w", err)
		}
		if ev.Type != string(watch.Bookmark) {
			return frame, false, nil
		}
		var unknown runtime.Unknown
		if !bytes.HasPrefix(ev.Object.Raw, protoMagic) {
			return nil, false, errors.New("protobuf bookmark: object without the protobuf prefix")
		}
		if err := unknown.Unmarshal(ev.Object.Raw[len(protoMagic):]); err != nil {
			return nil, false, fmt.Errorf("protobuf bookmark: %w", err)
		}
		// Every object's field 1 is its ObjectMeta.
		var meta metav1.PartialObjectMetadata
		if err := meta.Unmarshal(unknown.Raw); err != nil {
			return nil, false, fmt.Errorf("protobuf bookmark's object: %w", err)
		}
		return frame, meta.Annotations[metav1.InitialEventsAnnotationKey] == "true", nil
	}
}

// testWriter writes to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// quietWindow is how long after the sync TestWatchListBehindManglingProxy
// watches for further lists and watch-list streams. The reflector's
// fallback has no timer that fires within 30 seconds of a sync (its next
// watch-list request comes only at a relist, after a watch fails); 10
// seconds show that no storm of requests follows, each retry taking
// milliseconds, at a third of the time.
const quietWindow = 10 * time.Second

// A watch-list stream that a proxy cuts at the bookmark ending its initial
// events, or from which it drops that bookmark, costs a stream or two and
// a list: the informer syncs within 5 seconds and asks for no further
// stream. Through a proxy that passes everything, one stream syncs it.
func TestWatchListBehindManglingProxy(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	tests := []struct {
		mode                   proxyMode
		wantStreams, wantLists int
		wantWatchList          bool
	}{
		{mode: cutAtEndBookmark, wantStreams: 2, wantLists: 1},
		{mode: dropEndBookmark, wantStreams: 1, wantLists: 1},
		{mode: passEverything, wantStreams: 1, wantWatchList: true},
	}
	for _, tc := range tests {
		for _, contentType := range []string{"protobuf", "json"} {
			t.Run(fmt.Sprintf("%s/%s", tc.mode, contentType), func(t *testing.T) {
				t.Parallel()
				ns := testutil.Namespace(t, admin)
				createConfigMaps(t, env, ns, 20)
				proxy, cfg := newManglingProxy(t, env, "configmaps", tc.mode)
				if contentType == "json" {
					cfg.ContentType = "application/json"
				}
				f := informers.NewFactoryWith(clientset(t, cfg), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
				inf := informers.Informer[*corev1.ConfigMap](f)
				start := time.Now()
				testutil.StartFactory(t, f)
				require.NoError(t, informers.WaitForSync(testutil.Context(t, 5*time.Second), f), "synced within 5 seconds")
				took := time.Since(start)
				lists, watches, streams := proxy.counts()
				t.Logf("synced in %v: %d watch-list streams, %d lists, %d watches", took.Round(time.Millisecond), streams, lists, watches)
				assert.Equal(t, 20, inf.Lister().Len())
				assert.Equal(t, tc.wantStreams, streams, "watch-list requests")
				assert.Equal(t, tc.wantLists, lists, "list requests")
				assert.Equal(t, tc.wantWatchList, inf.UsesWatchList())
				assert.Equal(t, tc.wantWatchList, inf.Stats().WatchList)

				// No storm follows: no further stream or list.
				window := time.NewTimer(quietWindow)
				defer window.Stop()
				for waiting := true; waiting; {
					select {
					case <-proxy.requested:
						if l, _, s := proxy.counts(); l != lists || s != streams {
							t.Fatalf("after the sync: %d more watch-list streams and %d more lists", s-streams, l-lists)
						}
					case <-window.C:
						waiting = false
					}
				}
				lists, watches, streams = proxy.counts()
				t.Logf("%v after: %d watch-list streams, %d lists, %d watches", quietWindow, streams, lists, watches)

				// The informer follows changes through the proxy.
				createConfigMaps(t, env, ns, 1)
				testutil.EventuallyWithin(t, 10*time.Second, func() bool { return inf.Lister().Len() == 21 }, "the new config map cached")
			})
		}
	}
}

// Environment of TestKubeFeatureWatchListClientOff's child process.
const (
	childEnv     = "INFORMERS_TEST_WATCHLIST_CLIENT_OFF_CHILD" // the child's configuration file
	childResults = "child results: "
)

// childConfig is what the child process needs to reach the control plane.
type childConfig struct {
	Host, Token, Namespace string
	CA                     []byte
	Objects                int
}

// childReport is what the child process found, on a line of its output
// after childResults.
type childReport struct {
	GateOn        bool
	UsesWatchList bool
	Lists         int
	Streams       int
	Objects       int
}

// With KUBE_FEATURE_WatchListClient=false in its environment, as client-go
// reads it, a process's informers list and never stream. The gate is read
// once per process, so the informer runs in a child process: this test's
// binary, run again with a marker in the environment.
func TestKubeFeatureWatchListClientOff(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		watchListClientOffChild(t, path)
		return
	}
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ns := testutil.Namespace(t, admin)
	createConfigMaps(t, env, ns, 10)
	cfg := env.Config()
	raw, err := json.Marshal(childConfig{Host: cfg.Host, Token: cfg.BearerToken, CA: cfg.CAData, Namespace: ns, Objects: 10})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "child.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))

	ctx := testutil.Context(t, 2*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKubeFeatureWatchListClientOff$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path, "KUBE_FEATURE_WatchListClient=false")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child process:\n%s", out)
	var report *childReport
	for line := range strings.Lines(string(out)) {
		if _, after, ok := strings.Cut(line, childResults); ok {
			report = &childReport{}
			require.NoError(t, json.Unmarshal([]byte(after), report))
		}
	}
	require.NotNil(t, report, "child process reported nothing:\n%s", out)
	t.Logf("child: %+v", *report)
	assert.False(t, report.GateOn, "the gate is off in the child")
	assert.False(t, report.UsesWatchList)
	assert.Zero(t, report.Streams, "no watch-list request")
	assert.Equal(t, 1, report.Lists, "listed")
	assert.Equal(t, 10, report.Objects)
}

// watchListClientOffChild is TestKubeFeatureWatchListClientOff in the
// child process: it syncs an informer of the config maps that the
// configuration file at path names and prints what it found.
func watchListClientOffChild(t *testing.T, path string) {
	testutil.NoLeaks(t)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var c childConfig
	require.NoError(t, json.Unmarshal(raw, &c))
	w, cfg := &wire{}, &rest.Config{Host: c.Host, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA}, QPS: -1}
	cfg.WrapTransport = w.wrap
	f := informers.NewFactoryWith(clientset(t, cfg), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(c.Namespace), Backoff: informers.Set(fastBackoff)}})
	inf := informers.Informer[*corev1.ConfigMap](f)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
	lists, _, streams := requests(t, w, "configmaps")
	report, err := json.Marshal(childReport{
		GateOn:        clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
		UsesWatchList: inf.UsesWatchList(),
		Lists:         lists,
		Streams:       streams,
		Objects:       inf.Lister().Len(),
	})
	require.NoError(t, err)
	fmt.Println(childResults + string(report))
}
