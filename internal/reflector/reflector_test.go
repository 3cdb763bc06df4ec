package reflector

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recordingSink records what the reflector tells it.
type recordingSink struct {
	mu       sync.Mutex
	calls    []string
	synced   chan struct{}
	once     sync.Once
	onFinish func()            // called at FinishList, if set
	onPut    func(name string) // called at Put, if set
	origins  []Origin          // of every Put
}

func newSink() *recordingSink { return &recordingSink{synced: make(chan struct{})} }

func (s *recordingSink) add(c string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}
func (s *recordingSink) StartList() { s.add("start") }
func (s *recordingSink) Put(p *corev1.Pod, o Origin) {
	s.add("put " + p.Name)
	s.mu.Lock()
	s.origins = append(s.origins, o)
	s.mu.Unlock()
	if s.onPut != nil {
		s.onPut(p.Name)
	}
}
func (s *recordingSink) Delete(p *corev1.Pod) { s.add("delete " + p.Name) }
func (s *recordingSink) FinishList() {
	s.add("finish")
	if s.onFinish != nil {
		s.onFinish()
	}
}
func (s *recordingSink) Watching() { s.once.Do(func() { close(s.synced) }) }
func (s *recordingSink) Undecodable(u Undecodable, deleted bool) {
	_, name, _, rv := u.Identity()
	what := "undecodable "
	if deleted {
		what = "undecodable-delete "
	}
	s.add(what + name + "@" + rv)
}
func (s *recordingSink) Flush() {}
func (s *recordingSink) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func podList(rv, cont string, names ...string) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, n := range names {
		l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: n, ResourceVersion: rv}})
	}
	return l
}

type listCall struct {
	opts metav1.ListOptions
	resp *corev1.PodList
	err  error
}

// scripted answers list requests from a script, records them, and opens
// fake watches.
type scripted struct {
	mu      sync.Mutex
	lists   []listCall // answers, in order; the last repeats
	seen    []metav1.ListOptions
	watches chan *watch.FakeWatcher
	wopts   []metav1.ListOptions
}

func (s *scripted) list(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, opts)
	c := s.lists[0]
	if len(s.lists) > 1 {
		s.lists = s.lists[1:]
	}
	return c.resp, c.err
}

func (s *scripted) watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(10, false)
	s.mu.Lock()
	s.wopts = append(s.wopts, opts)
	s.mu.Unlock()
	s.watches <- w
	return w, nil
}

func (s *scripted) listOpts() []metav1.ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metav1.ListOptions(nil), s.seen...)
}

// relistAfterExpiry waits for the reflector's first watch and sync, ends
// that watch with "too old", and returns the options of every list once
// the reflector, having listed again, watches again.
func (s *scripted) relistAfterExpiry(sink *recordingSink) []metav1.ListOptions {
	w := <-s.watches
	<-sink.synced
	w.Error(&apierrors.NewResourceExpired("too old").ErrStatus)
	<-s.watches
	return s.listOpts()
}

// runUntilCleanup runs r until the test ends.
func runUntilCleanup(t *testing.T, r *Reflector[*corev1.Pod, *corev1.PodList]) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// podServer is a scripted server of pods.
type podServer interface {
	list(context.Context, metav1.ListOptions) (*corev1.PodList, error)
	watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// podsConfig configures a reflector of the pods that s serves, which
// retries at once.
func podsConfig(s podServer) Config[*corev1.PodList] {
	return Config[*corev1.PodList]{
		Description: "pods",
		List:        s.list,
		Watch:       s.watch,
		Backoff:     &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30},
	}
}

func start(t *testing.T, s *scripted, sink *recordingSink, pageSize int64) *Reflector[*corev1.Pod, *corev1.PodList] {
	t.Helper()
	c := podsConfig(s)
	c.PageSize = pageSize
	r := New[*corev1.Pod, *corev1.PodList](c, sink)
	runUntilCleanup(t, r)
	return r
}

