package integration

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// On the real control plane, an informer selecting the namespaces
// labelled team=a caches exactly their config maps, and follows the label:
// a namespace that gains it brings its objects within 2 s, one that loses
// it takes them away within 2 s, with LeftNamespace set.
func TestNamespaceSelectorFollowsLabels(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ctx := testutil.Context(t, 2*time.Minute)
	// A label of this test's own, so that other tests' namespaces are
	// never selected.
	team := fmt.Sprintf("team-%d", time.Now().UnixNano())
	namespaces := []string{testutil.Namespace(t, admin), testutil.Namespace(t, admin), testutil.Namespace(t, admin)}
	label := func(ns, value string) { labelNamespace(ctx, t, admin, ns, team, value) }
	for n, ns := range namespaces {
		label(ns, []string{"a", "b", "b"}[n])
		createNumbered(ctx, t, admin, ns, 0, 5)
	}

	f := informers.NewFactoryWith(admin, informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	cms := informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{NamespaceSelector: informers.Set(team + "=a")}})
	var left atomic.Int64
	_, err := cms.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) {
		if d.LeftNamespace {
			left.Add(1)
		}
	}})
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	require.Equal(t, namespaces[:1], cachedNamespaces(cms), "only the selected namespace's objects")
	require.Equal(t, 5, cms.Lister().Len())

	label(namespaces[1], "a")
	testutil.EventuallyWithin(t, 2*time.Second, func() bool { return cms.Lister().Len() == 10 }, "the entering namespace's objects within 2 s")
	assert.Equal(t, slices.Sorted(slices.Values(namespaces[:2])), cachedNamespaces(cms))

	label(namespaces[0], "b")
	testutil.EventuallyWithin(t, 2*time.Second, func() bool { return cms.Lister().Len() == 5 && left.Load() == 5 }, "the leaving namespace's objects gone within 2 s")
	assert.Equal(t, namespaces[1:2], cachedNamespaces(cms))

	// A write in an unselected namespace never shows: a Tracker does not
	// wait for it.
	cm, err := admin.CoreV1().ConfigMaps(namespaces[2]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unseen"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr := informers.NewTracker(cms, 0)
	require.NoError(t, tr.Wrote(informers.KeyOf(cm), cm))
	start := time.Now()
	require.NoError(t, tr.Wait(ctx, informers.KeyOf(cm)))
	assert.Less(t, time.Since(start), time.Second)
}

// cachedNamespaces returns the namespaces of the objects cms caches, sorted.
func cachedNamespaces(cms *informers.SharedInformer[*corev1.ConfigMap]) []string {
	var out []string
	for cm := range cms.Lister().All() {
		if !slices.Contains(out, cm.Namespace) {
			out = append(out, cm.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// On the real control plane, a service account that may read Namespace
// objects (a ClusterRole on namespaces alone) and config maps through
// Roles in three of ten namespaces: an informer selecting team=a, refused
// a cluster-wide list, watches each selected namespace, caches exactly
// the config maps of those it may read, follows the label within 2 s, and
// names the selected namespace it may not read in readiness.
func TestNamespaceSelectorPerNamespaceRoles(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	admin := clientset(t, env.Config())
	ctx := testutil.Context(t, 2*time.Minute)
	team := fmt.Sprintf("team-%d", time.Now().UnixNano())
	namespaces := make([]string, 10)
	for n := range namespaces {
		namespaces[n] = testutil.Namespace(t, admin)
	}
	label := func(ns, value string) { labelNamespace(ctx, t, admin, ns, team, value) }
	// Selected: 0, 1, 2. Readable: 0, 1, 3.
	for n, ns := range namespaces {
		label(ns, map[bool]string{true: "a", false: "b"}[n < 3])
		createNumbered(ctx, t, admin, ns, 0, 5)
	}
	home := namespaces[0]
	sa, err := admin.CoreV1().ServiceAccounts(home).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "teams"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: home}
	role := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}
	for _, n := range []int{0, 1, 3} {
		ns := namespaces[n]
		_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Rules: []rbacv1.PolicyRule{role}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cm"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm"},
			Subjects:   []rbacv1.Subject{subject},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	name := "namespaces-" + home
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	token, err := admin.CoreV1().ServiceAccounts(home).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := env.RestrictedConfig()
	cfg.BearerToken = token.Status.Token
	restricted := clientset(t, cfg)
	testutil.EventuallyWithin(t, 30*time.Second, func() bool {
		_, err := restricted.CoreV1().ConfigMaps(namespaces[3]).List(ctx, metav1.ListOptions{})
		_, nsErr := restricted.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && nsErr == nil
	}, "the roles in force")

	f := informers.NewFactoryWith(restricted, informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), OnError: informers.Set(func(error) {})}})
	cms := informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{NamespaceSelector: informers.Set(team + "=a")}})
	var left atomic.Int64
	_, err = cms.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) {
		if d.LeftNamespace {
			left.Add(1)
		}
	}})
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	err = informers.WaitForSync(ctx, f)
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.ErrorContains(t, err, "namespace "+namespaces[2])
	assert.Equal(t, informers.NamespaceModePerNamespace, cms.NamespaceMode())
	testutil.EventuallyWithin(t, 10*time.Second, func() bool { return cms.Lister().Len() == 10 }, "the readable selected namespaces' objects")
	assert.Equal(t, slices.Sorted(slices.Values(namespaces[:2])), cachedNamespaces(cms), "exactly what it may read")
	ready := informers.ReadyCheck(cms)(nil)
	require.Error(t, ready)
	assert.ErrorContains(t, ready, "namespace "+namespaces[2])

	label(namespaces[3], "a")
	testutil.EventuallyWithin(t, 2*time.Second, func() bool { return cms.Lister().Len() == 15 }, "the entering namespace's objects within 2 s")
	label(namespaces[0], "b")
	testutil.EventuallyWithin(t, 2*time.Second, func() bool { return cms.Lister().Len() == 10 && left.Load() == 5 }, "the leaving namespace's objects gone within 2 s")
	assert.Equal(t, slices.Sorted(slices.Values([]string{namespaces[1], namespaces[3]})), cachedNamespaces(cms))

	label(namespaces[2], "b")
	testutil.EventuallyWithin(t, 10*time.Second, cms.HasSynced, "synced once the namespace it may not read left")
	assert.NoError(t, informers.ReadyCheck(cms)(nil))
}
