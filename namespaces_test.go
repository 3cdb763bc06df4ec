package informers_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/shard"
)

type namespaceSource = informerstest.Source[*corev1.Namespace, *corev1.NamespaceList]

// namespaceCluster serves pods and namespaces from memory.
type namespaceCluster struct {
	pods       *podSource
	namespaces *namespaceSource
	cluster    *informerstest.Cluster
}

func newNamespaceCluster() *namespaceCluster {
	c := &namespaceCluster{
		pods:       newPodSource(),
		namespaces: informerstest.NewSource[*corev1.Namespace, *corev1.NamespaceList](corev1.Resource("namespaces")),
		cluster:    informerstest.NewCluster(),
	}
	informerstest.Serve(c.cluster, corev1.SchemeGroupVersion.WithResource("pods"), c.pods)
	informerstest.Serve(c.cluster, corev1.SchemeGroupVersion.WithResource("namespaces"), c.namespaces)
	return c
}

func (c *namespaceCluster) label(t testing.TB, name, team string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if team != "" {
		ns.Labels = map[string]string{"team": team}
	}
	_, err := c.namespaces.Update(ns)
	if apierrors.IsNotFound(err) {
		_, err = c.namespaces.Add(ns)
	}
	require.NoError(t, err)
}

// selected returns the pods of the namespaces labelled team=a, by key,
// with their versions.
func (c *namespaceCluster) selected() map[types.NamespacedName]string {
	teamA := map[string]bool{}
	for _, ns := range c.namespaces.Objects() {
		if ns.Labels["team"] == "a" {
			teamA[ns.Name] = true
		}
	}
	want := map[types.NamespacedName]string{}
	for _, p := range c.pods.Objects() {
		if teamA[p.Namespace] {
			want[informers.KeyOf(p)] = p.ResourceVersion
		}
	}
	return want
}

func versions(objs []*corev1.Pod) map[types.NamespacedName]string {
	m := map[types.NamespacedName]string{}
	for _, p := range objs {
		m[informers.KeyOf(p)] = p.ResourceVersion
	}
	return m
}

// mirror is a handler that rebuilds the cache from its events alone and
// checks each against what it holds.
type mirror struct {
	mu       sync.Mutex
	objs     map[types.NamespacedName]string
	synced   bool // the informer had synced: no add may be initial
	errs     []string
	left     int // deletes of objects whose namespace left the selection
	entering int // adds after the sync
}

func newMirror() *mirror { return &mirror{objs: map[types.NamespacedName]string{}} }

func (m *mirror) errorf(format string, args ...any) {
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *mirror) HandleAdd(p *corev1.Pod, initial bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := informers.KeyOf(p)
	if _, ok := m.objs[k]; ok {
		m.errorf("add of %s, held already", k)
	}
	if initial && m.synced {
		m.errorf("add of %s marked initial after the sync", k)
	}
	if m.synced {
		m.entering++
	}
	m.objs[k] = p.ResourceVersion
}

func (m *mirror) HandleUpdate(old, p *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := informers.KeyOf(p)
	if have, ok := m.objs[k]; !ok || have != old.ResourceVersion {
		m.errorf("update of %s from %s, holding %q (%v)", k, old.ResourceVersion, have, ok)
	}
	m.objs[k] = p.ResourceVersion
}

func (m *mirror) HandleDelete(d informers.Deleted[*corev1.Pod]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[d.Key]; !ok {
		m.errorf("delete of %s, not held", d.Key)
	}
	if d.LeftNamespace {
		m.left++
	}
	delete(m.objs, d.Key)
}

func (m *mirror) view() (map[types.NamespacedName]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objs), m.errs
}

func (m *mirror) markSynced() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced = true
}

// startNamespaceSelected starts a factory over c with an informer of pods
// of the namespaces labelled team=a, and a mirror as its handler.
func startNamespaceSelected(t *testing.T, c *namespaceCluster, opts informers.Options[*corev1.Pod]) (*informers.SharedInformer[*corev1.Pod], *mirror) {
	t.Helper()
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: c.cluster, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}})
	opts.NamespaceSelector = informers.Set("team=a")
	inf := informers.InformerWith(f, opts)
	require.NoError(t, inf.LastError())
	m := newMirror()
	reg, err := inf.AddHandler(m)
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	waitSynced(t, reg)
	m.markSynced()
	return inf, m
}

