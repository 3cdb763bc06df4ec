package controllerruntime_test

// The cache contract of controller-runtime's own pkg/cache suite, the
// parts that matter to controllers, checked against our cache.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testutil"
)

// fixture is two namespaces of pods, labelled by namespace and number,
// and a ClusterRole, on the shared control plane.
type fixture struct {
	cfg      *rest.Config
	cs       kubernetes.Interface
	ns1, ns2 string
	role     string
}

// newFixture checks the test for leaks, as sharedServer does, and returns
// its fixture.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	env, cs := sharedServer(t)
	f := &fixture{cfg: env.Config(), cs: cs, ns1: testutil.Namespace(t, cs), ns2: testutil.Namespace(t, cs)}
	ctx := testutil.Context(t, time.Minute)
	for _, ns := range []string{f.ns1, f.ns2} {
		for i := range 3 {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"ns": ns, "n": fmt.Sprint(i), "test-label": "x"},
					ManagedFields: nil},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%2), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	role, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "cr-test-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	f.role = role.Name
	return f
}

// start returns a running cache with opts; it stops at the end of the test.
func (f *fixture) start(t *testing.T, opts cache.Options) *controllerruntime.Cache {
	t.Helper()
	c, err := controllerruntime.New(f.cfg, opts)
	require.NoError(t, err)
	startCache(t, c)
	require.True(t, c.WaitForCacheSync(testutil.Context(t, time.Minute)))
	return c
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestContract(t *testing.T) {
	f := newFixture(t)
	ctx := testutil.Context(t, 2*time.Minute)
	c := f.start(t, cache.Options{})

	t.Run("should return an error if the object is not found", func(t *testing.T) {
		err := c.Get(ctx, types.NamespacedName{Namespace: f.ns1, Name: "nope"}, &corev1.Pod{})
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	})
	t.Run("should be able to get objects that haven't been watched previously", func(t *testing.T) {
		var svc corev1.Service
		err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "kubernetes"}, &svc)
		require.NoError(t, err)
		assert.Equal(t, "kubernetes", svc.Name)
		assert.Equal(t, "Service", svc.Kind, "GVK populated")
	})
	t.Run("cluster-scoped objects ignore the namespace of the key", func(t *testing.T) {
		var role rbacv1.ClusterRole
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "ignored", Name: f.role}, &role))
		assert.Equal(t, f.role, role.Name)
	})
	t.Run("should deep copy the object unless told otherwise", func(t *testing.T) {
		key := types.NamespacedName{Namespace: f.ns1, Name: "p0"}
		var p1, p2 corev1.Pod
		require.NoError(t, c.Get(ctx, key, &p1))
		p1.Labels["changed"] = "yes"
		require.NoError(t, c.Get(ctx, key, &p2))
		assert.NotContains(t, p2.Labels, "changed", "the cache is not changed through a copy")
	})
	t.Run("should not deep copy the object if UnsafeDisableDeepCopy is enabled", func(t *testing.T) {
		key := types.NamespacedName{Namespace: f.ns1, Name: "p1"}
		var p1, p2 corev1.Pod
		require.NoError(t, c.Get(ctx, key, &p1, client.UnsafeDisableDeepCopy))
		require.NoError(t, c.Get(ctx, key, &p2, client.UnsafeDisableDeepCopy))
		assert.Equal(t, fmt.Sprintf("%p", p1.Labels), fmt.Sprintf("%p", p2.Labels), "both share the cached object's maps")
		var list corev1.PodList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(f.ns1), client.UnsafeDisableDeepCopy))
		require.NotEmpty(t, list.Items)
	})
	t.Run("should be able to list objects by namespace", func(t *testing.T) {
		var list corev1.PodList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(f.ns2)))
		assert.ElementsMatch(t, []string{f.ns2 + "/p0", f.ns2 + "/p1", f.ns2 + "/p2"}, podNames(list.Items))
		for _, p := range list.Items {
			assert.Equal(t, "Pod", p.Kind, "should be able to list objects with GVK populated")
		}
	})
	t.Run("should support filtering by labels from multiple namespaces", func(t *testing.T) {
		var list corev1.PodList
		require.NoError(t, c.List(ctx, &list, client.MatchingLabels{"n": "1"}))
		assert.Subset(t, podNames(list.Items), []string{f.ns1 + "/p1", f.ns2 + "/p1"})
		for _, p := range list.Items {
			assert.Equal(t, "1", p.Labels["n"])
		}
	})
	t.Run("should return a limited result set matching the correct label", func(t *testing.T) {
		var list corev1.PodList
		require.NoError(t, c.List(ctx, &list, client.InNamespace(f.ns1), client.MatchingLabels{"test-label": "x"}, client.Limit(2)))
		assert.Len(t, list.Items, 2)
	})
	t.Run("should return an error if the continue list options is set", func(t *testing.T) {
		var list corev1.PodList
		assert.Error(t, c.List(ctx, &list, client.Continue("token")))
	})
	t.Run("field selectors need an index", func(t *testing.T) {
		var list corev1.PodList
		assert.Error(t, c.List(ctx, &list, client.MatchingFields{"spec.nodeName": "node-0"}))
	})
	t.Run("unstructured", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: f.ns1, Name: "p2"}, u))
		assert.Equal(t, "p2", u.GetName())
		assert.Equal(t, "Pod", u.GetKind())
		ul := &unstructured.UnstructuredList{}
		ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		require.NoError(t, c.List(ctx, ul, client.InNamespace(f.ns1), client.MatchingLabels{"n": "2"}))
		require.Len(t, ul.Items, 1)
		assert.Equal(t, "p2", ul.Items[0].GetName())
	})
	t.Run("metadata", func(t *testing.T) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: f.ns2, Name: "p0"}, m))
		assert.Equal(t, f.ns2, m.Labels["ns"])
		ml := &metav1.PartialObjectMetadataList{}
		ml.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		require.NoError(t, c.List(ctx, ml, client.InNamespace(f.ns2)))
		assert.Len(t, ml.Items, 3)
		assert.Equal(t, "Pod", ml.Items[0].Kind)
	})
	t.Run("should be able to get informer for the object", func(t *testing.T) {
		inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
		require.NoError(t, err)
		assert.True(t, inf.HasSynced())
		infKind, err := c.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		require.NoError(t, err)
		assert.Same(t, inf, infKind, "should be able to get an informer by group/version/kind")
	})
	t.Run("should allow for get informer to be cancelled", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		// A type not requested yet cannot sync with an ended context.
		_, err := c.GetInformer(cancelled, &corev1.LimitRange{})
		assert.Error(t, err)
	})
	t.Run("should error when starting the cache a second time", func(t *testing.T) {
		assert.Error(t, c.Start(context.Background()))
	})
}

