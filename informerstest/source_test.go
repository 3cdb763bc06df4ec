package informerstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers/informerstest"
)

func newSource(t *testing.T, names ...string) *informerstest.Source[*corev1.Pod, *corev1.PodList] {
	t.Helper()
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, n := range names {
		_, err := src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: n}})
		require.NoError(t, err)
	}
	return src
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
		return watch.Event{}
	}
}

func TestSourcePaging(t *testing.T) {
	src := newSource(t, "a", "b", "c", "d", "e")
	ctx := context.Background()
	var got []string
	opts := metav1.ListOptions{Limit: 2}
	for {
		l, err := src.List(ctx, "", opts)
		require.NoError(t, err)
		for _, p := range l.Items {
			got = append(got, p.Name)
		}
		assert.Equal(t, "5", l.ResourceVersion, "every page is at the first page's version")
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
		// Written after the first page: not in this list.
		_, err = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z" + l.Continue}})
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, got)
	assert.Equal(t, 3, src.Calls().List)
}

func TestSourceWatchResumesAndExpires(t *testing.T) {
	src := newSource(t, "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := src.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "a", Labels: map[string]string{"v": "2"}}})
	require.NoError(t, err)

	w, err := src.Watch(ctx, "", metav1.ListOptions{ResourceVersion: "1"})
	require.NoError(t, err)
	ev := next(t, w)
	assert.Equal(t, watch.Modified, ev.Type, "replays what changed after version 1")
	assert.Equal(t, "2", ev.Object.(*corev1.Pod).ResourceVersion)

	src.Compact()
	ev = next(t, w)
	require.Equal(t, watch.Error, ev.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)))
	_, ok := <-w.ResultChan()
	assert.False(t, ok, "closed after the error")

	_, err = src.Watch(ctx, "", metav1.ListOptions{ResourceVersion: "1"})
	assert.True(t, apierrors.IsResourceExpired(err), "history is gone")
	_, err = src.Watch(ctx, "", metav1.ListOptions{ResourceVersion: "99"})
	assert.Error(t, err, "too large")
}

func TestSourceWatchList(t *testing.T) {
	src := newSource(t, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := src.Watch(ctx, "", metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer w.Stop()
	assert.Equal(t, watch.Added, next(t, w).Type)
	assert.Equal(t, watch.Added, next(t, w).Type)
	end := next(t, w)
	require.Equal(t, watch.Bookmark, end.Type)
	assert.Equal(t, "true", end.Object.(*corev1.Pod).Annotations[metav1.InitialEventsAnnotationKey])

	src.RefuseWatchList(true)
	_, err = src.Watch(ctx, "", metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	assert.True(t, apierrors.IsBadRequest(err))
	assert.Equal(t, 2, src.Calls().WatchList)
}

func TestSourceErrorsAndWrites(t *testing.T) {
	src := newSource(t, "a")
	ctx := context.Background()
	_, err := src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "a"}})
	assert.True(t, apierrors.IsAlreadyExists(err))
	_, err = src.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "nope"}})
	assert.True(t, apierrors.IsNotFound(err))
	_, err = src.Delete("a", "nope")
	assert.True(t, apierrors.IsNotFound(err))

	src.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", nil))
	_, err = src.List(ctx, "", metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err))
	src.FailList(nil)
	src.FailWatch(apierrors.NewForbidden(corev1.Resource("pods"), "", nil))
	_, err = src.Watch(ctx, "", metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err))
	assert.Equal(t, informerstest.Calls{List: 1, Watch: 1}, src.Calls())
	assert.Zero(t, src.Watchers())
}

// An update that makes an object match a watch's selector arrives as
// Added, and one that makes it stop matching as Deleted with the object as
// it was, live and replayed from history alike, as kube-apiserver sends
// them.
func TestSourceWatchSelectorTransitions(t *testing.T) {
	pod := func(app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", Labels: map[string]string{"app": app}}}
	}
	tests := []struct {
		from, to string
		want     watch.EventType // "": no event
		wantApp  string
	}{
		{from: "x", to: "x", want: watch.Modified, wantApp: "x"},
		{from: "y", to: "x", want: watch.Added, wantApp: "x"},
		{from: "x", to: "y", want: watch.Deleted, wantApp: "x"},
		{from: "y", to: "z"},
	}
	for _, tt := range tests {
		t.Run(tt.from+"→"+tt.to, func(t *testing.T) {
			src := newSource(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			from, err := src.Add(pod(tt.from))
			require.NoError(t, err)
			opts := metav1.ListOptions{LabelSelector: "app=x", ResourceVersion: from}
			live, err := src.Watch(ctx, "", opts)
			require.NoError(t, err)
			to, err := src.Update(pod(tt.to))
			require.NoError(t, err)
			replayed, err := src.Watch(ctx, "", opts)
			require.NoError(t, err)
			// A later change the watches see, to tell "no event" apart.
			_, err = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "q", Labels: map[string]string{"app": "x"}}})
			require.NoError(t, err)

			for name, w := range map[string]watch.Interface{"live": live, "replayed": replayed} {
				ev := next(t, w)
				if tt.want == "" {
					assert.Equal(t, "q", ev.Object.(*corev1.Pod).Name, "%s: no event for p", name)
					continue
				}
				p := ev.Object.(*corev1.Pod)
				assert.Equal(t, tt.want, ev.Type, name)
				assert.Equal(t, "p", p.Name, name)
				assert.Equal(t, tt.wantApp, p.Labels["app"], name)
				assert.Equal(t, to, p.ResourceVersion, "%s: at the update's version", name)
			}
		})
	}
}

// A stalled watch stays open and sends nothing, bookmarks included, until
// it is released; then it sends what it held, in order. A watch opened
// while stalled is stalled too.
func TestSourceStallWatches(t *testing.T) {
	src := newSource(t, "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := src.Watch(ctx, "", metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
	require.NoError(t, err)
	defer w.Stop()
	src.StallWatches(true)
	late, err := src.Watch(ctx, "", metav1.ListOptions{ResourceVersion: "1"})
	require.NoError(t, err)
	defer late.Stop()
	_, err = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}})
	require.NoError(t, err)
	src.Bookmark()
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("a stalled watch sent %v", ev.Type)
	case ev := <-late.ResultChan():
		t.Fatalf("a watch opened while stalled sent %v", ev.Type)
	case <-time.After(20 * time.Millisecond):
	}
	assert.Equal(t, 2, src.Watchers(), "stalled watches stay open")

	src.StallWatches(false)
	assert.Equal(t, watch.Added, next(t, w).Type)
	assert.Equal(t, watch.Bookmark, next(t, w).Type)
	assert.Equal(t, watch.Added, next(t, late).Type)
}
