package informers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

// stalledTracker runs an informer over a new source with opts, waits for
// it to sync, stalls its watch and returns a tracker of it that gives up
// after 50 ms.
func stalledTracker(t *testing.T, opts informers.Options[*corev1.Pod], objs ...*corev1.Pod) (*podSource, *informers.SharedInformer[*corev1.Pod], *informers.Tracker[*corev1.Pod]) {
	t.Helper()
	src := newPodSource()
	mustAdd(t, src, objs...)
	opts.Backoff = informers.Set(fastBackoff)
	inf, err := informers.NewInformer(src.ListWatch(""), opts)
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	src.StallWatches(true)
	return src, inf, informers.NewTracker(inf, 50*time.Millisecond)
}

// requireNotShown checks that the tracker's wait for key ends with a
// *ConsistencyError about obj.
func requireNotShown(t *testing.T, tr *informers.Tracker[*corev1.Pod], key, obj types.NamespacedName, deleted bool) {
	t.Helper()
	err := tr.Wait(context.Background(), key)
	var ce *informers.ConsistencyError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, key, ce.Key)
	assert.Equal(t, obj, ce.Object)
	assert.Equal(t, deleted, ce.Deleted)
}

func TestTrackerCreateAndUpdate(t *testing.T) {
	src, inf, tr := stalledTracker(t, informers.Options[*corev1.Pod]{})
	key := types.NamespacedName{Namespace: "a", Name: "x"}

	created := addPod(t, src, pod("a", "x", nil))
	require.NoError(t, tr.Wrote(key, created))
	requireNotShown(t, tr, key, key, false)
	_, err := tr.Get(context.Background(), key)
	require.Error(t, err, "the cache is behind: no stale NotFound")
	assert.False(t, apierrors.IsNotFound(err))

	src.StallWatches(false)
	got, err := tr.Get(testutil.Context(t, 10*time.Second), key)
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, got.ResourceVersion)

	src.StallWatches(true)
	update := got.DeepCopy()
	update.Labels = map[string]string{"v": "2"}
	rv, err := src.Update(update)
	require.NoError(t, err)
	update.ResourceVersion = rv
	require.NoError(t, tr.Wrote(key, update))
	requireNotShown(t, tr, key, key, false)
	stale, err := inf.Lister().Namespace("a").Get("x")
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, stale.ResourceVersion, "a plain lister reads the past")

	src.StallWatches(false)
	got, err = tr.Get(testutil.Context(t, 10*time.Second), key)
	require.NoError(t, err)
	assert.Equal(t, rv, got.ResourceVersion)
	require.NoError(t, tr.Wait(context.Background(), key), "shown writes are forgotten")
}

// Writes recorded under an owner's key are waited for by the owner's
// reconcile: the ReplicaSet pattern.
func TestTrackerWroteForOwner(t *testing.T) {
	src, _, tr := stalledTracker(t, informers.Options[*corev1.Pod]{})
	owner := types.NamespacedName{Namespace: "a", Name: "rs"}
	child := addPod(t, src, pod("a", "rs-1", nil))
	require.NoError(t, tr.Wrote(owner, child))
	require.NoError(t, tr.Wait(context.Background(), informers.KeyOf(child)), "nothing was recorded under the child's own key")
	requireNotShown(t, tr, owner, informers.KeyOf(child), false)
	src.StallWatches(false)
	require.NoError(t, tr.Wait(testutil.Context(t, 10*time.Second), owner))
}

func TestTrackerDelete(t *testing.T) {
	for _, finalizer := range []bool{false, true} {
		t.Run(fmt.Sprintf("finalizer=%v", finalizer), func(t *testing.T) {
			src, inf, tr := stalledTracker(t, informers.Options[*corev1.Pod]{}, pod("a", "x", nil))
			key := types.NamespacedName{Namespace: "a", Name: "x"}
			cached, err := inf.Lister().Namespace("a").Get("x")
			require.NoError(t, err)
			if finalizer {
				// The server marks the object and keeps it.
				marked := cached.DeepCopy()
				now := marked.CreationTimestamp
				marked.DeletionTimestamp = &now
				_, err = src.Update(marked)
			} else {
				_, err = src.Delete("a", "x")
			}
			require.NoError(t, err)
			tr.Deleted(key, cached)
			requireNotShown(t, tr, key, key, true)
			src.StallWatches(false)
			require.NoError(t, tr.Wait(testutil.Context(t, 10*time.Second), key))
			_, err = tr.Get(context.Background(), key)
			if !finalizer {
				assert.True(t, apierrors.IsNotFound(err))
			}
		})
	}
}