func TestPagesThenWatchFromListVersion(t *testing.T) {
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
		{resp: podList("10", "next", "a", "b")},
		{resp: podList("10", "", "c")},
	}}
	sink := newSink()
	r := start(t, s, sink, 2)
	<-s.watches
	<-sink.synced
	assert.Equal(t, []string{"start", "put a", "put b", "put c", "finish"}, sink.get())
	opts := s.listOpts()
	require.Len(t, opts, 2)
	assert.Equal(t, metav1.ListOptions{ResourceVersion: "0", Limit: 2}, opts[0], "first list at 0")
	assert.Equal(t, metav1.ListOptions{Limit: 2, Continue: "next"}, opts[1], "continuation without a version")
	s.mu.Lock()
	assert.Equal(t, "10", s.wopts[0].ResourceVersion)
	assert.True(t, s.wopts[0].AllowWatchBookmarks)
	assert.NotNil(t, s.wopts[0].TimeoutSeconds)
	s.mu.Unlock()
	assert.Equal(t, "10", r.LastSyncResourceVersion())
}

// After a 410 the reflector relists from the last version; if the server
// says that version is too large (it was restored from an older backup) or
// expired, it lists again from "", a consistent read.
// The next page is requested while the sink takes the current one.
func TestNextPageFetchedWhileSinkTakesPage(t *testing.T) {
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
		{resp: podList("10", "next", "a")},
		{resp: podList("10", "", "b")},
	}}
	sink := newSink()
	sink.onPut = func(name string) {
		if name != "a" {
			return
		}
		deadline := time.Now().Add(time.Minute)
		for len(s.listOpts()) < 2 {
			if time.Now().After(deadline) {
				t.Error("the second page was not requested while the first was put")
				return
			}
			runtime.Gosched()
		}
	}
	start(t, s, sink, 1)
	<-s.watches
	assert.Equal(t, []string{"start", "put a", "put b", "finish"}, sink.get())
	opts := s.listOpts()
	require.Len(t, opts, 2)
	assert.Equal(t, "next", opts[1].Continue)
}

// A list that ends while the next page is being fetched waits for that
// fetch, cancelled, to return (goleak checks that no goroutine is left).
func TestPageFetchAbandoned(t *testing.T) {
	fetching := make(chan struct{})
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10)}
	lists := 0
	list := func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
		if lists++; lists == 1 {
			return podList("10", "next", "a"), nil
		}
		close(fetching)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	sink := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	sink.onPut = func(string) {
		<-fetching
		cancel()
	}
	r := New[*corev1.Pod, *corev1.PodList](Config[*corev1.PodList]{Description: "pods", List: list, Watch: s.watch, PageSize: 1}, sink)
	r.Run(ctx)
	assert.Equal(t, 2, lists)
	assert.Equal(t, []string{"start", "put a"}, sink.get())
}

func TestRelistFallsBackToConsistentRead(t *testing.T) {
	tooLarge := apierrors.NewTimeoutError("Too large resource version", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
		{resp: podList("10", "", "a")},
		{err: tooLarge},
		{resp: podList("5", "", "b")},
	}}
	sink := newSink()
	r := start(t, s, sink, 0)
	opts := s.relistAfterExpiry(sink)
	require.Len(t, opts, 3)
	assert.Equal(t, "0", opts[0].ResourceVersion)
	assert.Equal(t, "10", opts[1].ResourceVersion, "relist from the last version")
	assert.Zero(t, opts[1].Limit, "served by the watch cache: no limit")
	assert.Equal(t, "", opts[2].ResourceVersion, "then a consistent read")
	assert.Equal(t, "5", r.LastSyncResourceVersion())
	assert.Equal(t, []string{"start", "put a", "finish", "start", "put b", "finish"}, sink.get())
}

