package testenv_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// deadline bounds every poll in these tests.
const deadline = time.Minute

func TestCreateAndListPod(t *testing.T) {
	env := testenv.Shared(t)
	ctx := t.Context()
	cs := clientset(t, env)
	ns := createNamespace(t, cs)

	_, err := cs.CoreV1().Pods(ns).Create(ctx, newPod("web-0"), metav1.CreateOptions{})
	require.NoError(t, err, "creating a pod")

	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "listing pods")
	require.Len(t, pods.Items, 1)
	assert.Equal(t, "web-0", pods.Items[0].Name)
}

// ServerCPU counts the CPU the server spends on requests.
func TestServerCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ServerCPU reads /proc")
	}
	env := testenv.Shared(t)
	cs := clientset(t, env)
	before, err := env.ServerCPU()
	require.NoError(t, err)
	assert.Positive(t, before, "starting the server took CPU")
	// Each request costs the server well under a tick (10 ms); poll until
	// enough of them added one.
	// Eventually calls the condition on a goroutine of its own, where
	// require must not stop the test: assert, and give up the attempt.
	require.Eventually(t, func() bool {
		for range 50 {
			_, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
			if !assert.NoError(t, err) {
				return false
			}
		}
		after, err := env.ServerCPU()
		return assert.NoError(t, err) && after > before
	}, deadline, time.Millisecond, "the server's CPU time grows with requests")
}

// CollectAPIServerGarbage runs a collection in kube-apiserver: its last
// collection, as its metrics report it, is not older than the call.
func TestCollectAPIServerGarbage(t *testing.T) {
	env := testenv.Shared(t)
	ctx := t.Context()
	cs := clientset(t, env)
	lastGC := func() (time.Time, error) {
		metrics, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return time.Time{}, err
		}
		for line := range strings.Lines(string(metrics)) {
			if v, ok := strings.CutPrefix(line, "go_memstats_last_gc_time_seconds "); ok {
				secs, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return time.Unix(0, int64(secs*1e9)), err
			}
		}
		return time.Time{}, errors.New("kube-apiserver reports no go_memstats_last_gc_time_seconds")
	}
	// A collection of the server's own may land between taking the time
	// and reading the metrics: then take them again.
	var before time.Time
	require.Eventually(t, func() bool {
		before = time.Now()
		last, err := lastGC()
		return assert.NoError(t, err) && last.Before(before)
	}, deadline, 10*time.Millisecond, "kube-apiserver collects all the time")
	require.NoError(t, env.CollectAPIServerGarbage(ctx))
	last, err := lastGC()
	require.NoError(t, err)
	// The metric is a float of seconds: about a microsecond of precision.
	assert.False(t, last.Before(before.Add(-time.Microsecond)), "kube-apiserver's last collection is older than the call")
}

func TestRestrictedUser(t *testing.T) {
	env := testenv.Shared(t)
	ctx := t.Context()
	admin := clientset(t, env)
	ns := createNamespace(t, admin)
	restricted, err := kubernetes.NewForConfig(env.RestrictedConfig())
	require.NoError(t, err)

	_, err = restricted.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "want 403 Forbidden, got %v", err)

	// Once granted, the permission takes effect as soon as the RBAC
	// authorizer's informers have seen the binding.
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating a role")
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: testenv.RestrictedUser}},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating a role binding")
	poll(t, func(ctx context.Context) error {
		_, err := restricted.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err
	})
}

func TestWatchListServedByDefault(t *testing.T) {
	env := testenv.Shared(t)
	ctx := t.Context()
	cs := clientset(t, env)
	ns := createNamespace(t, cs)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap("cm"), metav1.CreateOptions{})
	require.NoError(t, err)

	sendInitialEvents := true
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    &sendInitialEvents,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	require.NoError(t, err, "a watch-list request must be accepted without feature gates")
	defer w.Stop()

	ev := next(t, w)
	require.Equal(t, watch.Added, ev.Type, "first event: %v", ev.Object)
	assert.Equal(t, "cm", ev.Object.(*corev1.ConfigMap).Name)
	ev = next(t, w)
	require.Equal(t, watch.Bookmark, ev.Type, "second event: %v", ev.Object)
	assert.Equal(t, "true", ev.Object.(*corev1.ConfigMap).Annotations[metav1.InitialEventsAnnotationKey])
}

