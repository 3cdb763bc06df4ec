package informers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// addPod adds p to src and returns it as the server would: with its
// resource version.
func addPod(t *testing.T, src *podSource, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	rv, err := src.Add(p)
	require.NoError(t, err)
	p = p.DeepCopy()
	p.ResourceVersion = rv
	return p
}

func TestWaitForVersion(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "old", nil))
	inf := runSynced(t, src)

	src.StallWatches(true)
	p := addPod(t, src, pod("a", "new", nil))
	err := inf.WaitForVersion(testutil.Context(t, 50*time.Millisecond), p.ResourceVersion)
	var ce *informers.ConsistencyError
	require.ErrorAs(t, err, &ce, "the watch is stalled: the cache cannot reach the version")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, p.ResourceVersion, ce.Written)
	assert.NotEqual(t, p.ResourceVersion, ce.Cached)

	src.StallWatches(false)
	require.NoError(t, inf.WaitForVersion(testutil.Context(t, 10*time.Second), p.ResourceVersion))
	got, err := inf.Lister().Namespace("a").Get("new")
	require.NoError(t, err, "once the version is reached, the write is in the cache")
	assert.Equal(t, p.ResourceVersion, got.ResourceVersion)
	// An older version is reached already.
	require.NoError(t, inf.WaitForVersion(testutil.Context(t, time.Second), "1"))
}

func TestWaitForVersionUncomparable(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	for _, rv := range []string{"", "0", "01", "abc", "-3", "1.5"} {
		err := waitFailsPromptly(t, func(ctx context.Context) error { return inf.WaitForVersion(ctx, rv) })
		var ve *informers.VersionError
		require.ErrorAs(t, err, &ve, "version %q", rv)
		assert.Equal(t, rv, ve.Version)
		assert.False(t, ve.Cached)
	}
}

// A write the informer's selector leaves out shows in its version with
// the next bookmark.
func TestWaitForVersionBookmark(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{LabelSelector: "app=web"})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)

	p := addPod(t, src, pod("a", "db", map[string]string{"app": "db"}))
	require.Error(t, inf.WaitForVersion(testutil.Context(t, 50*time.Millisecond), p.ResourceVersion), "no event carries the version")
	src.Bookmark()
	require.NoError(t, inf.WaitForVersion(testutil.Context(t, 10*time.Second), p.ResourceVersion))
}

func TestRegistrationWaitForVersion(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	release := make(chan struct{})
	seen := make(chan string, 10)
	reg, err := inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(p *corev1.Pod, _ bool) {
		<-release
		seen <- p.ResourceVersion
	}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)

	p := addPod(t, src, pod("a", "x", nil))
	require.NoError(t, inf.WaitForVersion(testutil.Context(t, 10*time.Second), p.ResourceVersion), "the cache has it")
	err = reg.WaitForVersion(testutil.Context(t, 50*time.Millisecond), p.ResourceVersion)
	var ce *informers.ConsistencyError
	require.ErrorAs(t, err, &ce, "the handler is blocked: it has not been delivered the add")
	assert.Equal(t, reg.Name(), ce.Handler)

	close(release)
	require.NoError(t, reg.WaitForVersion(testutil.Context(t, 10*time.Second), p.ResourceVersion))
	select {
	case rv := <-seen:
		assert.Equal(t, p.ResourceVersion, rv, "the handler returned from the add before the wait ended")
	default:
		t.Fatal("the wait ended before the handler was delivered the add")
	}

	reg.Remove()
	err = reg.WaitForVersion(testutil.Context(t, 10*time.Second), p.ResourceVersion)
	require.ErrorIs(t, err, informers.ErrStopped, "a removed handler is never delivered anything")
}

func TestWaitForVersionStopped(t *testing.T) {
	src := newPodSource()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	waitSynced(t, inf)
	src.StallWatches(true)
	p := addPod(t, src, pod("a", "x", nil))
	waited := make(chan error, 1)
	go func() { waited <- inf.WaitForVersion(context.Background(), p.ResourceVersion) }()
	cancel()
	require.NoError(t, <-done)
	err = <-waited
	require.ErrorIs(t, err, informers.ErrStopped)
	var ce *informers.ConsistencyError
	assert.True(t, errors.As(err, &ce))
}