// A continuation that expired makes the reflector list again in one piece.
func TestExpiredContinuation(t *testing.T) {
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
		{resp: podList("10", "next", "a")},
		{err: apierrors.NewResourceExpired("continue token expired")},
		{resp: podList("11", "", "a", "b")},
	}}
	sink := newSink()
	start(t, s, sink, 1)
	<-s.watches
	<-sink.synced
	opts := s.listOpts()
	require.Len(t, opts, 3)
	assert.Equal(t, metav1.ListOptions{ResourceVersion: "0"}, opts[2], "in one piece")
	assert.Equal(t, []string{"start", "put a", "start", "put a", "put b", "finish"}, sink.get(),
		"a new generation, so that what only the expired pages held is swept")
}

// Servers 1.17.0 to 1.18.5 said "too large resource version" only in a
// status cause's message; a relist at that version must fall back to a
// consistent read, not retry it forever.
func TestTooLargeResourceVersionForms(t *testing.T) {
	causeOnly := apierrors.NewTimeoutError("request did not complete", 1)
	causeOnly.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	tests := map[string]error{
		"cause type":    &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 504, Reason: metav1.StatusReasonTimeout, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}},
		"cause message": causeOnly,
		"message":       apierrors.NewTimeoutError("Too large resource version: 12, current: 10", 1),
	}
	for name, tooLarge := range tests {
		t.Run(name, func(t *testing.T) {
			assert.True(t, isTooLargeResourceVersion(tooLarge))
			s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
				{resp: podList("10", "", "a")},
				{err: tooLarge},
				{resp: podList("12", "", "a")},
			}}
			sink := newSink()
			start(t, s, sink, 0)
			opts := s.relistAfterExpiry(sink)
			require.Len(t, opts, 3)
			assert.Equal(t, "10", opts[1].ResourceVersion)
			assert.Equal(t, "", opts[2].ResourceVersion, "a consistent read after the version was refused")
		})
	}
	assert.False(t, isTooLargeResourceVersion(apierrors.NewTimeoutError("request did not complete", 1)))
}

// A page size given in the config pages every list, relists at a version
// included; by default a relist at a version is left whole for the watch
// cache.
func TestPageSizePagesEveryList(t *testing.T) {
	for _, pageSize := range []int64{0, 2} {
		t.Run(fmt.Sprintf("pageSize=%d", pageSize), func(t *testing.T) {
			s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
				{resp: podList("10", "", "a")},
				{resp: podList("11", "", "a")},
			}}
			sink := newSink()
			start(t, s, sink, pageSize)
			opts := s.relistAfterExpiry(sink)
			require.Len(t, opts, 2)
			assert.Equal(t, "10", opts[1].ResourceVersion)
			if pageSize == 0 {
				assert.Equal(t, int64(500), opts[0].Limit)
				assert.Zero(t, opts[1].Limit)
				assert.Empty(t, opts[1].ResourceVersionMatch, "no limit: not older than by default")
			} else {
				assert.Equal(t, pageSize, opts[0].Limit)
				assert.Equal(t, pageSize, opts[1].Limit)
				assert.Equal(t, metav1.ResourceVersionMatchNotOlderThan, opts[1].ResourceVersionMatch,
					"a paged list at a version would otherwise be an exact read")
			}
		})
	}
}

// startWithClock runs a reflector on a fake clock.
func startWithClock(t *testing.T, s *scripted, sink *recordingSink, clk *clocktesting.FakeClock, watchList bool) {
	t.Helper()
	c := podsConfig(s)
	c.WatchList, c.Clock = watchList, clk
	runUntilCleanup(t, New[*corev1.Pod, *corev1.PodList](c, sink))
}

// stepUntil advances the fake clock by step whenever the reflector waits on
// it, until done reports true.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, step time.Duration, done func() bool) {
	t.Helper()
	for i := 0; !done(); i++ {
		require.Less(t, i, 10_000, "condition not reached")
		if clk.HasWaiters() {
			clk.Step(step)
		}
		time.Sleep(time.Millisecond) // let the reflector run between steps of the fake clock
	}
}

