package reflector

import (
	"context"
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

	"github.com/kubetyped/informers/internal/store"
)

// storeSink keeps pods in a store by the informer's generations: each
// list or stream of initial events opens a generation, every object put
// is marked seen in it (an unchanged one only marked), and FinishList
// deletes the objects it did not see, as the informer's writer does. It
// records what handlers would be told.
type storeSink struct {
	mu     sync.Mutex
	store  *store.Store[*corev1.Pod]
	gen    uint64
	told   []string // "add x", "update x", "delete x", "gone x" (final state unknown)
	synced chan struct{}
	once   sync.Once
}

func newStoreSink() *storeSink {
	return &storeSink{store: store.New[*corev1.Pod](), synced: make(chan struct{})}
}

func (s *storeSink) StartList() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
}

func (s *storeSink) Put(p *corev1.Pod, from Origin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p = p.DeepCopy() // out of a list page's items
	key := store.KeyOf(p)
	v := store.Version{UID: p.UID, ResourceVersion: p.ResourceVersion}
	s.store.Lock()
	defer s.store.Unlock()
	if cur, ok := s.store.VersionOf(key); ok && cur.Same(v) && from != FromModified {
		s.store.TouchLocked(key, s.gen)
		return
	}
	if _, _, existed, _ := s.store.PutLocked(key, p, v, s.gen); existed {
		s.told = append(s.told, "update "+p.Name)
	} else {
		s.told = append(s.told, "add "+p.Name)
	}
}

func (s *storeSink) Delete(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store.Lock()
	defer s.store.Unlock()
	if _, existed := s.store.DeleteLocked(store.KeyOf(p)); existed {
		s.told = append(s.told, "delete "+p.Name)
	}
}

func (s *storeSink) FinishList() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store.Lock()
	defer s.store.Unlock()
	for _, key := range s.store.AppendStaleLocked(nil, s.gen) {
		if _, existed := s.store.DeleteLocked(key); existed {
			s.told = append(s.told, "gone "+key.Name)
		}
	}
}

func (s *storeSink) Watching()                     { s.once.Do(func() { close(s.synced) }) }
func (s *storeSink) Undecodable(Undecodable, bool) {}
func (s *storeSink) Flush()                        {}

// state returns the version of every cached pod by name, and what
// handlers were told since the last call.
func (s *storeSink) state() (map[string]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pods := map[string]string{}
	for _, p := range s.store.AppendAll(nil) {
		pods[p.Name] = p.ResourceVersion
	}
	told := s.told
	s.told = nil
	return pods, told
}

// partialServer serves pods: lists from a script (the last answer
// repeats), watches handed to the test.
type partialServer struct {
	mu      sync.Mutex
	lists   []listCall
	listed  int
	onList  map[int]func() // called before answering the list request of that number (from 1)
	watches chan *testWatch
}

func (s *partialServer) list(_ context.Context, _ metav1.ListOptions) (*corev1.PodList, error) {
	s.mu.Lock()
	s.listed++
	hook := s.onList[s.listed]
	c := s.lists[0]
	if len(s.lists) > 1 {
		s.lists = s.lists[1:]
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return c.resp.DeepCopy(), c.err
}

func (s *partialServer) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w := &testWatch{FakeWatcher: watch.NewFakeWithChanSize(10, false), stopped: make(chan struct{})}
	s.watches <- w
	return w, nil
}

// next returns the next watch the reflector opened.
func (s *partialServer) next(t *testing.T) *testWatch {
	t.Helper()
	select {
	case w := <-s.watches:
		return w
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("no watch")
		return nil
	}
}

