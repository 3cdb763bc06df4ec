package benchfixtures_test

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// podServerFixture returns 7 pods with managed fields, and a server of
// them writing chunks of 100 bytes, so that pods span chunks.
func podServerFixture(t *testing.T, opts bf.PodServerOptions) (*bf.PodList, *bf.PodServer) {
	t.Helper()
	pods := bf.NewPodList(7, bf.PodOptions{Namespaces: 2, Nodes: 3, ManagedFields: true, Seed: 1})
	enc, err := bf.EncodePods(pods)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, enc.Close()) }) // after the server's, which runs first
	require.Equal(t, 7, enc.Len())
	opts.ChunkSize = 100
	s, err := bf.NewPodServer(enc, opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return pods, s
}

// encodedList is pods start to end of l as the API server encodes a
// PodList page with continue token next.
func encodedList(t *testing.T, l *bf.PodList, start, end int, next string) []byte {
	t.Helper()
	list := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: l.ResourceVersion(), Continue: next},
	}
	for i := start; i < end; i++ {
		list.Items = append(list.Items, *l.Pod(i))
	}
	data, err := bf.Encode(list, bf.Protobuf)
	require.NoError(t, err)
	return data
}

func get(t *testing.T, s *bf.PodServer, query url.Values) (int, []byte) {
	t.Helper()
	resp, err := http.Get(s.URL() + "/api/v1/pods?" + query.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func TestPodServerLists(t *testing.T) {
	type page struct {
		query      url.Values
		start, end int
		next       string
	}
	tests := []struct {
		name  string
		whole bool
		pages []page
	}{
		{"paged at 0", false, []page{
			{url.Values{"limit": {"3"}, "resourceVersion": {"0"}}, 0, 3, "3"},
			{url.Values{"limit": {"3"}, "continue": {"3"}}, 3, 6, "6"},
			{url.Values{"limit": {"3"}, "continue": {"6"}}, 6, 7, ""},
		}},
		{"paged, other limits", false, []page{
			{url.Values{"limit": {"5"}}, 0, 5, "5"},
			{url.Values{"limit": {"1"}, "continue": {"5"}}, 5, 6, "6"},
			{url.Values{"continue": {"6"}}, 6, 7, ""},
		}},
		{"no limit", false, []page{{url.Values{}, 0, 7, ""}}},
		{"whole at 0", true, []page{{url.Values{"limit": {"3"}, "resourceVersion": {"0"}}, 0, 7, ""}}},
		{"whole at latest", true, []page{{url.Values{"limit": {"3"}}, 0, 7, ""}}},
		{"whole lists page at a version", true, []page{
			{url.Values{"limit": {"3"}, "resourceVersion": {"1005"}, "resourceVersionMatch": {"NotOlderThan"}}, 0, 3, "3"},
			{url.Values{"limit": {"3"}, "continue": {"3"}}, 3, 6, "6"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, s := podServerFixture(t, bf.PodServerOptions{WholeLists: tt.whole})
			for _, p := range tt.pages {
				code, body := get(t, s, p.query)
				require.Equal(t, http.StatusOK, code, "%s", body)
				require.Equal(t, encodedList(t, pods, p.start, p.end, p.next), body, "page %v", p.query)
			}
			assert.Equal(t, bf.PodServerRequests{Lists: int64(len(tt.pages))}, s.Requests())
		})
	}
}

func TestPodServerRejects(t *testing.T) {
	tests := []struct {
		name  string
		opts  bf.PodServerOptions
		query url.Values
	}{
		{"bad continue token", bf.PodServerOptions{}, url.Values{"continue": {"x"}}},
		{"continue past the end", bf.PodServerOptions{}, url.Values{"continue": {"7"}}},
		{"bad limit", bf.PodServerOptions{}, url.Values{"limit": {"-1"}}},
		{"watch-list not served", bf.PodServerOptions{NoWatchList: true}, url.Values{"watch": {"true"}, "sendInitialEvents": {"true"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s := podServerFixture(t, tt.opts)
			code, body := get(t, s, tt.query)
			assert.Equal(t, http.StatusBadRequest, code, "%s", body)
			assert.Equal(t, bf.PodServerRequests{Rejected: 1}, s.Requests())
		})
	}
}

// TestPodServerWatchListFrames reads a watch-list stream frame by frame:
// an Added frame per pod, as WatchFrame encodes it, then the bookmark;
// then the stream stays open until the client goes.
func TestPodServerWatchListFrames(t *testing.T) {
	pods, s := podServerFixture(t, bf.PodServerOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/vnd.kubernetes.protobuf;stream=watch", resp.Header.Get("Content-Type"))
	frame := func() []byte {
		var n [4]byte
		_, err := io.ReadFull(resp.Body, n[:])
		require.NoError(t, err)
		f := make([]byte, 4+binary.BigEndian.Uint32(n[:]))
		copy(f, n[:])
		_, err = io.ReadFull(resp.Body, f[4:])
		require.NoError(t, err)
		return f
	}
	for i := range pods.Len() {
		want, err := bf.WatchFrame(watch.Added, pods.Pod(i))
		require.NoError(t, err)
		require.Equal(t, want, frame(), "frame of pod %d", i)
	}
	bookmark, err := bf.WatchFrame(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: pods.ResourceVersion(),
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	require.NoError(t, err)
	require.Equal(t, bookmark, frame())
	assert.Equal(t, bf.PodServerRequests{WatchLists: 1}, s.Requests())
	cancel()
	_, err = io.ReadAll(resp.Body)
	require.Error(t, err, "the stream ends when the client goes")
}

// TestPodServerClientGo has client-go's clientset read the server: a list
// in pages, a watch-list stream and a watch.
func TestPodServerClientGo(t *testing.T) {
	pods, s := podServerFixture(t, bf.PodServerOptions{})
	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	ctx := t.Context()

	var names []string
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 4}
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		require.NoError(t, err)
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		assert.Equal(t, pods.ResourceVersion(), list.ResourceVersion)
		if list.Continue == "" {
			break
		}
		opts = metav1.ListOptions{Limit: 4, Continue: list.Continue}
	}
	var want []string
	for i := range pods.Len() {
		_, name := pods.Key(i)
		want = append(want, name)
	}
	require.Equal(t, want, names)

	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	require.NoError(t, err)
	defer w.Stop()
	names = nil
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		require.True(t, ok, "event %s of %T", ev.Type, ev.Object)
		if ev.Type == watch.Bookmark {
			assert.Equal(t, "true", p.Annotations[metav1.InitialEventsAnnotationKey])
			assert.Equal(t, pods.ResourceVersion(), p.ResourceVersion)
			break
		}
		require.Equal(t, watch.Added, ev.Type)
		names = append(names, p.Name)
	}
	require.Equal(t, want, names)

	plain, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: pods.ResourceVersion()})
	require.NoError(t, err)
	plain.Stop()
	assert.Equal(t, bf.PodServerRequests{Lists: 2, WatchLists: 1, Watches: 1}, s.Requests())
}

// TestPodServerUpdates releases updates in two batches on a watch-list
// stream: they come after the bookmark, in order, as MODIFIED events of
// EncodeUpdates's pods; releasing more than the server has fails.
func TestPodServerUpdates(t *testing.T) {
	pods := bf.NewPodList(7, bf.PodOptions{Namespaces: 2, Nodes: 3, ManagedFields: true, Seed: 1})
	enc, err := bf.EncodePods(pods)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, enc.Close()) })
	updates, err := bf.EncodeUpdates(pods, 5, 3)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, updates.Close()) })
	s, err := bf.NewPodServer(enc, bf.PodServerOptions{ChunkSize: 100, Updates: updates})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	again, err := bf.EncodeUpdates(pods, 5, 3)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, again.Close()) })
	require.Equal(t, updates.Bytes(), again.Bytes(), "the same seed makes the same updates")

	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	w, err := cs.CoreV1().Pods("").Watch(t.Context(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	require.NoError(t, err)
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Bookmark {
			break
		}
	}
	rv, err := strconv.Atoi(pods.ResourceVersion())
	require.NoError(t, err)
	seen := 0
	for _, batch := range []int{2, 3} {
		require.NoError(t, s.Release(batch))
		for range batch {
			ev := <-w.ResultChan()
			require.Equal(t, watch.Modified, ev.Type)
			p, ok := ev.Object.(*corev1.Pod)
			require.True(t, ok, "%T", ev.Object)
			seen++
			assert.Equal(t, strconv.Itoa(rv+seen), p.ResourceVersion)
			assert.Equal(t, p.ResourceVersion, p.Annotations["bench/revision"])
		}
	}
	require.Error(t, s.Release(1), "the server has 5 updates")
}
