package controllerruntime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testutil"
)

// TestCacheNamespaceSelector runs a cache whose config maps are those of
// the namespaces labelled team=<first namespace>, in both ways of
// watching: a namespace that gains the label enters (its objects are read
// and added), one that loses it leaves (its objects are deleted), and a
// type with an override of its own is cached in every namespace.
func TestCacheNamespaceSelector(t *testing.T) {
	for _, mode := range []informers.NamespaceMode{informers.NamespaceModePerNamespace, informers.NamespaceModeClusterWide} {
		t.Run(mode.String(), func(t *testing.T) {
			env, cs := sharedServer(t)
			ctx := testutil.Context(t, time.Minute)
			first, second, team := teamNamespaces(ctx, t, cs)
			for _, ns := range []string{first, second} {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
				require.NoError(t, err)
				_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}

			c, err := controllerruntime.NewWithOptions(env.Config(), cache.Options{}, controllerruntime.Options{
				NamespaceSelector:         "team=" + team,
				NamespaceSelectorByObject: map[client.Object]string{&corev1.Secret{}: ""},
				NamespaceMode:             mode,
			})
			require.NoError(t, err)
			startCache(t, c)
			inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
			require.NoError(t, err)
			events := &testutil.Events{}
			_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) { events.Record("add " + obj.(client.Object).GetNamespace()) },
				DeleteFunc: func(obj any) {
					if o, ok := obj.(client.Object); ok {
						events.Record("delete " + o.GetNamespace())
					}
				},
			})
			require.NoError(t, err)
			require.True(t, c.WaitForCacheSync(ctx))
			require.Equal(t, mode, inf.(interface {
				Informer() *informers.SharedInformer[client.Object]
			}).Informer().NamespaceMode())

			// cached returns the namespaces whose object name the cache holds.
			cached := func(newObj func() client.Object, name string) []string {
				var in []string
				for _, ns := range []string{first, second} {
					if c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, newObj()) == nil {
						in = append(in, ns)
					}
				}
				return in
			}
			configMaps := func() []string { return cached(func() client.Object { return &corev1.ConfigMap{} }, "cm") }
			require.Equal(t, []string{first}, configMaps(), "only the selected namespace")
			require.Equal(t, []string{first, second}, cached(func() client.Object { return &corev1.Secret{} }, "s"),
				"the override caches every namespace")
			testutil.EventuallyWithin(t, 10*time.Second, func() bool { return events.Has("add " + first) }, "the handler is told of the selected namespace's object")

			setTeam(ctx, t, cs, second, team)
			testutil.EventuallyWithin(t, 10*time.Second, func() bool {
				return slices.Equal(configMaps(), []string{first, second}) && events.Has("add "+second)
			}, "the labelled namespace entered")

			setTeam(ctx, t, cs, first, "")
			testutil.EventuallyWithin(t, 10*time.Second, func() bool {
				return slices.Equal(configMaps(), []string{second}) && events.Has("delete "+first)
			}, "the unlabelled namespace left")
		})
	}
}

// setTeam sets namespace ns's team label, or removes it if team is "".
// teamNamespaces creates two namespaces, the first labelled with a team
// of its own: a label value no other test's namespace has.
func teamNamespaces(ctx context.Context, t *testing.T, cs kubernetes.Interface) (first, second, team string) {
	t.Helper()
	first, second = testutil.Namespace(t, cs), testutil.Namespace(t, cs)
	setTeam(ctx, t, cs, first, first)
	return first, second, first
}

func setTeam(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, team string) {
	t.Helper()
	patch := `{"metadata":{"labels":{"team":null}}}`
	if team != "" {
		patch = `{"metadata":{"labels":{"team":"` + team + `"}}}`
	}
	_, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// A manager on a cache with a namespace selector reconciles the objects of
// the selected namespaces; an object whose namespace leaves is reconciled
// as gone from the cache, though it still exists on the server.
func TestManagerNamespaceSelector(t *testing.T) {
	env, cs := sharedServer(t)
	ctx := testutil.Context(t, time.Minute)
	first, second, team := teamNamespaces(ctx, t, cs)
	for _, ns := range []string{first, second} {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"v": "1"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	mgr := newManager(t, env.Config(), manager.Options{
		NewCache: controllerruntime.NewCacheWithOptions(controllerruntime.Options{NamespaceSelector: "team=" + team}),
	})
	reconciled := &seen{}
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("teams").For(&corev1.ConfigMap{}).
		Complete(reconciler(mgr.GetClient(), func() client.Object { return &corev1.ConfigMap{} }, reconciled)))
	startManager(t, mgr)
	inFirst, inSecond := types.NamespacedName{Namespace: first, Name: "x"}, types.NamespacedName{Namespace: second, Name: "x"}

	testutil.EventuallyWithin(t, 10*time.Second, func() bool { return reconciled.get(inFirst) == "1" }, "the selected namespace's object is reconciled")
	require.Empty(t, reconciled.get(inSecond), "the other namespace's is not")
	setTeam(ctx, t, cs, second, team)
	testutil.EventuallyWithin(t, 10*time.Second, func() bool { return reconciled.get(inSecond) == "1" }, "the namespace entered")
	setTeam(ctx, t, cs, first, "")
	testutil.EventuallyWithin(t, 10*time.Second, func() bool { return reconciled.get(inFirst) == "gone" }, "the namespace left")
}
