package informers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeobj "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// holdWatches makes src refuse watches with 429 Too Many Requests, which an
// informer retries from its last resource version without relisting, and
// waits until the informer has been refused at least twice: from then on
// it only waits to watch again, so that what src does next happens while
// it is disconnected. The returned function reconnects it.
func holdWatches(t *testing.T, src *podSource) (reconnect func()) {
	t.Helper()
	src.FailWatch(apierrors.NewTooManyRequests("slow down", 1))
	before := src.Calls().Watch
	src.CloseWatches()
	testutil.Eventually(t, func() bool { return src.Calls().Watch >= before+2 }, "the informer retries its watch")
	return func() { src.FailWatch(nil) }
}

// A transform that returns nil, nil is a transform error: the object is not
// cached, the informer goes on.
func TestTransformReturningNil(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "nil", nil), pod("a", "kept", nil))
	errs := make(chan error, 10)
	inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(err error) { errs <- err })},
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "nil" {
				return nil, nil
			}
			return p, nil
		},
	})
	var te *informers.TransformError
	require.ErrorAs(t, <-errs, &te)
	assert.Equal(t, "a/nil", te.Key.String())
	assert.Contains(t, te.Error(), "nil")
	mustAdd(t, src, pod("a", "later", nil))
	testutil.Eventually(t, func() bool { return rec.Has("add a/later") }, "the informer goes on")
	assert.Equal(t, []string{"a/kept", "a/later"}, names(mustList(t, inf.Lister())))
}

// A transform that clears the resource version in place, as client-go's
// own transform test does, must not move the informer's resume point: a
// delete made while the informer is disconnected still arrives, and a
// relist does not notify unchanged objects.
func TestTransformClearingResourceVersion(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", streaming), func(t *testing.T) {
			src := newPodSource()
			src.RefuseWatchList(!streaming)
			mustAdd(t, src, pod("a", "x", nil), pod("a", "y", nil))
			inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{
				Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)},
				Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
					p.ResourceVersion = ""
					return p, nil
				},
			})
			_, err := src.Update(pod("a", "y", map[string]string{"v": "2"}))
			require.NoError(t, err)
			testutil.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == src.ResourceVersion() }, "resume point follows the server")

			reconnect := holdWatches(t, src)
			_, err = src.Delete("a", "x")
			require.NoError(t, err)
			reconnect()
			testutil.Eventually(t, func() bool { return rec.Has("delete a/x") }, "the delete made while disconnected, got %v", rec.List())
			assert.Equal(t, []string{"a/y"}, names(mustList(t, inf.Lister())))

			before := len(rec.List())
			src.Compact() // a relist: nothing changed
			mustAdd(t, src, pod("a", "z", nil))
			testutil.Eventually(t, func() bool { return rec.Has("add a/z") }, "after the relist")
			assert.Equal(t, []string{"add a/z"}, rec.List()[before:], "no update for unchanged objects")
		})
	}
}

// A transform that fails on a delete does not keep the deleted object: the
// delete removes its key, and handlers get the last cached state.
func TestTransformFailingOnDelete(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "x", map[string]string{"v": "1"}))
	var fail atomic.Bool
	var deleted atomic.Pointer[corev1.Pod]
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})},
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if fail.Load() {
				return nil, errors.New("refused")
			}
			return p, nil
		},
	})
	require.NoError(t, err)
	_, err = inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnDelete: func(d informers.Deleted[*corev1.Pod]) { deleted.Store(d.Object) }})
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	fail.Store(true)
	_, err = src.Delete("a", "x")
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return deleted.Load() != nil }, "the handler saw the delete")
	assert.Zero(t, inf.Lister().Len(), "the object is gone from the cache")
	assert.Equal(t, "1", deleted.Load().Labels["v"], "the last cached state")
}

// A transform that fails on an object deleted and recreated (a new UID)
// while the informer was away does not keep the old object as its "last
// good state": that object is gone from the server, and handlers see it
// deleted with its final state unknown.
func TestTransformFailingOnRecreatedObject(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true) // so that holdWatches counts plain watches
	mustAdd(t, src, pod("a", "x", nil))
	inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})},
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Labels["poison"] != "" {
				return nil, errors.New("refused")
			}
			return p, nil
		},
	})
	reconnect := holdWatches(t, src)
	_, err := src.Delete("a", "x")
	require.NoError(t, err)
	mustAdd(t, src, pod("a", "x", map[string]string{"poison": "yes"}))
	src.Compact() // the informer must relist
	reconnect()
	testutil.Eventually(t, func() bool { return rec.Has("delete a/x unknown") }, "the old object deleted: %v", rec.List())
	assert.Zero(t, inf.Lister().Len())
}

// An informer that synced at resource version "0" (an empty source) moves
// its resume point with every event: a delete made while it is
// disconnected arrives, and reconnecting re-sends nothing.
func TestResumeAfterSyncAtVersionZero(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", streaming), func(t *testing.T) {
			src := newPodSource()
			src.RefuseWatchList(!streaming)
			inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
			require.Equal(t, "0", src.ResourceVersion())
			mustAdd(t, src, pod("a", "x", nil), pod("a", "y", nil))
			testutil.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == src.ResourceVersion() }, "Added events advance the resume point")

			reconnect := holdWatches(t, src)
			_, err := src.Delete("a", "x")
			require.NoError(t, err)
			reconnect()
			testutil.Eventually(t, func() bool { return rec.Has("delete a/x") }, "the delete made while disconnected, got %v", rec.List())
			assert.Equal(t, []string{"add a/x", "add a/y", "delete a/x"}, rec.List(), "nothing re-sent")
		})
	}
}

// MinWatchTimeout cannot go below client-go's 5 minutes.
func TestMinWatchTimeoutFloor(t *testing.T) {
	src := newPodSource()
	src.RefuseWatchList(true)
	timeouts := make(chan int64, 10)
	lw := informers.NewListWatch[*corev1.Pod](
		func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			return src.List(ctx, "", opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			timeouts <- *opts.TimeoutSeconds
			return src.Watch(ctx, "", opts)
		})
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{MinWatchTimeout: informers.Set(time.Second)}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	timeout := <-timeouts
	assert.GreaterOrEqual(t, timeout, int64(300))
	assert.LessOrEqual(t, timeout, int64(600))
}

// blockingDecoder feeds a watch.StreamWatcher: Decode blocks until Close,
// and returns only some time after it, as a network stream does.
type blockingDecoder struct {
	once   sync.Once
	closed chan struct{}
}

func (d *blockingDecoder) Decode() (watch.EventType, runtimeobj.Object, error) {
	<-d.closed
	time.Sleep(streamCloseDelay) // the connection takes a while to close: not synchronisation
	return "", nil, io.EOF
}

func (d *blockingDecoder) Close() { d.once.Do(func() { close(d.closed) }) }

// streamCloseDelay is how long a blockingDecoder's stream takes to close.
const streamCloseDelay = 2 * time.Second

// Run returns only after the goroutines that decode its watch streams have
// ended: users check for leaked goroutines in their own tests.
func TestRunWaitsForWatchStreams(t *testing.T) {
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewStreamWatcher(&blockingDecoder{closed: make(chan struct{})}, nil), nil
		})
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	waitSynced(t, inf)
	cancel()
	require.NoError(t, <-done)
	// Run returns once the stream's result channel is closed, which the
	// goroutine does in its last deferred calls: give it a moment to
	// return, well under the stream's closing delay, which it would
	// outlive Run by if Run did not wait.
	assert.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "StreamWatcher).receive")
	}, streamCloseDelay/2, time.Millisecond, "a stream goroutine outlived Run")
}