// waitForVersion waits up to 10 seconds for inf to reach version rv.
func waitForVersion(t *testing.T, inf *informers.SharedInformer[*corev1.Pod], rv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, inf.WaitForVersion(ctx, rv))
}

// requireConverges waits until the lister holds exactly the pods of the
// selected namespaces and the mirror equals the lister.
func requireConverges(t testing.TB, c *namespaceCluster, inf *informers.SharedInformer[*corev1.Pod], m *mirror, what string) {
	t.Helper()
	var last string
	ok := assert.Eventually(t, func() bool {
		want := c.selected()
		got := versions(inf.Lister().List(nil))
		seen, errs := m.view()
		last = fmt.Sprintf("want %v\nlister %v\nmirror %v\nerrors %v", want, got, seen, errs)
		return len(errs) == 0 && maps.Equal(want, got) && maps.Equal(got, seen)
	}, 10*time.Second, time.Millisecond, what)
	if !ok {
		t.Fatalf("%s:\n%s", what, last)
	}
}

// The semantics of docs/namespaces.md: the cache holds the pods of the
// namespaces selected; a namespace that enters brings adds (not initial),
// one that leaves takes its pods away with LeftNamespace set, a namespace
// deleted on the server ends in plain deletes, and a Tracker does not wait
// for a write to an unselected namespace.
func TestNamespaceSelectorEnterAndLeave(t *testing.T) {
	for _, mode := range []informers.NamespaceMode{informers.NamespaceModeClusterWide, informers.NamespaceModePerNamespace} {
		t.Run(mode.String(), func(t *testing.T) { namespaceSelectorEnterAndLeave(t, mode) })
	}
}

func namespaceSelectorEnterAndLeave(t *testing.T, mode informers.NamespaceMode) {
	c := newNamespaceCluster()
	c.label(t, "a1", "a")
	c.label(t, "b1", "b")
	mustAdd(t, c.pods, pod("a1", "p", nil), pod("b1", "p", nil), pod("b1", "q", nil))
	inf, m := startNamespaceSelected(t, c, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceMode: informers.Set(mode)}})
	assert.Equal(t, map[types.NamespacedName]string{{Namespace: "a1", Name: "p"}: "1"}, versions(inf.Lister().List(nil)))
	assert.Equal(t, mode, inf.NamespaceMode())

	c.label(t, "b1", "a")
	requireConverges(t, c, inf, m, "b1 entered")
	_, errs := m.view()
	require.Empty(t, errs)
	assert.Equal(t, 2, m.entering, "the pods of b1 arrive as adds, not initial")
	if mode == informers.NamespaceModePerNamespace {
		assert.Eventually(t, func() bool { return c.pods.Watchers() == 2 }, 10*time.Second, time.Millisecond, "a watch for a1, one for b1")
	}

	c.label(t, "a1", "")
	requireConverges(t, c, inf, m, "a1 left")
	assert.Equal(t, 1, m.left, "a1/p left the selection")
	_, err := inf.Lister().Namespace("a1").Get("p")
	assert.True(t, apierrors.IsNotFound(err))

	tr := informers.NewTracker(inf, time.Second)
	written, err := c.pods.Update(pod("a1", "p", map[string]string{"x": "y"}))
	require.NoError(t, err)
	p := pod("a1", "p", map[string]string{"x": "y"})
	p.ResourceVersion = written
	require.NoError(t, tr.Wrote(informers.KeyOf(p), p))
	require.NoError(t, tr.Wait(context.Background(), informers.KeyOf(p)), "a1 is not selected: nothing to wait for")

	// b1 is deleted on the server: its pods first, then the namespace.
	for _, name := range []string{"p", "q"} {
		_, err := c.pods.Delete("b1", name)
		require.NoError(t, err)
	}
	_, err = c.namespaces.Delete("", "b1")
	require.NoError(t, err)
	requireConverges(t, c, inf, m, "b1 deleted")
	assert.Equal(t, 1, m.left, "no object of a deleted namespace left the selection")
}

// TestNamespaceSelectorModel flips namespace labels, deletes and
// recreates namespaces and writes pods at random, with closed watches,
// compactions and failing lists: after each quiet point the lister holds
// exactly the pods of the selected namespaces and the handler's view,
// replayed from its events, equals the lister. Each sequence runs with a
// label selector, a shard, a transform or interning too, in turn.
func TestNamespaceSelectorModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	steps := 0
	for _, mode := range []informers.NamespaceMode{informers.NamespaceModeClusterWide, informers.NamespaceModePerNamespace} {
		t.Run(mode.String(), func(t *testing.T) {
			steps += namespaceSelectorModel(t, seed, mode)
		})
	}
	t.Logf("%d steps", steps)
}