func TestContractIndexField(t *testing.T) {
	f := newFixture(t)
	ctx := testutil.Context(t, time.Minute)
	c, err := controllerruntime.New(f.cfg, cache.Options{})
	require.NoError(t, err)
	require.NoError(t, c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}))
	require.NoError(t, c.IndexField(ctx, &corev1.Pod{}, "labels.n", func(o client.Object) []string {
		return []string{o.GetLabels()["n"]}
	}))
	assert.Error(t, c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", func(client.Object) []string { return nil }), "indexed twice")
	var list corev1.PodList
	assert.ErrorAs(t, c.List(ctx, &list), new(*cache.ErrCacheNotStarted), "reads before Start")

	ctxStart, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctxStart) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	require.True(t, c.WaitForCacheSync(ctx))

	t.Run("should be able to index an object field then retrieve objects by that field", func(t *testing.T) {
		require.NoError(t, c.List(ctx, &list, client.InNamespace(f.ns1), client.MatchingFields{"spec.nodeName": "node-0"}))
		assert.ElementsMatch(t, []string{f.ns1 + "/p0", f.ns1 + "/p2"}, podNames(list.Items))
	})
	t.Run("should be able to matching fields with multiple indexes", func(t *testing.T) {
		require.NoError(t, c.List(ctx, &list, client.MatchingFieldsSelector{Selector: fields.AndSelectors(
			fields.OneTermEqualSelector("spec.nodeName", "node-0"), fields.OneTermEqualSelector("labels.n", "2"))}))
		assert.Subset(t, podNames(list.Items), []string{f.ns1 + "/p2", f.ns2 + "/p2"})
		for _, p := range list.Items {
			assert.Equal(t, "node-0", p.Spec.NodeName)
			assert.Equal(t, "2", p.Labels["n"])
		}
	})
	t.Run("non-exact field matches are refused", func(t *testing.T) {
		err := c.List(ctx, &list, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.nodeName", "node-0")})
		assert.ErrorContains(t, err, "non-exact")
	})
}

func TestContractRestrictedCache(t *testing.T) {
	f := newFixture(t)
	ctx := testutil.Context(t, time.Minute)
	var stripped atomic.Int32 // transforms run on each informer's goroutine
	c := f.start(t, cache.Options{
		DefaultNamespaces: map[string]cache.Config{f.ns1: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Label: labels.SelectorFromSet(labels.Set{"test-label": "x"}),
				Namespaces: map[string]cache.Config{
					f.ns1: {},
					f.ns2: {LabelSelector: labels.SelectorFromSet(labels.Set{"n": "0"})},
				},
				Transform: func(o any) (any, error) {
					stripped.Add(1)
					o.(*corev1.Pod).SetManagedFields(nil)
					return o, nil
				},
			},
		},
	})

	t.Run("should be able to restrict cache to a namespace", func(t *testing.T) {
		var list corev1.ServiceAccountList
		require.NoError(t, c.List(ctx, &list))
		for _, sa := range list.Items {
			assert.Equal(t, f.ns1, sa.Namespace)
		}
	})
	t.Run("should return an error if getting object in unwatched namespace", func(t *testing.T) {
		err := c.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "x"}, &corev1.ConfigMap{})
		assert.Error(t, err)
		assert.False(t, apierrors.IsNotFound(err), "an error that is not NotFound: %v", err)
	})
	t.Run("per-namespace selectors of ByObject", func(t *testing.T) {
		var list corev1.PodList
		require.NoError(t, c.List(ctx, &list))
		assert.ElementsMatch(t, []string{f.ns1 + "/p0", f.ns1 + "/p1", f.ns1 + "/p2", f.ns2 + "/p0"}, podNames(list.Items))
	})
	t.Run("should strip managed fields from an object", func(t *testing.T) {
		var p corev1.Pod
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: f.ns1, Name: "p0"}, &p))
		assert.Empty(t, p.ManagedFields)
		assert.Positive(t, stripped.Load())
	})
	t.Run("test multinamespaced cache for cluster scoped resources", func(t *testing.T) {
		var role rbacv1.ClusterRole
		require.NoError(t, c.Get(ctx, types.NamespacedName{Name: f.role}, &role))
	})
	t.Run("an informer over several namespaces", func(t *testing.T) {
		inf, err := c.GetInformer(ctx, &corev1.Pod{})
		require.NoError(t, err)
		assert.True(t, inf.HasSynced())
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		require.NoError(t, err)
		testutil.EventuallyWithin(t, time.Minute, reg.HasSynced, "handler synced")
		select {
		case <-reg.HasSyncedChecker().Done():
		case <-ctx.Done():
			t.Fatal("checker not done")
		}
		require.NoError(t, inf.RemoveEventHandler(reg))
	})
}