// The version that ends a watch-list stream's initial events is published
// only after the sink swept what the stream did not contain: whoever sees
// the informer at that version sees a cache without those objects.
func TestWatchListPublishesAfterSweep(t *testing.T) {
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10)}
	sink := newSink()
	c := podsConfig(s)
	c.WatchList = true
	r := New[*corev1.Pod, *corev1.PodList](c, sink)
	var atFinish string
	sink.onFinish = func() { atFinish = r.LastSyncResourceVersion() }
	runUntilCleanup(t, r)

	stream := <-s.watches
	stream.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "a", ResourceVersion: "9"}})
	stream.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "12",
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	<-sink.synced
	assert.Equal(t, "", atFinish, "not published before the sweep")
	assert.Equal(t, "12", r.LastSyncResourceVersion())
	assert.Equal(t, []string{"start", "put a", "finish"}, sink.get())
}

// A watch that closes within a second without events counts as a failing
// server: the reflector relists, as client-go does. One that closes later
// resumes from its version.
func TestShortWatchRelists(t *testing.T) {
	for _, short := range []bool{true, false} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{{resp: podList("10", "", "a")}}}
			sink := newSink()
			startWithClock(t, s, sink, clk, false)
			w := <-s.watches
			<-sink.synced
			if !short {
				clk.Step(2 * shortWatch)
			}
			w.Stop()
			stepUntil(t, clk, time.Millisecond, func() bool { return len(s.watches) > 0 })
			<-s.watches
			if short {
				assert.Len(t, s.listOpts(), 2, "relisted")
			} else {
				assert.Len(t, s.listOpts(), 1, "resumed without a relist")
			}
		})
	}
}

// A resource that is not served yet (404) is listed again after
// NotServedRetry, not after a growing backoff.
func TestNotServedRetry(t *testing.T) {
	notServed := apierrors.NewNotFound(corev1.Resource("gadgets"), "")
	clk := clocktesting.NewFakeClock(time.Now())
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
		{err: notServed}, {err: notServed}, {err: notServed}, {resp: podList("10", "", "a")},
	}}
	sink := newSink()
	r := New[*corev1.Pod, *corev1.PodList](Config[*corev1.PodList]{
		Description:    "gadgets",
		List:           s.list,
		Watch:          s.watch,
		Backoff:        &wait.Backoff{Duration: time.Hour, Factor: 2, Steps: 10},
		NotServedRetry: 500 * time.Millisecond,
		Clock:          clk,
	}, sink)
	runUntilCleanup(t, r)

	start := clk.Now()
	stepUntil(t, clk, 500*time.Millisecond, func() bool { return len(s.watches) > 0 })
	<-sink.synced
	assert.Len(t, s.listOpts(), 4)
	assert.LessOrEqual(t, clk.Since(start), 1500*time.Millisecond, "three retries of 500ms, no hour of backoff")
}

// A server that answers 410 to a watch-list from "" (which no version can
// make unavailable) gets backoff, not a storm of requests.
func TestWatchListExpiredAtLatestBacksOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	var mu sync.Mutex
	calls := 0
	expired := apierrors.NewResourceExpired("too old")
	r := New[*corev1.Pod, *corev1.PodList](Config[*corev1.PodList]{
		Description: "pods",
		List:        func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return nil, expired },
		Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return nil, expired
		},
		WatchList: true,
		Backoff:   &wait.Backoff{Duration: time.Hour, Factor: 1, Steps: 10},
		Clock:     clk,
	}, newSink())
	runUntilCleanup(t, r)
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "backing off")
	mu.Lock()
	defer mu.Unlock()
	assert.LessOrEqual(t, calls, 2, "one retry from the latest version, then backoff")
}

// A watch from resource version "0" (after a list that reported "0", as
// fakes do) that ends among its synthetic adds is not resumed from the
// highest version it sent, which would skip the adds it did not send: the
// reflector lists again.
func TestSyntheticWatchEndedRelists(t *testing.T) {
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10), lists: []listCall{
		{resp: podList("0", "")},
		{resp: podList("7", "", "a", "b")},
	}}
	sink := newSink()
	start(t, s, sink, 0)
	w := <-s.watches
	<-sink.synced
	w.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b", ResourceVersion: "7"}})
	w.Stop() // cut before "a", at version 5, was sent
	<-s.watches
	opts := s.listOpts()
	require.Len(t, opts, 2, "listed again")
	assert.Contains(t, sink.get(), "put a")
}

