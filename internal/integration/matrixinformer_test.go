package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/shard"
)

// transformedAnnotation marks the objects that the matrix's transform
// changed.
const transformedAnnotation = "fault-matrix/transformed"

// matrixInformer is one combination of the matrix, running: an informer
// in a factory of its own, over a transport of its own, with two handlers.
// Its fields hide the informer's Go type: see startMatrixInformer.
type matrixInformer struct {
	combo
	faults *faults
	inf    matrixCache
	cached func() []metav1.Object // the objects of the informer's cache
	shard  *shard.Shard           // of a sharded informer
	// shardFilter is where a sharded informer's shard is filtered.
	shardFilter shard.Filter
	// handlers are a handler without MergeByKey and one with it.
	handlers [2]interface {
		view() (map[string]version, []string)
	}
	regs [2]informers.Syncer
	errs errorCounts
}

// matrixCache is what the matrix asks of a SharedInformer, whatever its
// type.
type matrixCache interface {
	HasSynced() bool
	LastSyncResourceVersion() string
	UsesWatchList() bool
	Shard() shard.Status
}

// handlerNames name the handlers of a matrixInformer, in order.
var handlerNames = [2]string{"handler", "MergeByKey handler"}

// startMatrixInformer starts the informer of combination c, the i-th, on
// namespace ns, caching c.resource as T; it stops at the end of the test.
func startMatrixInformer[T informers.Object](t *testing.T, env *testenv.Env, ns string, c combo, i int) *matrixInformer {
	m := &matrixInformer{combo: c, faults: newFaults(c.resource.gvr.Resource)}
	if !c.watchList {
		m.faults.RefuseWatchList()
	}
	cfg := env.Config()
	cfg.WrapTransport = m.faults.wrap
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Scheme: c.resource.scheme, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff), OnError: informers.Set(m.errs.record)}})
	opts := informers.Options[T]{Tuning: informers.Tuning{PageSize: informers.Set[int64](c.pageSize)}}
	if _, ok := any(*new(T)).(*unstructured.Unstructured); ok || c.resource.view {
		opts.Resource = c.resource.gvr
	}
	if c.selected {
		opts.LabelSelector = selectedLabel + "=yes"
	}
	switch c.kind {
	case transformedInformer:
		opts.Transform = markTransformed[T]
	case undecodedInformer:
		// Decoded by client-go; the other kinds share as the library's
		// decoder decodes, the default.
		opts.DisableDecoder = informers.Set(true)
	case shardedInformer:
		half := shard.Of(shard.ByUID, i%2, 2)
		m.shard, opts.Shard = &half, &half
		m.shardFilter = c.resource.shardFilter
		if m.shardFilter == shard.FilterServer {
			m.shardFilter = servedShardFilter(t, env) // or the server ignores the selector
		}
	case namespaceSelectedInformer:
		opts.NamespaceSelector = informers.Set(corev1.LabelMetadataName + "=" + ns)
		opts.NamespaceMode = informers.Set(informers.NamespaceModePerNamespace)
	case namespaceSelectedClusterWideInformer:
		opts.NamespaceSelector = informers.Set(corev1.LabelMetadataName + "=" + ns)
		opts.NamespaceMode = informers.Set(informers.NamespaceModeClusterWide)
	}
	inf := informers.InformerWith(f, opts)
	require.NoError(t, inf.LastError(), m.String())
	m.inf = inf
	m.cached = func() []metav1.Object {
		var objs []metav1.Object
		for o := range inf.Lister().All() {
			objs = append(objs, o)
		}
		return objs
	}
	for j, merge := range []bool{false, true} {
		h := newTracker[T]()
		reg, err := inf.AddHandlerWith(h, informers.HandlerOptions{MergeByKey: merge})
		require.NoError(t, err)
		m.handlers[j], m.regs[j] = h, reg
	}
	testutil.StartFactory(t, f)
	return m
}