// namespaceSelectorModel runs the sequences of TestNamespaceSelectorModel
// in mode and returns the number of steps run. A watch per namespace
// does not combine with a shard: that sequence runs with a label selector
// instead.
func namespaceSelectorModel(t *testing.T, seed int64, mode informers.NamespaceMode) int {
	steps := 0
	for n := range 8 {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(n)))
			c := newNamespaceCluster()
			namespaces := []string{"n0", "n1", "n2", "n3", "n4"}
			for _, ns := range namespaces {
				c.label(t, ns, []string{"a", "b"}[rng.IntN(2)])
			}
			opts := informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceMode: informers.Set(mode)}}
			switch n % 4 {
			case 1:
				if mode == informers.NamespaceModePerNamespace {
					opts.LabelSelector = "!unselected"
					break
				}
				s := shard.Of(shard.ByNamespace, 0, 2)
				opts.Shard = &s
			case 2:
				opts.Transform = informers.StripManagedFields[*corev1.Pod]()
			case 3:
				opts.StripManagedFields = informers.Set(true)
			}
			inf, m := startNamespaceSelected(t, c, opts)
			require.Equal(t, mode, inf.NamespaceMode())
			want := c.selected
			if opts.Shard != nil {
				want = func() map[types.NamespacedName]string {
					all := c.selected()
					maps.DeleteFunc(all, func(k types.NamespacedName, _ string) bool {
						return !opts.Shard.Contains(pod(k.Namespace, k.Name, nil))
					})
					return all
				}
			}
			mirrors := []*mirror{m}
			converges := func(what string) {
				t.Helper()
				var last string
				ok := assert.Eventually(t, func() bool {
					w := want()
					got := versions(inf.Lister().List(nil))
					last = fmt.Sprintf("want %v\nlister %v", w, got)
					if !maps.Equal(w, got) {
						return false
					}
					for n, m := range mirrors {
						seen, errs := m.view()
						last += fmt.Sprintf("\nmirror %d %v\nerrors %v", n, seen, errs)
						if len(errs) > 0 || !maps.Equal(got, seen) {
							return false
						}
					}
					return true
				}, 10*time.Second, time.Millisecond)
				if !ok {
					t.Fatalf("%s:\n%s", what, last)
				}
			}
			for step := range 500 {
				steps++
				ns := namespaces[rng.IntN(len(namespaces))]
				name := fmt.Sprintf("p%d", rng.IntN(6))
				switch r := rng.IntN(100); {
				case r < 20:
					c.label(t, ns, []string{"a", "b", ""}[rng.IntN(3)])
				case r < 50:
					if _, err := c.pods.Update(pod(ns, name, map[string]string{"step": fmt.Sprint(step)})); apierrors.IsNotFound(err) {
						_, err = c.pods.Add(pod(ns, name, nil))
						require.NoError(t, err)
					}
				case r < 60:
					_, _ = c.pods.Delete(ns, name)
				case r < 63:
					// Deleted on the server: its pods, then itself; then
					// created again, unlabelled or not.
					for _, p := range c.pods.Objects() {
						if p.Namespace == ns {
							_, err := c.pods.Delete(ns, p.Name)
							require.NoError(t, err)
						}
					}
					_, _ = c.namespaces.Delete("", ns)
					c.label(t, ns, []string{"a", ""}[rng.IntN(2)])
				case r < 68:
					c.pods.CloseWatches()
				case r < 71:
					c.pods.Compact()
					c.pods.CloseWatches()
				case r < 73:
					c.namespaces.CloseWatches()
				case r < 75:
					c.pods.FailList(apierrors.NewInternalError(fmt.Errorf("step %d", step)))
					c.pods.CloseWatches()
				}
				if step == 250 { // a handler added late, between events
					late := newMirror()
					_, err := inf.AddHandler(late)
					require.NoError(t, err)
					mirrors = append(mirrors, late)
				}
				if step%25 == 24 {
					c.pods.FailList(nil)
					converges(fmt.Sprintf("quiet point after step %d", step))
				}
			}
		})
	}
	return steps
}

