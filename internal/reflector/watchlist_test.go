package reflector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clocktesting "k8s.io/utils/clock/testing"
)

// streamServer serves pods to a reflector that runs on a fake clock: it
// hands the test every watch-list stream and plain watch the reflector
// opens, answers every list with the same list, and records each request
// with the fake time it came at.
type streamServer struct {
	clk     *clocktesting.FakeClock
	t0      time.Time
	streams chan *testWatch // watch-list streams
	watches chan *testWatch // plain watches
	answer  *corev1.PodList

	mu   sync.Mutex
	reqs []request
}

// request is a request the reflector made.
type request struct {
	op   Op
	at   time.Duration // fake time since the server started
	opts metav1.ListOptions
}

func newStreamServer() *streamServer {
	clk := clocktesting.NewFakeClock(time.Now())
	return &streamServer{
		clk:     clk,
		t0:      clk.Now(),
		streams: make(chan *testWatch, 10),
		watches: make(chan *testWatch, 10),
		answer:  podList("20", "", "a", "b"),
	}
}

func (s *streamServer) record(op Op, opts metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, request{op: op, at: s.clk.Since(s.t0), opts: opts})
}

func (s *streamServer) list(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	s.record(OpList, opts)
	return s.answer.DeepCopy(), nil
}

// testWatch is a fake watch that tells when the reflector stops it.
type testWatch struct {
	*watch.FakeWatcher
	once    sync.Once
	stopped chan struct{}
}

// Stop is the reflector's: it stops the watch.
func (w *testWatch) Stop() {
	w.once.Do(func() { close(w.stopped) })
	w.FakeWatcher.Stop()
}

// close is the server's: it ends the stream.
func (w *testWatch) close() { w.FakeWatcher.Stop() }

func (s *streamServer) watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := &testWatch{FakeWatcher: watch.NewFakeWithChanSize(10, false), stopped: make(chan struct{})}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		s.record(OpWatchList, opts)
		s.streams <- w
	} else {
		s.record(OpWatch, opts)
		s.watches <- w
	}
	return w, nil
}

// ops returns the requests' ops in order.
func (s *streamServer) ops() []Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := make([]Op, len(s.reqs))
	for i, r := range s.reqs {
		ops[i] = r.op
	}
	return ops
}

// count returns how many requests of op were made.
func (s *streamServer) count(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reqs {
		if r.op == op {
			n++
		}
	}
	return n
}

// nth returns the n-th request of op (from 1).
func (s *streamServer) nth(t *testing.T, op Op, n int) request {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		if r.op == op {
			if n--; n == 0 {
				return r
			}
		}
	}
	t.Fatalf("no request %s number %d", op, n)
	return request{}
}

// streamHarness runs a streaming reflector of a streamServer's pods.
type streamHarness struct {
	t    *testing.T
	srv  *streamServer
	clk  *clocktesting.FakeClock
	sink *recordingSink
	r    *Reflector[*corev1.Pod, *corev1.PodList]
	last *testWatch // the last watch the reflector opened
}

// harnessBackoff is the streaming harness's backoff: one fixed second.
const harnessBackoff = time.Second

func startStreaming(t *testing.T) *streamHarness {
	t.Helper()
	require.True(t, clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient),
		"these tests need client-go's WatchListClient feature gate on")
	srv := newStreamServer()
	sink := newSink()
	c := podsConfig(srv)
	c.WatchList, c.Clock = true, srv.clk
	c.Backoff = &wait.Backoff{Duration: harnessBackoff, Factor: 1, Steps: 1 << 30}
	r := New[*corev1.Pod, *corev1.PodList](c, sink)
	runUntilCleanup(t, r)
	return &streamHarness{t: t, srv: srv, clk: srv.clk, sink: sink, r: r}
}

// poll waits, for a bounded time, until cond holds, calling step, if
// given, between its checks.
func (h *streamHarness) poll(msg string, cond func() bool, step func()) {
	h.t.Helper()
	deadline := time.Now().Add(wait.ForeverTestTimeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting: %s (requests %v)", msg, h.srv.ops())
		}
		if step != nil {
			step()
		}
		<-tick.C
	}
}

// next returns the next watch of ch. After a watch failed the reflector
// stops it and waits for its backoff: then next waits for that, and steps
// the fake clock by the backoff.
func (h *streamHarness) next(ch chan *testWatch, afterBackoff bool) *testWatch {
	h.t.Helper()
	if afterBackoff {
		require.NotNil(h.t, h.last, "no watch failed")
		select {
		case <-h.last.stopped:
		case <-time.After(wait.ForeverTestTimeout):
			h.t.Fatalf("the failed watch was not stopped; requests %v", h.srv.ops())
		}
		h.poll("the reflector backing off", h.clk.HasWaiters, nil)
		h.clk.Step(harnessBackoff)
	}
	var w *testWatch
	h.poll("a watch", func() bool {
		select {
		case w = <-ch:
			return true
		default:
			return false
		}
	}, nil)
	h.last = w
	return w
}

// stream returns the next watch-list stream.
func (h *streamHarness) stream() *testWatch { return h.next(h.srv.streams, false) }

