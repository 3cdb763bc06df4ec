package informers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubetyped/informers"
)

// However an informer is stopped (its Run's context ends, Release,
// Shutdown), with a backlog queued for a handler, merged or not, resynced
// or not: the call in progress finishes, no other begins, what is queued
// is dropped, resync stops, and the informer's goroutines end.
func TestStopWithBacklog(t *testing.T) {
	stops := map[string]func(context.CancelFunc, *informers.Factory, informers.AnyInformer) error{
		"context": func(cancel context.CancelFunc, _ *informers.Factory, _ informers.AnyInformer) error {
			cancel()
			return nil
		},
		// Both wait for the stuck handler for the grace period only.
		"Release": func(_ context.CancelFunc, f *informers.Factory, inf informers.AnyInformer) error {
			return f.Release(ended(), inf)
		},
		"Shutdown": func(_ context.CancelFunc, f *informers.Factory, _ informers.AnyInformer) error {
			return f.Shutdown(ended())
		},
	}
	var objs []runtime.Object
	for i := range 20 {
		objs = append(objs, &corev1.Pod{ObjectMeta: meta("a", fmt.Sprintf("p%d", i))})
	}
	for stopName, stop := range stops {
		for _, merge := range []bool{false, true} {
			for _, resync := range []time.Duration{0, time.Millisecond} {
				t.Run(fmt.Sprintf("%s merge=%v resync=%v", stopName, merge, resync), func(t *testing.T) {
					f := informers.NewFactoryWith(fake.NewClientset(objs...), informers.FactoryOptions{ShutdownGracePeriod: time.Millisecond})
					pods := informers.Informer[*corev1.Pod](f)
					entered, release := make(chan struct{}), make(chan struct{})
					var calls atomic.Int64
					work := func() {
						if calls.Add(1) == 1 {
							close(entered)
							<-release
						}
					}
					opts := informers.HandlerOptions{ResyncPeriod: informers.Set(resync), MergeByKey: merge}
					reg, err := pods.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{
						OnAdd:    func(*corev1.Pod, bool) { work() },
						OnUpdate: func(_, _ *corev1.Pod) { work() },
					}, opts)
					require.NoError(t, err)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					f.Start(ctx)
					<-entered
					require.Positive(t, reg.Backlog(), "events wait behind the call in progress")

					if err := stop(cancel, f, pods); err != nil {
						assert.Contains(t, err.Error(), "still running", "only the stuck handler can make it fail")
					}
					close(release)
					select {
					case <-pods.Stopped():
					case <-time.After(10 * time.Second):
						t.Fatalf("the informer did not stop; %d calls, backlog %d", calls.Load(), reg.Backlog())
					}
					<-reg.Done()
					assert.Equal(t, int64(1), calls.Load(), "a call began after the informer was stopped")
					assert.Zero(t, reg.Backlog(), "the queue was dropped")
					cancel()
					shutdown, scancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer scancel()
					require.NoError(t, f.Shutdown(shutdown))
				})
			}
		}
	}
}

// ended returns a context that has ended.
func ended() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