// A relist or watch-list that fails part-way leaves what it applied in
// the cache, told to handlers, at the version the cache had; the retry's
// completion deletes what the server no longer has, with final state
// unknown, and moves the version.
func TestPartialSyncConvergesOnRetry(t *testing.T) {
	expired := &apierrors.NewResourceExpired("too old").ErrStatus
	failed := &apierrors.NewInternalError(assert.AnError).ErrStatus
	// Every case syncs a, b and c at version 10, is told to relist, and
	// fails part-way with a (updated) and x; the retry finds a and d.
	tests := []struct {
		name      string
		watchList bool
		pageSize  int64
		lists     []listCall
		// relist plays the server from the 410 that makes the reflector
		// relist; retrying is called as the retry is asked for.
		relist func(t *testing.T, s *partialServer, retrying func())
	}{{
		name:      "stream fails with an error, a list retries",
		watchList: true,
		lists:     []listCall{{resp: listOf("12", "", pod("a", "11"), pod("d", "12"))}},
		relist: func(t *testing.T, s *partialServer, retrying func()) {
			s.mu.Lock()
			s.onList = map[int]func(){1: retrying}
			s.mu.Unlock()
			w := s.next(t)
			w.Add(pod("a", "11"))
			w.Add(pod("x", "11"))
			w.Error(failed)
			s.next(t) // the watch after the list
		},
	}, {
		name:      "stream closes early, a stream retries",
		watchList: true,
		relist: func(t *testing.T, s *partialServer, retrying func()) {
			w := s.next(t)
			w.Add(pod("a", "11"))
			w.Add(pod("x", "11"))
			w.close()
			w = s.next(t)
			retrying()
			w.Add(pod("a", "11"))
			w.Add(pod("d", "12"))
			w.Action(watch.Bookmark, endBookmark("12"))
		},
	}, {
		name:     "list fails at its second page, a list retries",
		pageSize: 2,
		lists: []listCall{
			{resp: listOf("10", "p", pod("a", "5"), pod("b", "5"))}, {resp: listOf("10", "", pod("c", "5"))},
			{resp: listOf("11", "p", pod("a", "11"), pod("x", "11"))}, {err: apierrors.NewInternalError(assert.AnError)},
			{resp: listOf("12", "", pod("a", "11"), pod("d", "12"))},
		},
		relist: func(t *testing.T, s *partialServer, retrying func()) {
			s.mu.Lock()
			s.onList = map[int]func(){5: retrying}
			s.mu.Unlock()
			s.next(t) // the watch after the list
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &partialServer{lists: tc.lists, watches: make(chan *testWatch, 10)}
			if len(s.lists) == 0 {
				s.lists = []listCall{{err: apierrors.NewInternalError(assert.AnError)}}
			}
			sink := newStoreSink()
			c := podsConfig(s)
			c.WatchList, c.PageSize = tc.watchList, tc.pageSize
			r := New[*corev1.Pod, *corev1.PodList](c, sink)
			runUntilCleanup(t, r)

			w := s.next(t)
			if tc.watchList {
				for _, name := range []string{"a", "b", "c"} {
					w.Add(pod(name, "5"))
				}
				w.Action(watch.Bookmark, endBookmark("10"))
			}
			<-sink.synced
			pods, _ := sink.state()
			require.Equal(t, map[string]string{"a": "5", "b": "5", "c": "5"}, pods)
			require.Equal(t, "10", r.LastSyncResourceVersion())

			var (
				mu          sync.Mutex
				atRetry     map[string]string
				toldAtRetry []string
				rvAtRetry   string
			)
			retrying := func() {
				mu.Lock()
				defer mu.Unlock()
				atRetry, toldAtRetry = sink.state()
				rvAtRetry = r.LastSyncResourceVersion()
			}
			w.Error(expired)
			tc.relist(t, s, retrying)
			require.Eventually(t, func() bool { return r.LastSyncResourceVersion() == "12" }, wait.ForeverTestTimeout, time.Millisecond,
				"the retry completes")
			pods, toldAfter := sink.state()

			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, map[string]string{"a": "11", "b": "5", "c": "5", "x": "11"}, atRetry,
				"what the failed attempt applied stays")
			assert.ElementsMatch(t, []string{"update a", "add x"}, toldAtRetry, "and handlers were told")
			assert.Equal(t, "10", rvAtRetry, "the version did not move")
			assert.Equal(t, map[string]string{"a": "11", "d": "12"}, pods, "the retry converged")
			assert.ElementsMatch(t, []string{"add d", "gone b", "gone c", "gone x"}, toldAfter,
				"what the server no longer has is gone, final state unknown")
		})
	}
}

// listOf returns a list page at rv of items.
func listOf(rv, cont string, items ...*corev1.Pod) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, p := range items {
		l.Items = append(l.Items, *p)
	}
	return l
}
