package informers_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/testutil"
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
	assert.ErrorContains(t, notReady, ": 1 object cannot be decoded, first a/x: ")

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

// The rule by which undecodable objects say the Go type is wrong: at
// least two objects fail at one field, and they are more than half.
func TestMostlyUndecodableRule(t *testing.T) {
	for _, tc := range []struct {
		failed, objects int
		want            bool
	}{
		{0, 0, false},
		{1, 1, false}, // one object is not a pattern
		{1, 2, false},
		{2, 2, true},
		{2, 3, true},
		{2, 4, false}, // half is not most
		{3, 5, true},
		{50, 100, false},
		{51, 100, true},
		{199, 200, true},
		{1, 101, false},
	} {
		assert.Equal(t, tc.want, informers.MostlyUndecodable(tc.failed, tc.objects), "%d of %d", tc.failed, tc.objects)
	}
}

// Objects that fail at the same field of different array elements fail at
// one field; those whose decoder did not say where count at none.
func TestUndecodableField(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&decoded.Undecodable{Path: "spec.size"}, "spec.size"},
		{&decoded.Undecodable{Path: "spec.containers[0].image"}, "spec.containers[*].image"},
		{&decoded.Undecodable{Path: "spec.containers[12].ports[3].name"}, "spec.containers[*].ports[*].name"},
		{fmt.Errorf("wrapped: %w", &decoded.Undecodable{Path: "spec.x"}), "spec.x"},
		{&decoded.Undecodable{}, ""},
		{errors.New("list item is *v1.Node, want *v1.Pod"), ""},
	} {
		assert.Equal(t, tc.want, informers.UndecodableField(&informers.UndecodableObjectError{Err: tc.err}), "%v", tc.err)
	}
}

// badPodAt is a pod whose metadata decoded and whose field at path did not.
func badPodAt(name, uid, rv, path string) *decoded.Undecodable {
	return &decoded.Undecodable{Namespace: "a", Name: name, UID: types.UID(uid), ResourceVersion: rv, Path: path, Err: errors.New("cannot unmarshal number into string")}
}

// podsWithBad is a list of pods some of whose items did not decode.
type podsWithBad struct {
	corev1.PodList
	bad []reflector.Undecodable
}

func (l *podsWithBad) UndecodableItems() []reflector.Undecodable { return l.bad }

// A cache most of whose objects fail at the same field is not healthy,
// whatever FailReadinessOnUndecodable says: WaitForSync, ReadyCheck and
// LastError say so, with the field, the type and the counts, from the
// sync on and whenever later writes make it so; it is healthy again once
// enough of the objects are fixed or deleted. Objects failing at
// different fields are bad objects, not a bad type.
func TestUndecodableTypeFailsSyncAndReadiness(t *testing.T) {
	w := watch.NewFakeWithChanSize(16, false)
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*podsWithBad, error) {
			return &podsWithBad{
				PodList: corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []corev1.Pod{*goodPod("a", "ua", "3")}},
				bad:     []reflector.Undecodable{badPodAt("b", "ub", "4", "spec.containers[0].image"), badPodAt("c", "uc", "5", "spec.containers[1].image")},
			}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil })
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
	require.NoError(t, err)
	testutil.Run(t, inf)
	ready := informers.ReadyCheck(inf)
	req := httptest.NewRequest("GET", "/readyz", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at := func(rv string) {
		t.Helper()
		require.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == rv }, 10*time.Second, time.Millisecond)
	}
	unhealthy := func(failed, undecodable, objects int, first string) {
		t.Helper()
		var typ *informers.UndecodableTypeError
		require.ErrorAs(t, informers.WaitForSync(ctx, inf), &typ)
		assert.Equal(t, "spec.containers[*].image", typ.Field)
		assert.Equal(t, "*v1.Pod", typ.Type)
		assert.Equal(t, []int{failed, undecodable, objects}, []int{typ.Failed, typ.Undecodable, typ.Objects})
		require.NotNil(t, typ.First)
		assert.Equal(t, first, typ.First.Key.Name)
		assert.ErrorContains(t, typ, fmt.Sprintf("%d of %d objects cannot be decoded at spec.containers[*].image: *v1.Pod does not fit the resource", failed, objects))
		assert.True(t, inf.HasSynced(), "the cache has synced all the same")
		require.ErrorAs(t, ready(req), &typ)
		require.ErrorAs(t, inf.LastError(), &typ)
		var one *informers.UndecodableObjectError
		require.ErrorAs(t, typ, &one, "the first object's error is wrapped")
	}
	healthy := func() {
		t.Helper()
		require.NoError(t, informers.WaitForSync(ctx, inf))
		require.NoError(t, informers.WaitForSync(ctx, inf))
		require.NoError(t, ready(req))
		require.NoError(t, inf.LastError())
	}

	// At the sync: 2 of 3 fail at the same field of different containers.
	unhealthy(2, 2, 3, "b")
	assert.Equal(t, 1, inf.Lister().Len(), "the object that decodes is cached")

	// 2 of 5: bad objects, not a bad type.
	w.Add(goodPod("d", "ud", "6"))
	w.Add(goodPod("e", "ue", "7"))
	at("7")
	healthy()

	// A later write makes 3 of 5 fail there.
	w.Modify(badPodAt("d", "ud", "8", "spec.containers[2].image"))
	at("8")
	unhealthy(3, 3, 5, "b")

	// 2 of 4 once one of them is deleted.
	w.Delete(badPodAt("b", "ub", "9", "spec.containers[0].image"))
	at("9")
	healthy()

	// 3 of 4 cannot be decoded, but only 2 at one field.
	w.Modify(badPodAt("e", "ue", "10", "spec.priority"))
	at("10")
	healthy()
	assert.Equal(t, 3, inf.Stats().Undecodable)

	// Fixed at the other field and broken at the common one: 3 of 4.
	w.Modify(badPodAt("e", "ue", "11", "spec.containers[0].image"))
	at("11")
	unhealthy(3, 3, 4, "c")

	// Fixed on the server: healthy.
	w.Modify(goodPod("c", "uc", "12"))
	w.Modify(goodPod("d", "ud", "13"))
	at("13")
	healthy()
}

// An object that never decoded, fixed on the server, reaches handlers as
// an add: they never had it. One that decoded before comes back as an
// update of its last good state.
func TestUndecodableObjectFixedIsAddedIfNeverCached(t *testing.T) {
	w := watch.NewFakeWithChanSize(16, false)
	lw := informers.NewListWatch[*corev1.Pod](
		func(context.Context, metav1.ListOptions) (*podsWithBad, error) {
			return &podsWithBad{
				PodList: corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []corev1.Pod{*goodPod("x", "ux", "4")}},
				bad:     []reflector.Undecodable{badPodAt("never", "un", "5", "spec.priority")},
			}, nil
		},
		func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil })
	lw.DisableWatchList = true
	inf, rec := startRecording(t, lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
	initial := len(rec.List())
	w.Modify(badPodAt("x", "ux", "6", "spec.priority"))
	w.Modify(goodPod("never", "un", "7"))
	w.Modify(goodPod("x", "ux", "8"))
	require.Eventually(t, func() bool { return len(rec.List()) == initial+2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"add a/never", "update a/x 4->8"}, rec.List()[initial:])
	assert.Zero(t, inf.Stats().Undecodable)
}