// markTransformed is the transform of transformed informers: it drops
// managedFields and marks the object. It changes a copy of the
// annotations, which the decoder may share with other objects.
func markTransformed[T informers.Object](o T) (T, error) {
	o.SetManagedFields(nil)
	annotations := maps.Clone(o.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[transformedAnnotation] = "true"
	o.SetAnnotations(annotations)
	return o, nil
}

// waitForSync waits until both handlers have synced, and checks that the
// informer gets its state the way its combination says.
func (m *matrixInformer) waitForSync(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, reg := range m.regs {
		require.NoError(t, informers.WaitForSync(ctx, reg), m.String())
	}
	// A sharded informer, or one watching its selected namespaces
	// cluster-wide, lists, whatever the server offers: its list responses
	// say whether the server filtered a shard, and a change of namespaces
	// relists from a version. A watch per namespace streams as any.
	lists := m.kind == shardedInformer || m.kind == namespaceSelectedClusterWideInformer
	if m.watchList && !lists {
		// It streams, or tried to: on a loaded machine a stream can go
		// quiet for longer than the reflector waits (3 seconds) before
		// the end of its initial events, and the informer lists instead,
		// as it should.
		require.Positive(t, m.faults.stats().watchLists, "%s asks for its initial state by watch-list", m)
	} else {
		require.False(t, m.inf.UsesWatchList(), "%s lists", m)
		require.Zero(t, m.faults.stats().watchLists, "%s lists", m)
	}
	switch {
	case m.shard == nil:
	case m.shardFilter == shard.FilterUnknown: // lists filtered by the server, watches not
		require.Contains(t, []shard.Filter{shard.FilterServer, shard.FilterClient}, m.inf.Shard().Filter, "%s: who filters shards", m)
	default:
		require.Equal(t, m.shardFilter, m.inf.Shard().Filter, "%s: who filters shards", m)
	}
}

// selects reports whether o belongs in the informer's cache.
func (m *matrixInformer) selects(o metav1.Object) bool {
	return (!m.selected || o.GetLabels()[selectedLabel] == "yes") && (m.shard == nil || m.shard.Contains(o))
}

// check compares the informer with server, the objects of its resource
// in its namespace: its cache with the objects it selects, each handler's
// view with its cache. It returns "" if they are equal, or what differs.
func (m *matrixInformer) check(server []metav1.Object) string {
	if !m.inf.HasSynced() {
		return "not synced"
	}
	want := map[string]version{}
	for _, o := range server {
		if m.selects(o) {
			want[keyOf(o)] = version{o.GetUID(), o.GetResourceVersion()}
		}
	}
	cached := map[string]version{}
	for _, o := range m.cached() {
		if m.kind == transformedInformer && o.GetAnnotations()[transformedAnnotation] != "true" {
			return fmt.Sprintf("cache: %s is not transformed", keyOf(o))
		}
		cached[keyOf(o)] = version{o.GetUID(), o.GetResourceVersion()}
	}
	if d := diff(want, cached); d != "" {
		return "cache against the server: " + d
	}
	if m.resource.view {
		if d := viewsDiff(server, m.cached()); d != "" {
			return "views against the server: " + d
		}
	}
	for j, h := range m.handlers {
		view, problems := h.view()
		if len(problems) > 0 {
			return fmt.Sprintf("%s: %s", handlerNames[j], strings.Join(problems, "; "))
		}
		if d := diff(cached, view); d != "" {
			return fmt.Sprintf("%s's view against the cache: %s", handlerNames[j], d)
		}
	}
	return ""
}

// matrixView is a view of the matrix: fields returns what the check
// compares of it with the server's object, besides its UID and version.
type matrixView interface {
	informers.Object
	fields() any
}

// configMapView is a view of config maps: their labels and data.
type configMapView struct {
	informers.ViewMeta `json:"metadata"`
	Data               map[string]string `json:"data"`
}

func (v *configMapView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }

// fields are the labels, which the churn flips, and the data, which it
// updates. Annotations, which transformed informers mark, are left out.
func (v *configMapView) fields() any {
	return struct {
		Labels, Data map[string]string
	}{v.Labels, v.Data}
}

// fields are the labels, which the churn flips, and the spec, which it
// updates.
func (g *gadgetView) fields() any {
	return struct {
		Labels map[string]string
		Size   int64
	}{g.Labels, g.Spec.Size}
}

// viewsDiff says how the fields of cached, views that the diff of their
// versions found at the versions of the server's objects of the same
// names, differ from those objects' (unstructured), projected into the
// view as encoding/json projects them; "" if they do not.
func viewsDiff(server, cached []metav1.Object) string {
	byKey := make(map[string]metav1.Object, len(server))
	for _, o := range server {
		byKey[keyOf(o)] = o
	}
	var differ []string
	for _, o := range cached {
		v, ok := o.(matrixView)
		if !ok {
			return fmt.Sprintf("%s is a %T, not a view", keyOf(o), o)
		}
		u, ok := byKey[keyOf(o)].(*unstructured.Unstructured)
		if !ok {
			return fmt.Sprintf("%s: the server's object is a %T, not unstructured", keyOf(o), byKey[keyOf(o)])
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			return fmt.Sprintf("%s: encoding the server's object: %v", keyOf(o), err)
		}
		want := reflect.New(reflect.TypeOf(v).Elem()).Interface().(matrixView)
		if err := json.Unmarshal(b, want); err != nil {
			return fmt.Sprintf("%s: projecting the server's object into a %T: %v", keyOf(o), want, err)
		}
		if !reflect.DeepEqual(want.fields(), v.fields()) {
			differ = append(differ, fmt.Sprintf("%s has %+v, not %+v", keyOf(o), v.fields(), want.fields()))
		}
	}
	if len(differ) == 0 {
		return ""
	}
	slices.Sort(differ)
	return fmt.Sprintf("%d differ %s", len(differ), firstFew(differ))
}

// describe says what the informer did, for a failure message.
func (m *matrixInformer) describe() string {
	s := m.faults.stats()
	return fmt.Sprintf("requests: %d lists, %d watches, %d watch-lists, %d refused; errors: %s; at version %q, %d objects cached, synced %v",
		s.lists, s.watches, s.watchLists, s.refused, m.errs.String(), m.inf.LastSyncResourceVersion(), len(m.cached()), m.inf.HasSynced())
}

// diff says how got differs from want, or "" if it does not: the keys
// missing, those extra, and those at another UID or version.
func diff(want, got map[string]version) string {
	var missing, extra, stale []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch w := want[k]; {
		case !ok:
			missing = append(missing, k)
		case g != w:
			stale = append(stale, fmt.Sprintf("%s at uid %s rv %s, not uid %s rv %s", k, g.uid, g.rv, w.uid, w.rv))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(stale) == 0 {
		return ""
	}
	return fmt.Sprintf("%d missing %s; %d extra %s; %d stale %s", len(missing), firstFew(missing), len(extra), firstFew(extra), len(stale), firstFew(stale))
}

// firstFew lists the first three of s.
func firstFew(s []string) string {
	if len(s) > 3 {
		return fmt.Sprintf("%v...", s[:3])
	}
	return fmt.Sprint(s)
}

// errorCounts counts the errors an informer reports, by operation and
// HTTP status ("watch 410", "list 500", "watch-list conn").
type errorCounts struct {
	mu     sync.Mutex
	counts map[string]int
	order  []string
}

// record is an OnError.
func (e *errorCounts) record(err error) {
	what := "other"
	if lw, ok := errors.AsType[*informers.ListWatchError](err); ok {
		code := "conn"
		var st apierrors.APIStatus
		if errors.As(lw.Err, &st) {
			code = fmt.Sprint(st.Status().Code)
		}
		what = lw.Op + " " + code
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	if e.counts[what] == 0 {
		e.order = append(e.order, what)
	}
	e.counts[what]++
}

func (e *errorCounts) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.order) == 0 {
		return "none"
	}
	parts := make([]string, len(e.order))
	for i, what := range e.order {
		parts[i] = fmt.Sprintf("%s ×%d", what, e.counts[what])
	}
	return strings.Join(parts, ", ")
}

// The matrix's checks find what they look for: diff names the objects
// missing, extra and stale, and a tracker the events that make no sense
// in order.
func TestMatrixChecks(t *testing.T) {
	cm := func(name, uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
	}
	want := map[string]version{"ns/a": {"1", "10"}, "ns/b": {"2", "11"}, "ns/c": {"3", "12"}}
	assert.Empty(t, diff(want, maps.Clone(want)))
	got := map[string]version{"ns/a": {"1", "9"}, "ns/c": {"4", "13"}, "ns/d": {"5", "14"}}
	assert.Equal(t, "1 missing [ns/b]; 1 extra [ns/d]; 2 stale [ns/a at uid 1 rv 9, not uid 1 rv 10 ns/c at uid 4 rv 13, not uid 3 rv 12]", diff(want, got))

	type handler = tracker[*corev1.ConfigMap]
	for _, tc := range []struct {
		name    string
		events  func(h *handler)
		problem string // "" if none
		view    map[string]version
	}{
		{"add, update, delete and recreate", func(h *handler) {
			h.HandleAdd(cm("a", "1", "10"), true)
			h.HandleUpdate(cm("a", "1", "10"), cm("a", "1", "11"))
			h.HandleDelete(informers.Deleted[*corev1.ConfigMap]{Object: cm("a", "1", "11")})
			h.HandleAdd(cm("a", "2", "12"), false)
			h.HandleAdd(cm("b", "3", "13"), false)
		}, "", map[string]version{"ns/a": {"2", "12"}, "ns/b": {"3", "13"}}},
		{"added twice", func(h *handler) {
			h.HandleAdd(cm("a", "1", "10"), true)
			h.HandleAdd(cm("a", "2", "12"), false)
		}, "ns/a added again", nil},
		{"updated, not added", func(h *handler) {
			h.HandleUpdate(cm("a", "1", "10"), cm("a", "1", "11"))
		}, "ns/a: update (uid 1 rv 11) of an object not added", nil},
		{"deleted twice", func(h *handler) {
			h.HandleAdd(cm("a", "1", "10"), true)
			h.HandleDelete(informers.Deleted[*corev1.ConfigMap]{Object: cm("a", "1", "10")})
			h.HandleDelete(informers.Deleted[*corev1.ConfigMap]{Object: cm("a", "1", "10")})
		}, "ns/a: delete (uid 1 rv 10) of an object not added", nil},
		{"another UID updated", func(h *handler) {
			h.HandleAdd(cm("a", "1", "10"), true)
			h.HandleUpdate(cm("a", "1", "10"), cm("a", "2", "11"))
		}, "ns/a: update of uid 2, added as uid 1", nil},
		{"version back", func(h *handler) {
			h.HandleAdd(cm("a", "1", "10"), true)
			h.HandleUpdate(cm("a", "1", "10"), cm("a", "1", "9"))
		}, "ns/a went back from 10 to 9", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTracker[*corev1.ConfigMap]()
			tc.events(h)
			view, problems := h.view()
			if tc.problem == "" {
				assert.Empty(t, problems)
				assert.Equal(t, tc.view, view)
				return
			}
			require.Len(t, problems, 1)
			assert.Contains(t, problems[0], tc.problem)
		})
	}
}