func TestNamespaceSelectorInFactory(t *testing.T) {
	c := newNamespaceCluster()
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: c.cluster, Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}})
	byDefault := informers.Informer[*corev1.Pod](f)
	require.NoError(t, byDefault.LastError())
	assert.Equal(t, "pods.v1 namespaces=team=a", byDefault.Name(), "the factory's selector is the default")
	assert.Same(t, byDefault, informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set(" team = a ")}}), "equivalent spellings name one informer")
	own := informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=b")}})
	assert.NotSame(t, byDefault, own, "the informer's own selector wins and tells it apart")
	assert.Equal(t, "pods.v1 namespaces=team=b", own.Name())
	assert.Equal(t, "namespaces.v1", informers.Informer[*corev1.Namespace](f).Name(), "the Namespace informer is not itself selected")
	assert.Error(t, informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team in a")}}).LastError(), "a selector that does not parse")

	_, err := informers.NewInformer(c.pods.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}})
	assert.ErrorContains(t, err, "NamespaceSelector is for a Factory")
}

// The cluster-wide watch carries the versions of every namespace: the
// cache reaches the version of a write to an unselected namespace, and
// WaitForVersion returns.
func TestNamespaceSelectorWaitForVersion(t *testing.T) {
	c := newNamespaceCluster()
	c.label(t, "a1", "a")
	c.label(t, "b1", "b")
	inf, _ := startNamespaceSelected(t, c, informers.Options[*corev1.Pod]{})
	rv, err := c.pods.Add(pod("b1", "unselected", nil))
	require.NoError(t, err)
	waitForVersion(t, inf, rv)
	assert.Zero(t, inf.Lister().Len())
}

// With a watch per namespace, the informer's version is the lowest of the
// namespaces' watches: a write to an unselected namespace is reached once
// every watched namespace has moved past it, with the server's bookmarks.
func TestNamespaceSelectorWaitForVersionPerNamespace(t *testing.T) {
	c := newNamespaceCluster()
	c.label(t, "a1", "a")
	c.label(t, "a2", "a")
	c.label(t, "b1", "b")
	inf, _ := startNamespaceSelected(t, c, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceMode: informers.Set(informers.NamespaceModePerNamespace)}})
	rv, err := c.pods.Add(pod("b1", "unselected", nil))
	require.NoError(t, err)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.Error(t, inf.WaitForVersion(short, rv), "no watched namespace has seen that version yet")
	require.Eventually(t, func() bool { return c.pods.Watchers() == 2 }, 10*time.Second, time.Millisecond)
	c.pods.Bookmark()
	waitForVersion(t, inf, rv)
	assert.Zero(t, inf.Lister().Len())
}

// An informer whose namespaces cannot be read does not sync, and says why
// at once.
func TestNamespaceSelectorNamespacesForbidden(t *testing.T) {
	c := newNamespaceCluster()
	c.namespaces.FailList(apierrors.NewForbidden(corev1.Resource("namespaces"), "", fmt.Errorf("RBAC: access denied")))
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: c.cluster, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}})
	inf := informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}})
	testutil.StartFactory(t, f)
	err := waitFailsPromptly(t, waitOn(inf))
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.ErrorContains(t, err, "NamespaceSelector team=a")
	assert.False(t, inf.HasSynced())
}

// forbiddenServer serves c, refusing with 403 Forbidden every list and
// watch of pods but those of the namespaces in allowed, as Roles in those
// namespaces alone would.
type forbiddenServer struct {
	*informerstest.Cluster
	allowed map[string]bool
}

func (s forbiddenServer) refuses(gvr schema.GroupVersionResource, namespace string) error {
	if gvr.Resource != "pods" || s.allowed[namespace] {
		return nil
	}
	return apierrors.NewForbidden(gvr.GroupResource(), "", fmt.Errorf("RBAC: pods in namespace %q not allowed", namespace))
}

func (s forbiddenServer) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (runtime.Object, error) {
	if err := s.refuses(gvr, namespace); err != nil {
		return nil, err
	}
	return s.Cluster.List(ctx, gvr, namespace, opts)
}

func (s forbiddenServer) Watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	if err := s.refuses(gvr, namespace); err != nil {
		return nil, err
	}
	return s.Cluster.Watch(ctx, gvr, namespace, opts)
}