// retry returns the next watch-list stream, which comes after a backoff.
func (h *streamHarness) retry() *testWatch { return h.next(h.srv.streams, true) }

// plainWatch returns the next plain watch.
func (h *streamHarness) plainWatch() *testWatch { return h.next(h.srv.watches, false) }

// applied waits until the sink was given call.
func (h *streamHarness) applied(call string) {
	h.t.Helper()
	h.poll(call, func() bool { return slices.Contains(h.sink.get(), call) }, nil)
}

// idle waits until the reflector waits on the fake clock: for the idle
// timer of the stream it reads, or for the timer of its next step. It
// returns at once if the reflector listed meanwhile.
func (h *streamHarness) idle() {
	h.t.Helper()
	h.poll("the reflector waiting", func() bool { return h.clk.Waiters() > 0 || h.srv.count(OpList) > 0 }, nil)
}

// listed waits until the reflector made n lists, without moving the clock.
func (h *streamHarness) listed(n int) request {
	h.t.Helper()
	h.poll(fmt.Sprintf("list %d", n), func() bool { return h.srv.count(OpList) >= n }, nil)
	return h.srv.nth(h.t, OpList, n)
}

func (h *streamHarness) synced() {
	h.t.Helper()
	select {
	case <-h.sink.synced:
	case <-time.After(wait.ForeverTestTimeout):
		h.t.Fatalf("not synced; requests %v", h.srv.ops())
	}
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, ResourceVersion: rv}}
}

// endBookmark is the bookmark that ends a stream's initial events.
func endBookmark(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
}

// deliver sends w's initial events and the bookmark that ends them.
func deliver(w *testWatch, rv string) {
	w.Add(pod("a", "5"))
	w.Action(watch.Bookmark, endBookmark(rv))
}

// How a reflector gets its initial state from watch-list streams that
// deliver it, close before its end, go quiet or show that the server
// ignores sendInitialEvents; and when, on the fake clock, it lists
// instead.
func TestWatchListFallback(t *testing.T) {
	tests := []struct {
		name string
		// serve plays the server until the reflector syncs, and returns
		// the fake time the reflector must list at, if it lists.
		serve       func(h *streamHarness) (listAt time.Duration)
		wantStreams int
		wantLists   int
	}{{
		name: "delivered: one stream, no list",
		serve: func(h *streamHarness) time.Duration {
			deliver(h.stream(), "12")
			return 0
		},
		wantStreams: 1,
	}, {
		name: "closed once, delivered by the retry after a backoff",
		serve: func(h *streamHarness) time.Duration {
			w := h.stream()
			w.Add(pod("a", "5"))
			h.applied("put a")
			w.close()
			deliver(h.retry(), "12")
			assert.Equal(h.t, harnessBackoff, h.srv.nth(h.t, OpWatchList, 2).at, "retried after the backoff")
			return 0
		},
		wantStreams: 2,
	}, {
		name: "closed before the bookmark twice: lists at once after the second",
		serve: func(h *streamHarness) time.Duration {
			for i, next := range []func() *testWatch{h.stream, h.retry} {
				w := next()
				w.Add(pod(fmt.Sprint("a", i), "5"))
				h.applied(fmt.Sprint("put a", i))
				w.close()
			}
			assert.Equal(h.t, harnessBackoff, h.srv.nth(h.t, OpWatchList, 2).at, "retried after the backoff")
			return h.srv.nth(h.t, OpWatchList, 2).at
		},
		wantStreams: 2,
		wantLists:   1,
	}, {
		name: "closed at once without events twice: lists after the second",
		serve: func(h *streamHarness) time.Duration {
			h.stream().close()
			h.retry().close()
			return h.srv.nth(h.t, OpWatchList, 2).at
		},
		wantStreams: 2,
		wantLists:   1,
	}, {
		name: "quiet right after the request: lists after the idle window",
		serve: func(h *streamHarness) time.Duration {
			h.stream()
			h.idle()
			h.clk.Step(watchListIdle)
			return watchListIdle
		},
		wantStreams: 1,
		wantLists:   1,
	}, {
		name: "quiet after its events: lists the idle window after the last one",
		serve: func(h *streamHarness) time.Duration {
			w := h.stream()
			w.Add(pod("a", "5"))
			h.applied("put a")
			h.clk.Step(watchListIdle - time.Second)
			w.Add(pod("b", "6"))
			h.applied("put b")
			h.clk.Step(watchListIdle - time.Second) // the idle timer fires, too early
			h.idle()
			require.Zero(h.t, h.srv.count(OpList), "not quiet for the whole window yet")
			h.clk.Step(time.Second)
			return 2*watchListIdle - time.Second
		},
		wantStreams: 1,
		wantLists:   1,
	}, {
		name: "a bookmark without the annotation: lists at once, from the version it had",
		serve: func(h *streamHarness) time.Duration {
			w := h.stream()
			w.Add(pod("a", "5"))
			w.Action(watch.Bookmark, pod("", "15"))
			assert.Equal(h.t, "0", h.listed(1).opts.ResourceVersion, "the bookmark did not move the version")
			return 0
		},
		wantStreams: 1,
		wantLists:   1,
	}, {
		name: "changes without the bookmark: lists after the outer bound",
		serve: func(h *streamHarness) time.Duration {
			w := h.stream()
			w.Add(pod("a", "5"))
			h.applied("put a")
			for rv := 6; h.srv.count(OpList) == 0; rv++ {
				// A change every two seconds: never quiet for the
				// idle window.
				h.clk.Step(2 * time.Second)
				h.idle()
				if h.srv.count(OpList) == 0 {
					n := len(h.sink.get())
					w.Modify(pod("a", fmt.Sprint(rv)))
					h.poll("the change applied", func() bool { return len(h.sink.get()) > n }, nil)
				}
			}
			return 2*time.Second + watchListChanges // from the first change
		},
		wantStreams: 1,
		wantLists:   1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startStreaming(t)
			listAt := tc.serve(h)
			h.synced()
			assert.Equal(t, tc.wantStreams, h.srv.count(OpWatchList), "watch-list requests")
			assert.Equal(t, tc.wantLists, h.srv.count(OpList), "list requests")
			assert.Equal(t, tc.wantLists == 0, h.r.UsesWatchList())
			if tc.wantLists > 0 {
				assert.Equal(t, listAt, h.srv.nth(t, OpList, 1).at, "listed when")
				assert.Equal(t, "20", h.r.LastSyncResourceVersion())
			} else {
				assert.Equal(t, "12", h.r.LastSyncResourceVersion())
			}
		})
	}
}