// A watch-list stream whose initial events end just as the reflector is
// stopped is stopped too: its decoding goroutine must not outlive Run.
func TestWatchListStreamStoppedWhenRunEndsAtSync(t *testing.T) {
	s := &scripted{watches: make(chan *watch.FakeWatcher, 10)}
	sink := newSink()
	r := New[*corev1.Pod, *corev1.PodList](Config[*corev1.PodList]{
		Description: "pods",
		List:        s.list,
		Watch:       s.watch,
		WatchList:   true,
	}, sink)
	ctx, cancel := context.WithCancel(context.Background())
	sink.onFinish = cancel // Run ends as the initial events end
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stream := <-s.watches
	stream.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "12",
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	<-done
	assert.True(t, stream.IsStopped(), "the stream was left open")
}

// restartedServer stands for kube-apiserver restarted over an etcd that
// still holds old versions: its watch cache starts at version now, so a
// watch from an older version gets 410, while a paged list at an older
// version with no resourceVersionMatch is an exact read from etcd, unless
// exactOnly says it serves every paged list at a version that way.
type restartedServer struct {
	exactOnly bool
	watches   chan *watch.FakeWatcher

	mu       sync.Mutex
	restart  bool // false: the server before its restart, at version 220
	lists    []metav1.ListOptions
	expiries int
}

func (s *restartedServer) list(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, opts)
	exact := opts.Limit > 0 && opts.ResourceVersion != "" && opts.ResourceVersion != "0" &&
		(opts.ResourceVersionMatch == "" || s.exactOnly)
	if !s.restart || exact && opts.ResourceVersion == "220" {
		return podList("220", "", "a", "b"), nil
	}
	return podList("300", "", "a"), nil
}

func (s *restartedServer) watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restart && opts.ResourceVersion == "220" {
		s.expiries++
		return nil, apierrors.NewResourceExpired("too old resource version: 220 (300)")
	}
	w := watch.NewFakeWithChanSize(10, false)
	s.watches <- w
	return w, nil
}

// After an API server restart a watch expires; the relist that follows,
// paged or not, must not return the expired state, which would keep the
// cache there, synced, while every watch expires again.
func TestRelistAfterRestartIsNotStale(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pageSize  int64
		exactOnly bool
	}{
		{name: "unpaged"},
		{name: "paged", pageSize: 5},
		{name: "paged, exact reads only", pageSize: 5, exactOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &restartedServer{exactOnly: tc.exactOnly, watches: make(chan *watch.FakeWatcher, 10)}
			sink := newSink()
			c := podsConfig(s)
			c.PageSize = tc.pageSize
			r := New[*corev1.Pod, *corev1.PodList](c, sink)
			runUntilCleanup(t, r)
			w := <-s.watches
			<-sink.synced
			require.Equal(t, "220", r.LastSyncResourceVersion())

			s.mu.Lock()
			s.restart = true
			s.mu.Unlock()
			w.Error(&apierrors.NewResourceExpired("too old resource version: 220 (300)").ErrStatus)
			select {
			case <-s.watches: // watching from a version the server has
			case <-time.After(wait.ForeverTestTimeout):
				s.mu.Lock()
				defer s.mu.Unlock()
				t.Fatalf("no watch after %d lists and %d expired watches; last list %+v", len(s.lists), s.expiries, s.lists[len(s.lists)-1])
			}
			assert.Equal(t, "300", r.LastSyncResourceVersion())
			assert.Contains(t, sink.get(), "finish")
			s.mu.Lock()
			defer s.mu.Unlock()
			assert.LessOrEqual(t, s.expiries, 1, "at most one watch from the expired version after the first 410")
		})
	}
}
