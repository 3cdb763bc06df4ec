package integration

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// metadataView is a view of metadata alone.
type metadataView struct {
	informers.ViewMeta `json:"metadata"`
}

func (v *metadataView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }

// bodyCounter counts the bytes of the responses to one resource's
// requests that the client reads, as it reads them: after the transport
// decompressed them. It records the query and Accept header of each
// request.
type bodyCounter struct {
	resource string
	next     http.RoundTripper

	mu       sync.Mutex
	read     int64
	requests []countedRequest
}

// countedRequest is a request of the resource.
type countedRequest struct {
	kind          requestKind
	query, accept string
}

func (c *bodyCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	c.next = rt
	return c
}

func (c *bodyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	kind := kindOf(req.Method, req.URL, c.resource)
	if err != nil || kind == otherRequest {
		return resp, err
	}
	c.mu.Lock()
	c.requests = append(c.requests, countedRequest{kind: kind, query: req.URL.RawQuery, accept: req.Header.Get("Accept")})
	c.mu.Unlock()
	resp.Body = &countedBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

// bytes returns the bytes read so far.
func (c *bodyCounter) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read
}

// sent returns the requests of the resource so far.
func (c *bodyCounter) sent() []countedRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]countedRequest(nil), c.requests...)
}

// countedBody is a response body whose bytes read its counter counts.
type countedBody struct {
	io.ReadCloser
	c *bodyCounter
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.mu.Lock()
	b.c.read += int64(n)
	b.c.mu.Unlock()
	return n, err
}

// randomBytes returns n random bytes, which no compression shrinks.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return b
}

// An informer of the metadata of config maps, whether a view of metadata
// alone, the full type with every other field skipped, or
// *metav1.PartialObjectMetadata, reads no data: the server sends it the
// metadata alone. 100 config maps of 100 KB of random data each, 10 MB
// whole, cost less than 1 MB read by the client, after decompression, on
// a list, on a watch-list stream and on a watch that 20 updates of 100 KB
// go through; the watch-list stream asks for its initial events
// (sendInitialEvents=true) and for the metadata alone. An informer of the
// full type, the count's control, reads every byte.
func TestMetadataViewProjected(t *testing.T) {
	env, cs, ns, ctx := sharedServer(t, 5*time.Minute)
	const count, size, updates, limit = 100, 100 << 10, 20, 1 << 20
	require.NoError(t, parallel(count, 8, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Labels: map[string]string{"index": fmt.Sprint(i)}},
			BinaryData: map[string][]byte{"blob": randomBytes(size)},
		}, metav1.CreateOptions{})
		return err
	}))
	skipData := []string{"data", "binaryData", "immutable"}
	for _, path := range []struct {
		name      string
		watchList bool
	}{{"watch-list", true}, {"list", false}} {
		for _, impl := range []struct {
			name string
			sync func(t *testing.T, cfg *rest.Config, ns string, watchList bool) metadataCache
			// whole says the informer reads whole objects: the
			// counter's control.
			whole bool
		}{
			{"view", syncMetadataOf(informers.Options[*metadataView]{Resource: corev1.SchemeGroupVersion.WithResource("configmaps")}), false},
			{"full-type-skipping-the-rest", syncMetadataOf(informers.Options[*corev1.ConfigMap]{SkipFields: skipData}), false},
			{"metadata", syncMetadataOf(informers.Options[*metav1.PartialObjectMetadata]{Resource: corev1.SchemeGroupVersion.WithResource("configmaps")}), false},
			{"full-type", syncMetadataOf(informers.Options[*corev1.ConfigMap]{}), true},
		} {
			t.Run(path.name+"/"+impl.name, func(t *testing.T) {
				counter := &bodyCounter{resource: "configmaps"}
				cfg := env.Config()
				cfg.WrapTransport = counter.wrap
				c := impl.sync(t, cfg, ns, path.watchList)
				assert.Equal(t, count, c.len())
				assert.Equal(t, path.watchList, c.usesWatchList())
				for i := range count {
					labels, _, ok := c.get(ns, fmt.Sprintf("cm-%03d", i))
					require.True(t, ok)
					assert.Equal(t, fmt.Sprint(i), labels["index"])
				}
				synced := counter.bytes()
				t.Logf("sync read %d bytes", synced)
				if impl.whole {
					assert.Greater(t, synced, int64(count*size), "the sync reads every config map whole")
				} else {
					assert.Less(t, synced, int64(limit), "the sync reads no data")
				}
				kinds := map[requestKind]int{}
				for _, r := range counter.sent() {
					kinds[r.kind]++
					projected := strings.HasPrefix(r.accept, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata")
					assert.Equal(t, !impl.whole, projected, "%s asked for %s", r.query, r.accept)
				}
				if path.watchList {
					assert.Equal(t, 1, kinds[watchListRequest], "one watch-list stream, with sendInitialEvents=true")
					assert.Zero(t, kinds[listRequest])
				} else {
					assert.Zero(t, kinds[watchListRequest])
					assert.Positive(t, kinds[listRequest])
				}

				updated := map[string]string{}
				for i := range updates {
					name := fmt.Sprintf("cm-%03d", i)
					cm, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"index": fmt.Sprint(i), "updated": "yes"}},
						BinaryData: map[string][]byte{"blob": randomBytes(size)},
					}, metav1.UpdateOptions{})
					require.NoError(t, err)
					updated[name] = cm.ResourceVersion
				}
				testutil.EventuallyWithin(t, time.Minute, func() bool {
					for name, rv := range updated {
						labels, got, ok := c.get(ns, name)
						if !ok || got != rv || labels["updated"] != "yes" {
							return false
						}
					}
					return true
				}, "the updates arrive")
				watched := counter.bytes() - synced
				t.Logf("the watch read %d bytes", watched)
				if impl.whole {
					assert.Greater(t, watched, int64(updates*size), "the watch reads every update whole")
				} else {
					assert.Less(t, watched, int64(limit), "the watch reads no data")
				}
			})
		}
	}
}