// A write the informer's scope leaves out waits for nothing when the
// cache never held the object, and for its removal when it did.
func TestTrackerOutOfScope(t *testing.T) {
	web := map[string]string{"app": "web"}
	src, _, tr := stalledTracker(t, informers.Options[*corev1.Pod]{LabelSelector: "app=web"}, pod("a", "in", web))
	db := addPod(t, src, pod("a", "db", map[string]string{"app": "db"}))
	require.NoError(t, tr.Wrote(informers.KeyOf(db), db))
	require.NoError(t, tr.Wait(testutil.Context(t, 10*time.Second), informers.KeyOf(db)), "the informer never shows it, the watch is stalled: no wait for a bookmark")

	// Moved out of the selector: shown once the cache drops it.
	moved := pod("a", "in", map[string]string{"app": "db"})
	rv, err := src.Update(moved)
	require.NoError(t, err)
	moved.ResourceVersion = rv
	key := informers.KeyOf(moved)
	require.NoError(t, tr.Wrote(key, moved))
	requireNotShown(t, tr, key, key, true)
	src.StallWatches(false)
	require.NoError(t, tr.Wait(testutil.Context(t, 10*time.Second), key))
}

// A factory's informer knows its namespace: a write elsewhere waits for
// nothing.
func TestTrackerNamespaceScope(t *testing.T) {
	src := newPodSource()
	cluster := informerstest.NewCluster()
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), src)
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster, Tuning: informers.Tuning{Namespace: informers.Set("a")}})
	inf := informers.Informer[*corev1.Pod](f)
	testutil.StartFactory(t, f)
	waitSynced(t, inf)
	src.StallWatches(true)
	tr := informers.NewTracker(inf, 50*time.Millisecond)

	elsewhere := addPod(t, src, pod("b", "x", nil))
	require.NoError(t, tr.Wrote(informers.KeyOf(elsewhere), elsewhere))
	require.NoError(t, tr.Wait(context.Background(), informers.KeyOf(elsewhere)))
	here := addPod(t, src, pod("a", "x", nil))
	require.NoError(t, tr.Wrote(informers.KeyOf(here), here))
	requireNotShown(t, tr, informers.KeyOf(here), informers.KeyOf(here), false)
}

// A write whose response was lost may have been applied: the next wait
// catches the cache up with the server's version of then.
func TestTrackerWriteFailed(t *testing.T) {
	src, inf, tr := stalledTracker(t, informers.Options[*corev1.Pod]{})
	key := types.NamespacedName{Namespace: "a", Name: "x"}
	tr.WriteFailed(key, apierrors.NewConflict(corev1.Resource("pods"), "x", errors.New("changed")))
	tr.WriteFailed(key, nil)
	require.NoError(t, tr.Wait(context.Background(), key), "a refused write records nothing")

	addPod(t, src, pod("a", "x", nil)) // applied, but the caller saw only:
	tr.WriteFailed(key, errors.New("connection reset by peer"))
	err := tr.Wait(context.Background(), key)
	var ce *informers.ConsistencyError
	require.ErrorAs(t, err, &ce)
	src.StallWatches(false)
	require.NoError(t, tr.Wait(testutil.Context(t, 10*time.Second), key))
	_, err = inf.Lister().Namespace("a").Get("x")
	require.NoError(t, err, "the write the caller did not know of is in the cache")
}

func TestTrackerUncomparableVersion(t *testing.T) {
	src, _, tr := stalledTracker(t, informers.Options[*corev1.Pod]{})
	key := types.NamespacedName{Namespace: "a", Name: "x"}
	p := addPod(t, src, pod("a", "x", nil))
	p.ResourceVersion = "v7"
	require.NoError(t, tr.Wrote(key, p))
	err := waitFailsPromptly(t, func(ctx context.Context) error { return tr.Wait(ctx, key) })
	var ve *informers.VersionError
	require.ErrorAs(t, err, &ve)
	require.NoError(t, tr.Wait(context.Background(), key), "the write is forgotten")
}

func TestTrackerForget(t *testing.T) {
	src, _, tr := stalledTracker(t, informers.Options[*corev1.Pod]{})
	key := types.NamespacedName{Namespace: "a", Name: "x"}
	require.NoError(t, tr.Wrote(key, addPod(t, src, pod("a", "x", nil))))
	tr.Forget(key)
	require.NoError(t, tr.Wait(context.Background(), key))
}

func TestTrackerWroteRefusesFailedWrite(t *testing.T) {
	_, _, tr := stalledTracker(t, informers.Options[*corev1.Pod]{})
	key := types.NamespacedName{Namespace: "a", Name: "x"}
	for name, obj := range map[string]*corev1.Pod{
		"nil":                              nil,
		"empty, as a failed write returns": {},
		"no resource version":              pod("a", "x", nil),
	} {
		t.Run(name, func(t *testing.T) {
			err := tr.Wrote(key, obj)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "no name or no resource version")
			assert.NoError(t, tr.Wait(context.Background(), key), "nothing recorded to wait for")
		})
	}
}
