package informers_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// forbiddenInformer runs an informer of pods whose lists are forbidden,
// with a handler named name, until the test ends.
func forbiddenInformer(t *testing.T, why, name string) (*informers.SharedInformer[*corev1.Pod], *informers.Registration[*corev1.Pod]) {
	t.Helper()
	src := newPodSource()
	src.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New(why)))
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}})
	require.NoError(t, err)
	reg, err := inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{}, informers.HandlerOptions{Name: name})
	require.NoError(t, err)
	testutil.Run(t, inf)
	return inf, reg
}

// WaitForSync says each cause once: the registration of a failed informer
// fails with the informer's error, which the informer, when it is waited
// for too, already says; the errors of distinct informers are all kept.
func TestWaitForSyncSaysEachCauseOnce(t *testing.T) {
	tests := []struct {
		name string
		// syncers returns what to wait for, and the causes the error
		// must say, each once.
		syncers func(t *testing.T) ([]informers.Syncer, []string)
	}{{
		name: "an informer and its registration",
		syncers: func(t *testing.T) ([]informers.Syncer, []string) {
			inf, reg := forbiddenInformer(t, "RBAC: pods denied", "h")
			return []informers.Syncer{inf, reg}, []string{"RBAC: pods denied"}
		},
	}, {
		name: "the registration first",
		syncers: func(t *testing.T) ([]informers.Syncer, []string) {
			inf, reg := forbiddenInformer(t, "RBAC: pods denied", "h")
			return []informers.Syncer{reg, inf}, []string{"RBAC: pods denied"}
		},
	}, {
		name: "two registrations of one informer, not itself waited for",
		syncers: func(t *testing.T) ([]informers.Syncer, []string) {
			inf, reg := forbiddenInformer(t, "RBAC: pods denied", "h")
			other, err := inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{}, informers.HandlerOptions{Name: "other"})
			require.NoError(t, err)
			return []informers.Syncer{reg, other}, []string{"RBAC: pods denied"}
		},
	}, {
		name: "two informers that fail alike are two causes",
		syncers: func(t *testing.T) ([]informers.Syncer, []string) {
			a, aReg := forbiddenInformer(t, "RBAC: pods denied", "h")
			b, bReg := forbiddenInformer(t, "RBAC: pods denied", "h")
			return []informers.Syncer{a, aReg, b, bReg}, []string{"RBAC: pods denied", "RBAC: pods denied"}
		},
	}, {
		name: "two informers failing for different reasons",
		syncers: func(t *testing.T) ([]informers.Syncer, []string) {
			a, aReg := forbiddenInformer(t, "RBAC: cluster a", "h")
			b, bReg := forbiddenInformer(t, "RBAC: cluster b", "h")
			return []informers.Syncer{a, aReg, b, bReg}, []string{"RBAC: cluster a", "RBAC: cluster b"}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syncers, causes := tt.syncers(t)
			err := waitFailsPromptly(t, func(ctx context.Context) error { return informers.WaitForSync(ctx, syncers...) })
			assert.True(t, apierrors.IsForbidden(err), "the 403 is in the chain: %v", err)
			lines := strings.Split(err.Error(), "\n")
			assert.Len(t, lines, len(causes), "one line per cause: %v", err)
			for _, cause := range causes {
				assert.Equal(t, strings.Count(strings.Join(causes, "\n"), cause), strings.Count(err.Error(), cause), "%q in %v", cause, err)
			}
		})
	}
}

// A registration whose informer synced but which was not delivered the
// initial state in time says so beside the failure of another informer.
func TestWaitForSyncKeepsTheHandlersOwnCause(t *testing.T) {
	failed, failedReg := forbiddenInformer(t, "RBAC: pods denied", "h")
	src := newPodSource()
	mustAdd(t, src, pod("ns", "a", nil))
	synced := newPodInformer(t, src)
	stuck := newStateFollower()
	defer stuck.Release()
	stuckReg, err := synced.AddHandlerWith(stuck, informers.HandlerOptions{Name: "stuck"})
	require.NoError(t, err)
	testutil.Run(t, synced)
	waitSynced(t, synced)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = informers.WaitForSync(ctx, failed, failedReg, synced, stuckReg)
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "RBAC: pods denied"), "%v", err)
	assert.Contains(t, err.Error(), "handler stuck has not been delivered the initial state")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, strings.Split(err.Error(), "\n"), 2, "%v", err)
}

// TestFactorySyncedChannel checks that a factory's Synced is one channel
// between two changes of its informers, with at most one goroutine
// waiting for it however often it is asked for, and that it closes once
// the informers sync.
func TestFactorySyncedChannel(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset(&corev1.ConfigMap{ObjectMeta: meta("a", "x")}))
	select {
	case <-f.Synced():
	default:
		t.Fatal("a factory with no informers is synced")
	}
	informers.Informer[*corev1.ConfigMap](f)
	first := f.Synced()
	before := runtime.NumGoroutine()
	for range 10_000 {
		require.Equal(t, first, f.Synced(), "one channel between changes")
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before+1, "no goroutine per call")

	informers.Informer[*corev1.Secret](f)
	second := f.Synced()
	assert.NotEqual(t, first, second, "a new informer, a new channel")

	testutil.StartFactory(t, f)
	for _, ch := range []<-chan struct{}{first, second, f.Synced()} {
		select {
		case <-ch:
		case <-testutil.Context(t, 10*time.Second).Done():
			t.Fatal("Synced not closed after the informers synced")
		}
	}
}