// After a graceful restart or a crash (kill -9) of kube-apiserver, the
// same client works again: its dead connections are replaced. After a
// crash, a watch from the last version seen before it is gone.
func TestRestartAPIServer(t *testing.T) {
	env := testenv.New(t, testenv.Options{})
	ctx := testContext(t)
	cs := clientset(t, env)
	ns := createNamespace(t, cs)

	for _, tc := range []struct {
		name    string
		restart func(context.Context) error
		gone    bool // a watch from the last version before is gone
	}{
		{"RestartAPIServer", env.RestartAPIServer, false},
		{"CrashAPIServer", env.CrashAPIServer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "before-" + strings.ToLower(tc.name)
			cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap(name), metav1.CreateOptions{})
			require.NoError(t, err)
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
			require.NoError(t, err)
			defer w.Stop()
			start := time.Now()
			require.NoError(t, tc.restart(ctx))
			t.Logf("%s took %v", tc.name, time.Since(start))
			for range w.ResultChan() { // the watch ends with the server
			}
			if tc.gone {
				err := watchFrom(t, cs.CoreV1().ConfigMaps(ns).Watch, cm.ResourceVersion)
				assert.True(t, isGone(err), "want 410 Gone, got %v", err)
			}

			name = "after-" + strings.ToLower(tc.name)
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap(name), metav1.CreateOptions{})
			require.NoError(t, err, "creating after the restart")
			cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			require.NoError(t, err, "listing after the restart")
			assert.True(t, hasName(cms.Items, name))
		})
	}
}

func TestRestartEtcd(t *testing.T) {
	env := testenv.New(t, testenv.Options{})
	ctx := testContext(t)
	cs := clientset(t, env)
	ns := createNamespace(t, cs)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap("before"), metav1.CreateOptions{})
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, env.RestartEtcd(ctx))
	t.Logf("RestartEtcd took %v", time.Since(start))

	start = time.Now()
	poll(t, func(ctx context.Context) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap("after"), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // an earlier attempt succeeded late
			return nil
		}
		return err
	})
	t.Logf("first write after RestartEtcd succeeded after %v", time.Since(start))
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{})
	require.NoError(t, err, "data written before the restart")
	assert.Equal(t, "before", cm.Name)
}

func TestCompact(t *testing.T) {
	env := testenv.New(t, testenv.Options{UncachedResources: []string{"configmaps"}})
	ctx := testContext(t)
	cs := clientset(t, env)
	ns := createNamespace(t, cs)

	// Old resource versions of an uncached resource (configmaps) and of a
	// cached one (pods), both followed by updates.
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap("cm"), metav1.CreateOptions{})
	require.NoError(t, err)
	cmRV := cm.ResourceVersion
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, newPod("pod"), metav1.CreateOptions{})
	require.NoError(t, err)
	podRV := pod.ResourceVersion
	for i := range 3 {
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		pod.Labels = map[string]string{"i": fmt.Sprint(i)}
		pod, err = cs.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}

	require.NoError(t, env.Compact(ctx))

	t.Run("uncached watch from an old version is gone", func(t *testing.T) {
		err := watchFrom(t, cs.CoreV1().ConfigMaps(ns).Watch, cmRV)
		assert.True(t, isGone(err), "want 410 Gone, got %v", err)
	})
	t.Run("uncached watch from the current version works", func(t *testing.T) {
		// The pod updates came after the configmap's, so its own version
		// may precede the compacted revision; a quorum list returns the
		// store's current one.
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		require.NoError(t, err)
		defer w.Stop()
		cm.Data = map[string]string{"after": "compaction"}
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
		ev := next(t, w)
		require.Equal(t, watch.Modified, ev.Type, "event: %v", ev.Object)
		assert.Equal(t, "compaction", ev.Object.(*corev1.ConfigMap).Data["after"])
	})
	t.Run("cached watch from an old version is still served", func(t *testing.T) {
		assert.NoError(t, watchFrom(t, cs.CoreV1().Pods(ns).Watch, podRV))
	})
	t.Run("cached watch from an old version is gone after an apiserver restart", func(t *testing.T) {
		require.NoError(t, env.RestartAPIServer(ctx))
		err := watchFrom(t, cs.CoreV1().Pods(ns).Watch, podRV)
		assert.True(t, isGone(err), "want 410 Gone, got %v", err)
	})
}