// The matrix's check of views finds a view whose fields differ from the
// server's object's, and one that is no view.
func TestMatrixViewChecks(t *testing.T) {
	server := func(name, v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": name, "uid": "u-" + name, "resourceVersion": "10", "labels": map[string]any{selectedLabel: "yes"}},
			"data":     map[string]any{"v": v},
		}}
	}
	view := func(name, v string, labels map[string]string) *configMapView {
		return &configMapView{ViewMeta: informers.ViewMeta{Namespace: "ns", Name: name, UID: types.UID("u-" + name), ResourceVersion: "10", Labels: labels}, Data: map[string]string{"v": v}}
	}
	selected := map[string]string{selectedLabel: "yes"}
	servers := []metav1.Object{server("a", "1"), server("b", "2")}
	for _, tc := range []struct {
		name   string
		cached []metav1.Object
		want   string // "" if none
	}{
		{"equal", []metav1.Object{view("a", "1", selected), view("b", "2", selected)}, ""},
		{"data differs", []metav1.Object{view("a", "1", selected), view("b", "3", selected)}, "1 differ [ns/b has {Labels:map[fault-matrix/selected:yes] Data:map[v:3]}, not {Labels:map[fault-matrix/selected:yes] Data:map[v:2]}]"},
		{"labels differ", []metav1.Object{view("a", "1", map[string]string{selectedLabel: "no"})}, "1 differ [ns/a has"},
		{"not a view", []metav1.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}}, "ns/a is a *v1.ConfigMap, not a view"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := viewsDiff(servers, tc.cached)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.want)
		})
	}
}
