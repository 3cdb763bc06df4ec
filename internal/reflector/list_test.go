package reflector

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// streamed serves the lists of a script through Config.ListStream: each
// answer's items are handed over one by one, then its error, if it has
// one, is returned, as a response cut part-way ends. It records how many
// streams were read at once, and fails the test if Config.List is
// called.
type streamed struct {
	scripted
	t        *testing.T
	inFlight int
	most     int
	extra    []runtime.Object // handed over after the first answer's items
}

func (s *streamed) list(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
	s.t.Error("List called on a reflector with ListStream")
	return nil, errors.New("not served")
}

func (s *streamed) stream(ctx context.Context, opts metav1.ListOptions, items ListItems) (metav1.ListMeta, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	extra := s.extra
	s.extra = nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	l, err := s.scripted.list(ctx, opts)
	if l != nil {
		for i := range l.Items {
			items.Put(l.Items[i].DeepCopy())
		}
	}
	for _, obj := range extra {
		if u, ok := obj.(Undecodable); ok {
			items.Undecodable(u)
			continue
		}
		items.Put(obj)
	}
	if err != nil || l == nil {
		return metav1.ListMeta{}, err
	}
	return l.ListMeta, nil
}

// startStreamed starts a reflector over s, listing with pages of
// pageSize through ListStream.
func startStreamed(t *testing.T, s *streamed, sink *recordingSink, pageSize int64) {
	t.Helper()
	s.t = t
	s.watches = make(chan *watch.FakeWatcher, 10)
	c := podsConfig(s)
	c.PageSize = pageSize
	c.ListStream = s.stream
	runUntilCleanup(t, New[*corev1.Pod, *corev1.PodList](c, sink))
}

// A streamed list puts each item as the stream hands it over, as an item
// of its own, reads its pages one at a time, never fetching one ahead,
// and follows its continue tokens, expired ones and versions as a list
// of whole pages does.
func TestStreamedListPages(t *testing.T) {
	cut := io.ErrUnexpectedEOF
	tests := []struct {
		name     string
		pageSize int64
		lists    []listCall
		// opts are the options of each list request; calls what the
		// sink is told.
		opts  []metav1.ListOptions
		calls []string
	}{{
		name:     "pages",
		pageSize: 2,
		lists:    []listCall{{resp: podList("10", "next", "a", "b")}, {resp: podList("10", "", "c")}},
		opts:     []metav1.ListOptions{{ResourceVersion: "0", Limit: 2}, {Limit: 2, Continue: "next"}},
		calls:    []string{"start", "put a", "put b", "put c", "finish"},
	}, {
		name:  "one page",
		lists: []listCall{{resp: podList("10", "", "a", "b", "c")}},
		opts:  []metav1.ListOptions{{ResourceVersion: "0", Limit: 500}},
		calls: []string{"start", "put a", "put b", "put c", "finish"},
	}, {
		name:     "expired continuation",
		pageSize: 1,
		lists: []listCall{
			{resp: podList("10", "next", "a")},
			{err: apierrors.NewResourceExpired("continue token expired")},
			{resp: podList("11", "", "a", "b")},
		},
		opts:  []metav1.ListOptions{{ResourceVersion: "0", Limit: 1}, {Limit: 1, Continue: "next"}, {ResourceVersion: "0"}},
		calls: []string{"start", "put a", "start", "put a", "put b", "finish"},
	}, {
		name:     "cut part-way through a page",
		pageSize: 3,
		lists: []listCall{
			{resp: podList("10", "next", "a", "b"), err: cut},
			{resp: podList("11", "", "a", "c")},
		},
		opts:  []metav1.ListOptions{{ResourceVersion: "0", Limit: 3}, {ResourceVersion: "0", Limit: 3}},
		calls: []string{"start", "put a", "put b", "start", "put a", "put c", "finish"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &streamed{scripted: scripted{lists: tc.lists}}
			sink := newSink()
			startStreamed(t, s, sink, tc.pageSize)
			<-s.watches
			<-sink.synced
			assert.Equal(t, tc.calls, sink.get())
			assert.Equal(t, tc.opts, s.listOpts())
			s.mu.Lock()
			defer s.mu.Unlock()
			assert.Equal(t, 1, s.most, "one page read at a time")
			sink.mu.Lock()
			defer sink.mu.Unlock()
			for _, o := range sink.origins {
				require.Equal(t, FromOwnedListItem, o)
			}
		})
	}
}

// An item that does not decode goes to the sink as such; an item that is
// not the reflector's type is reported and left out, and the list
// completes.
func TestStreamedListOddItems(t *testing.T) {
	bad := &testUndecodable{ns: "a", name: "bad", rv: "9"}
	s := &streamed{scripted: scripted{lists: []listCall{{resp: podList("10", "", "a")}}},
		extra: []runtime.Object{bad, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}}}
	var mu sync.Mutex
	var errs []string
	sink := newSink()
	s.t = t
	s.watches = make(chan *watch.FakeWatcher, 10)
	c := podsConfig(s)
	c.ListStream = s.stream
	c.OnError = func(op Op, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, string(op)+": "+err.Error())
	}
	runUntilCleanup(t, New[*corev1.Pod, *corev1.PodList](c, sink))
	<-s.watches
	<-sink.synced
	assert.Equal(t, []string{"start", "put a", "undecodable bad@9", "finish"}, sink.get())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"decode: pods: list item is *v1.ConfigMap, want *v1.Pod"}, errs)
}

// testUndecodable is an item that did not decode.
type testUndecodable struct {
	ns, name, rv string
}

func (u *testUndecodable) Error() string                    { return "object " + u.name + " does not decode" }
func (u *testUndecodable) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *testUndecodable) DeepCopyObject() runtime.Object   { c := *u; return &c }
func (u *testUndecodable) Identity() (string, string, types.UID, string) {
	return u.ns, u.name, "", u.rv
}