// watchFrom watches from resourceVersion and returns the error the server
// reports, either when the request is made or as the first event (as it
// does for a version that is too old), or nil if the watch delivers an
// event.
func watchFrom(t *testing.T, watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error), resourceVersion string) error {
	t.Helper()
	w, err := watchFunc(t.Context(), metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	ev := next(t, w)
	if ev.Type == watch.Error {
		return apierrors.FromObject(ev.Object)
	}
	return nil
}

func isGone(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// next returns the next event of w, failing the test after deadline.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(deadline):
		require.FailNow(t, "no watch event", "after %v", deadline)
		return watch.Event{}
	}
}

// poll calls f until it succeeds, failing the test with f's last error
// after deadline.
func poll(t *testing.T, f func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			require.NoError(t, err, "still failing after %v", deadline)
		case <-tick.C:
		}
	}
}

// testContext returns a context whose logger writes to the test's log.
func testContext(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}

func clientset(t *testing.T, env *testenv.Env) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config())
	require.NoError(t, err)
	return cs
}

// createNamespace creates a namespace named after the test.
func createNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "creating a namespace")
	return ns.Name
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

func newConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
}

func hasName(cms []corev1.ConfigMap, name string) bool {
	for _, cm := range cms {
		if cm.Name == name {
			return true
		}
	}
	return false
}

// FeatureGates reach kube-apiserver: with ShardedListAndWatch on, a list
// with a shard selector echoes it in shardInfo; the shared control plane,
// with the gate at its default (off), ignores the selector. A server
// without the gate (before 1.36) starts without it, says so, and ignores
// the selector too.
func TestFeatureGates(t *testing.T) {
	const gate = "ShardedListAndWatch"
	sel := "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("gate-%v", on), func(t *testing.T) {
			env := testenv.Shared(t)
			if on {
				env = testenv.New(t, testenv.Options{FeatureGates: map[string]bool{gate: true}})
			}
			server := env.Server()
			hasGate := server.Version.AtLeast(version.MajorMinor(1, 36))
			require.Equal(t, hasGate, server.HasGate(gate), "kube-apiserver %s", server.Version)
			require.Equal(t, on && hasGate, env.FeatureEnabled(gate), "kube-apiserver %s", server.Version)
			cs := clientset(t, env)
			ns := createNamespace(t, cs)
			list, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{ShardSelector: sel})
			require.NoError(t, err)
			if env.FeatureEnabled(gate) {
				require.NotNil(t, list.ShardInfo)
				assert.Equal(t, sel, list.ShardInfo.Selector)
			} else {
				assert.Nil(t, list.ShardInfo)
			}
		})
	}
}

// Env.Server tells the version of the kube-apiserver that runs, the one
// INFORMERS_KUBE_VERSION selects (the newest by default), and the gates it
// offers with their defaults, which /version and the server's behaviour
// confirm.
func TestServer(t *testing.T) {
	env := testenv.Shared(t)
	server := env.Server()
	versions, err := testenv.KubeVersions()
	require.NoError(t, err)
	want := cmp.Or(strings.TrimPrefix(os.Getenv(testenv.EnvKubeVersion), "v"), versions[len(versions)-1])
	require.NotNil(t, server.Version)
	assert.Equal(t, want, fmt.Sprintf("%d.%d", server.Version.Major(), server.Version.Minor()))

	info, err := clientset(t, env).Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(server.Version.Major()), info.Major, "/version: %+v", info)
	assert.Equal(t, fmt.Sprint(server.Version.Minor()), strings.TrimSuffix(info.Minor, "+"), "/version: %+v", info)

	// Gates every supported server has: watch-list streaming, beta and on
	// since 1.34 (TestWatchListServedByDefault), and CBOR, alpha and off.
	assert.Equal(t, testenv.Gate{Stage: "BETA", Default: true}, server.Gates["WatchList"])
	assert.Equal(t, testenv.Gate{Stage: "ALPHA", Default: false}, server.Gates["CBORServingAndStorage"])
	assert.True(t, env.FeatureEnabled("WatchList"))
	assert.False(t, env.FeatureEnabled("CBORServingAndStorage"))
	assert.False(t, server.HasGate("NoSuchGate"))
	assert.False(t, env.FeatureEnabled("NoSuchGate"))
}