// With Roles in some namespaces only: NamespaceModeAuto, refused a
// cluster-wide list, watches each selected namespace; the one it may not
// read is named by WaitForSync and readiness, while the others are
// cached; once it leaves the selection, the informer syncs.
func TestNamespaceSelectorForbiddenNamespace(t *testing.T) {
	c := newNamespaceCluster()
	for _, ns := range []string{"a1", "a2", "a3", "b1"} {
		c.label(t, ns, ns[:1])
	}
	mustAdd(t, c.pods, pod("a1", "p", nil), pod("a2", "p", nil), pod("a3", "p", nil), pod("b1", "p", nil))
	server := forbiddenServer{Cluster: c.cluster, allowed: map[string]bool{"a1": true, "a3": true, "b1": true}}
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: server, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}})
	inf := informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}})
	require.NoError(t, inf.LastError())
	testutil.StartFactory(t, f)

	err := waitFailsPromptly(t, waitOn(inf))
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.ErrorContains(t, err, "namespace a2")
	assert.Equal(t, informers.NamespaceModePerNamespace, inf.NamespaceMode(), "turned to a watch per namespace")
	assert.Eventually(t, func() bool {
		return maps.Equal(map[types.NamespacedName]string{{Namespace: "a1", Name: "p"}: "1", {Namespace: "a3", Name: "p"}: "3"}, versions(inf.Lister().List(nil)))
	}, 10*time.Second, time.Millisecond, "the namespaces it may read are cached")
	ready := informers.ReadyCheck(inf)(nil)
	require.Error(t, ready)
	assert.ErrorContains(t, ready, "namespace a2")
	assert.NotContains(t, ready.Error(), "namespace a1")

	c.label(t, "a2", "b")
	require.Eventually(t, inf.HasSynced, 10*time.Second, time.Millisecond, "a2 left: every namespace selected at start has synced or left")
	assert.NoError(t, informers.ReadyCheck(inf)(nil))
}

// NamespaceModeAuto watches each namespace when at most a quarter of them
// are selected, or when the informer has a namespace of its own, and
// cluster-wide otherwise, or when sharded; a mode that is not one, and a
// watch per namespace of a sharded informer, are refused.
func TestNamespaceModeAuto(t *testing.T) {
	byNamespace := shard.Of(shard.ByNamespace, 0, 2)
	for _, tc := range []struct {
		name         string
		teamA, teamB int
		opts         informers.Options[*corev1.Pod]
		want         informers.NamespaceMode
	}{
		{name: "a quarter selected", teamA: 2, teamB: 6, want: informers.NamespaceModePerNamespace},
		{name: "none selected", teamA: 0, teamB: 3, want: informers.NamespaceModePerNamespace},
		{name: "more than a quarter", teamA: 3, teamB: 6, want: informers.NamespaceModeClusterWide},
		{name: "a namespace of its own", teamA: 3, teamB: 1, opts: informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Namespace: informers.Set("a0")}}, want: informers.NamespaceModePerNamespace},
		{name: "sharded", teamA: 1, teamB: 6, opts: informers.Options[*corev1.Pod]{Shard: &byNamespace}, want: informers.NamespaceModeClusterWide},
		{name: "forced", teamA: 1, teamB: 6, opts: informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceMode: informers.Set(informers.NamespaceModeClusterWide)}}, want: informers.NamespaceModeClusterWide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newNamespaceCluster()
			for n := range tc.teamA {
				c.label(t, fmt.Sprintf("a%d", n), "a")
			}
			for n := range tc.teamB {
				c.label(t, fmt.Sprintf("b%d", n), "b")
			}
			inf, _ := startNamespaceSelected(t, c, tc.opts)
			assert.Equal(t, tc.want, inf.NamespaceMode())
		})
	}

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: newNamespaceCluster().cluster})
	assert.ErrorContains(t, informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), NamespaceMode: informers.Set(informers.NamespaceModePerNamespace)}, Shard: &byNamespace}).LastError(), "does not combine with Shard")
	assert.ErrorContains(t, informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), NamespaceMode: informers.Set[informers.NamespaceMode](7)}}).LastError(), "NamespaceMode(7) is not a NamespaceMode")
	cw := informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), NamespaceMode: informers.Set(informers.NamespaceModeClusterWide)}})
	assert.NotSame(t, cw, informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}}), "the mode tells informers apart")
}