// metadataCache is what TestMetadataViewProjected reads of an informer.
type metadataCache struct {
	len           func() int
	usesWatchList func() bool
	// get returns the labels and resource version of an object.
	get func(ns, name string) (map[string]string, string, bool)
}

// syncMetadataOf returns how to start a factory's informer of T in ns
// with opts from cfg, streaming if watchList, and wait for its sync.
func syncMetadataOf[T informers.Object](opts informers.Options[T]) func(t *testing.T, cfg *rest.Config, ns string, watchList bool) metadataCache {
	return func(t *testing.T, cfg *rest.Config, ns string, watchList bool) metadataCache {
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Tuning: informers.Tuning{Namespace: informers.Set(ns), DisableWatchList: informers.Set(!watchList), Backoff: informers.Set(fastBackoff)}})
		inf := informers.InformerWith(f, opts)
		require.NoError(t, inf.LastError())
		testutil.StartFactory(t, f)
		require.NoError(t, informers.WaitForSync(testutil.Context(t, time.Minute), f))
		return metadataCache{
			len:           inf.Lister().Len,
			usesWatchList: inf.UsesWatchList,
			get: func(ns, name string) (map[string]string, string, bool) {
				obj, err := inf.Lister().Namespace(ns).Get(name)
				if err != nil {
					return nil, "", false
				}
				return obj.GetLabels(), obj.GetResourceVersion(), true
			},
		}
	}
}

// A view of the metadata of a custom resource is projected too, and sent
// in protobuf, which kube-apiserver encodes PartialObjectMetadata in for
// custom resources as for built-in types.
func TestMetadataViewOfCustomResource(t *testing.T) {
	env, _, ns, ctx := sharedServer(t, 2*time.Minute)
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	const group = "metaviews.example.com"
	createGadgetCRDIn(t, dyn, ctx, group)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	for i := range 3 {
		g := gadget(ns, fmt.Sprintf("g%d", i), int64(i))
		g.SetAPIVersion(group + "/v1")
		g.SetLabels(map[string]string{"index": fmt.Sprint(i)})
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	w, cfg := recorded(env)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	views := informers.InformerWith(f, informers.Options[*metadataView]{Resource: gvr})
	require.NoError(t, views.LastError())
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	require.Equal(t, 3, views.Lister().Len())
	for i := range 3 {
		v, err := views.Lister().Namespace(ns).Get(fmt.Sprintf("g%d", i))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint(i), v.Labels["index"])
	}
	checked := 0
	for _, ex := range w.exchanges() {
		if ex.status == http.StatusOK && pathEndsWithURL(ex.url, "gadgets") {
			assert.True(t, strings.HasPrefix(ex.contentType, "application/vnd.kubernetes.protobuf"), "%s: %s", ex.url, ex.contentType)
			checked++
		}
	}
	assert.Positive(t, checked)
}

// A server that cannot project (a proxy in front of kube-apiserver that
// answers every request for metadata alone 406 Not Acceptable) leaves an
// informer of metadata alone reading whole objects: it syncs and follows
// updates all the same, and asks for the projection once.
func TestMetadataViewFallsBackToWholeObjects(t *testing.T) {
	env, cs, ns, ctx := sharedServer(t, 2*time.Minute)
	createConfigMaps(t, env, ns, 10)
	upstream := env.Config()
	target, err := url.Parse(upstream.Host)
	require.NoError(t, err)
	transport, err := rest.TransportFor(upstream) // TLS and the bearer token
	require.NoError(t, err)
	var mu sync.Mutex
	var refused, whole int
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1,
		ErrorLog:      log.New(testWriter{t}, "proxy: ", 0),
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if kindOf(r.Method, r.URL, "configmaps") != otherRequest {
			projected := strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata")
			mu.Lock()
			if projected {
				refused++
			} else {
				whole++
			}
			mu.Unlock()
			if projected {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotAcceptable)
				_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
					Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: "the metadata alone is not served"})
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close) // after the informers, whose cleanups run first

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: &rest.Config{Host: proxy.URL, QPS: -1}, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	views := informers.InformerWith(f, informers.Options[*metadataView]{Resource: corev1.SchemeGroupVersion.WithResource("configmaps")})
	require.NoError(t, views.LastError())
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	require.Equal(t, 10, views.Lister().Len())
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Labels: map[string]string{"late": "yes"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		v, err := views.Lister().Namespace(ns).Get("later")
		return err == nil && v.ResourceVersion == cm.ResourceVersion && v.Labels["late"] == "yes"
	}, "the new config map arrives")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, refused, "the projection asked for once")
	assert.Positive(t, whole)
}