// After a sync that had to list, each relist tries one watch-list stream,
// and lists at once if that one fails too; once a stream delivers, a
// stream closed early is tried again before listing.
func TestWatchListTriedOncePerRelistAfterFallback(t *testing.T) {
	expired := &apierrors.NewResourceExpired("too old").ErrStatus
	tests := []struct {
		name  string
		tries int // streams before the first list
		fail  func(h *streamHarness, w *testWatch)
	}{
		{name: "closed", tries: 2, fail: func(_ *streamHarness, w *testWatch) { w.close() }},
		{name: "quiet", tries: 1, fail: func(h *streamHarness, _ *testWatch) { h.idle(); h.clk.Step(watchListIdle) }},
		{name: "bookmark without annotation", tries: 1, fail: func(_ *streamHarness, w *testWatch) { w.Action(watch.Bookmark, pod("", "15")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startStreaming(t)
			var want []Op
			for i := range tc.tries {
				if i == 0 {
					tc.fail(h, h.stream())
				} else {
					tc.fail(h, h.retry())
				}
				want = append(want, OpWatchList)
			}
			h.listed(1)
			w := h.plainWatch()
			h.synced()
			assert.False(t, h.r.UsesWatchList(), "listed: not streaming")
			want = append(want, OpList, OpWatch)

			// A relist: one stream, then a list at once.
			w.Error(expired)
			tc.fail(h, h.retry())
			at := h.srv.nth(t, OpWatchList, tc.tries+1).at
			if tc.name == "quiet" {
				at += watchListIdle
			}
			assert.Equal(t, at, h.listed(2).at, "listed at once")
			w = h.plainWatch()
			want = append(want, OpWatchList, OpList, OpWatch)
			assert.False(t, h.r.UsesWatchList())

			// Another relist: the stream delivers.
			w.Error(expired)
			w = h.retry()
			deliver(w, "30")
			h.poll("streaming again", h.r.UsesWatchList, nil)
			assert.Equal(t, "30", h.r.LastSyncResourceVersion())
			want = append(want, OpWatchList)

			// Streaming again: a stream closed early is tried again.
			w.Error(expired)
			h.retry().close()
			deliver(h.retry(), "40")
			h.poll("synced by the retry", func() bool { return h.r.LastSyncResourceVersion() == "40" }, nil)
			want = append(want, OpWatchList, OpWatchList)
			assert.Equal(t, want, h.srv.ops())
			assert.True(t, h.r.UsesWatchList())
		})
	}
}

// With client-go's WatchListClient feature gate off, a reflector
// configured to stream lists, from the start.
func TestWatchListClientFeatureGateOff(t *testing.T) {
	gates, ok := clientfeatures.FeatureGates().(interface {
		Set(clientfeatures.Feature, bool) error
	})
	require.True(t, ok, "client-go's feature gates (%T) cannot be set", clientfeatures.FeatureGates())
	was := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	require.NoError(t, gates.Set(clientfeatures.WatchListClient, false))
	t.Cleanup(func() { require.NoError(t, gates.Set(clientfeatures.WatchListClient, was)) })

	srv := newStreamServer()
	sink := newSink()
	c := podsConfig(srv)
	c.WatchList = true
	r := New[*corev1.Pod, *corev1.PodList](c, sink)
	assert.False(t, r.UsesWatchList(), "not streaming from the start")
	runUntilCleanup(t, r)
	select {
	case <-srv.watches:
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("no watch")
	}
	<-sink.synced
	assert.Equal(t, []Op{OpList, OpWatch}, srv.ops())
	assert.False(t, r.UsesWatchList())
}
