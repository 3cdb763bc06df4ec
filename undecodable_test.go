package informers_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
)

// undecodablePod is a pod whose metadata decoded and whose spec did not,
// as the library's decoders hand one to the reflector.
type undecodablePod struct{ metav1.ObjectMeta }

func (u *undecodablePod) Error() string {
	return "at spec.priority: cannot unmarshal string into int32"
}
func (u *undecodablePod) Identity() (string, string, types.UID, string) {
	return u.Namespace, u.Name, u.UID, u.ResourceVersion
}
func (u *undecodablePod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *undecodablePod) DeepCopyObject() runtime.Object   { c := *u; return &c }

func badPod(name, uid, rv string) *undecodablePod {
	return &undecodablePod{metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

func goodPod(name, uid, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

// errorLog collects what an informer hands OnError.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) { l.mu.Lock(); defer l.mu.Unlock(); l.errs = append(l.errs, err) }

func (l *errorLog) undecodable() []*informers.UndecodableObjectError {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*informers.UndecodableObjectError
	for _, err := range l.errs {
		if u := (*informers.UndecodableObjectError)(nil); errors.As(err, &u) {
			out = append(out, u)
		}
	}
	return out
}

// An object the server has but that cannot be decoded stops nothing: the
// cache keeps its last good state, handlers hear nothing of it, it is
// reported once per version, counted, returned by a Tracker, and it
// fails readiness only when asked to. Once it decodes again, or is
// deleted, it is as any other object.
func TestUndecodableObjectKeepsItsLastGoodState(t *testing.T) {
	w := watch.NewFakeWithChanSize(16, false)
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []corev1.Pod{*goodPod("x", "ux", "5")}}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil })
	lw.DisableWatchList = true
	log := &errorLog{}
	inf, rec := startRecording(t, lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{OnError: informers.Set(log.add)}, FailReadinessOnUndecodable: true})
	tracker := informers.NewTracker(inf, 2*time.Second)
	ready := informers.ReadyCheck(inf)
	req := httptest.NewRequest("GET", "/readyz", nil)
	ctx := context.Background()
	initial := len(rec.List())

	// x changes to a state that does not decode: its last good state stays.
	w.Modify(badPod("x", "ux", "6"))
	w.Modify(badPod("x", "ux", "6")) // the same version again: reported once
	w.Add(goodPod("y", "uy", "7"))
	require.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == "7" }, 10*time.Second, time.Millisecond)
	got, err := inf.Lister().Namespace("a").Get("x")
	require.NoError(t, err)
	assert.Equal(t, "5", got.ResourceVersion)
	assert.Equal(t, 1, inf.Stats().Undecodable)
	require.Len(t, log.undecodable(), 1)
	bad := log.undecodable()[0]
	assert.Equal(t, types.NamespacedName{Namespace: "a", Name: "x"}, bad.Key)
	assert.Equal(t, "6", bad.ResourceVersion)
	assert.ErrorContains(t, bad, "spec.priority")
	var notReady *informers.UndecodableObjectsError
	require.ErrorAs(t, ready(req), &notReady)

	// A write of x at that version cannot show: the Tracker says why at once.
	require.NoError(t, tracker.Wrote(bad.Key, goodPod("x", "ux", "6")))
	start := time.Now()
	_, err = tracker.Get(ctx, bad.Key)
	var tracked *informers.UndecodableObjectError
	require.ErrorAs(t, err, &tracked)
	assert.Less(t, time.Since(start), time.Second)

	// Fixed on the server: cached again, and no longer reported.
	w.Modify(goodPod("x", "ux", "8"))
	// An object that never decoded is not cached, and its delete is no
	// event: handlers never had it.
	w.Add(badPod("z", "uz", "9"))
	w.Delete(badPod("z", "uz", "10"))
	require.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == "10" }, 10*time.Second, time.Millisecond)
	got, err = inf.Lister().Namespace("a").Get("x")
	require.NoError(t, err)
	assert.Equal(t, "8", got.ResourceVersion)
	_, err = inf.Lister().Namespace("a").Get("z")
	assert.Error(t, err)
	assert.Zero(t, inf.Stats().Undecodable)
	require.NoError(t, ready(req))
	assert.Eventually(t, func() bool { return len(rec.List()) == initial+2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"add a/y", "update a/x 5->8"}, rec.List()[initial:])
}
