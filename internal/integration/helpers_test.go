package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// createNumbered creates the config maps cm-from to cm-(to-1) in ns.
func createNumbered(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// labelNamespace sets the label key of namespace ns to value.
func labelNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	_, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// withFaults returns a configuration of env whose requests for resource
// go through net, which a test cuts and heals.
func withFaults(env *testenv.Env, resource string) (net *faults, cfg *rest.Config) {
	net = newFaults(resource)
	cfg = env.Config()
	cfg.WrapTransport = net.wrap
	return net, cfg
}

// trackConfigMaps returns f's informer of config maps, with a tracker as
// a handler, and the handler's registration.
func trackConfigMaps(t *testing.T, f *informers.Factory) (*informers.SharedInformer[*corev1.ConfigMap], *tracker[*corev1.ConfigMap], *informers.Registration[*corev1.ConfigMap]) {
	t.Helper()
	inf := informers.Informer[*corev1.ConfigMap](f)
	seen := newTracker[*corev1.ConfigMap]()
	reg, err := inf.AddHandler(seen)
	require.NoError(t, err)
	return inf, seen, reg
}

// trackThroughFaults starts a factory on namespace ns of env whose
// requests for config maps go through net, which the test cuts and heals,
// and returns its informer of config maps and the tracker handling it,
// once the tracker has been handed the initial state: the handler's
// registration, not the factory, since the factory waits for caches and
// initial adds may still be queued for the handler.
func trackThroughFaults(ctx context.Context, t *testing.T, env *testenv.Env, ns string) (net *faults, inf *informers.SharedInformer[*corev1.ConfigMap], seen *tracker[*corev1.ConfigMap]) {
	t.Helper()
	net, cfg := withFaults(env, "configmaps")
	f := informers.NewFactoryWith(clientset(t, cfg), informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	inf, seen, reg := trackConfigMaps(t, f)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, reg))
	return net, inf, seen
}

// fastBackoff makes informers retry quickly.
var fastBackoff = &wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: 1 << 20, Jitter: 0.5}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// sharedServer checks the test for leaks and returns the shared control
// plane, a clientset with all rights on it, a namespace of the test's own
// and a context that ends after timeout.
func sharedServer(t *testing.T, timeout time.Duration) (*testenv.Env, kubernetes.Interface, string, context.Context) {
	t.Helper()
	testutil.NoLeaks(t)
	return onServer(t, testenv.Shared(t), timeout)
}

// newServer is sharedServer on a control plane of the test's own, started
// with opts and stopped before the leak check.
func newServer(t *testing.T, opts testenv.Options, timeout time.Duration) (*testenv.Env, kubernetes.Interface, string, context.Context) {
	t.Helper()
	testutil.NoLeaks(t)
	return onServer(t, testenv.New(t, opts), timeout)
}

// onServer returns env with a clientset with all rights on it, a namespace
// of the test's own and a context that ends after timeout.
func onServer(t *testing.T, env *testenv.Env, timeout time.Duration) (*testenv.Env, kubernetes.Interface, string, context.Context) {
	t.Helper()
	admin := clientset(t, env.Config())
	return env, admin, testutil.Namespace(t, admin), testutil.Context(t, timeout)
}

// lastEvent is what a handler last saw of one object.
type lastEvent struct {
	uid     types.UID
	rv      string
	deleted bool
	unknown bool
}

// version is an object's identity and version: what a cache, a handler's
// view and the server are compared by.
type version struct {
	uid types.UID
	rv  string
}

// tracker is a handler that remembers, per object, its last event. It
// checks that the events of each object make sense in order: versions
// never go back, an object is added before it is updated or deleted, and
// deleted before it is added again.
type tracker[T informers.Object] struct {
	mu       sync.Mutex
	last     map[string]lastEvent
	events   int
	unknowns int
	problems []string
}

func newTracker[T informers.Object]() *tracker[T] {
	return &tracker[T]{last: map[string]lastEvent{}}
}

func keyOf(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// see records ev, the event of o of type what.
func (k *tracker[T]) see(o metav1.Object, what string, ev lastEvent) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events++
	if ev.unknown {
		k.unknowns++
	}
	key := keyOf(o)
	prev, ok := k.last[key]
	present := ok && !prev.deleted
	switch {
	case what == "add" && present:
		k.problem("%s added again (uid %s rv %s) without a delete of uid %s rv %s", key, ev.uid, ev.rv, prev.uid, prev.rv)
	case what != "add" && !present:
		k.problem("%s: %s (uid %s rv %s) of an object not added", key, what, ev.uid, ev.rv)
	case what != "add" && prev.uid != ev.uid:
		k.problem("%s: %s of uid %s, added as uid %s", key, what, ev.uid, prev.uid)
	case present && !ev.deleted && rvLess(ev.rv, prev.rv):
		k.problem("%s went back from %s to %s", key, prev.rv, ev.rv)
	}
	k.last[key] = ev
}

// problem records a problem; k.mu is held.
func (k *tracker[T]) problem(format string, args ...any) {
	if len(k.problems) < 20 {
		k.problems = append(k.problems, fmt.Sprintf(format, args...))
	}
}

func (k *tracker[T]) HandleAdd(o T, _ bool) {
	k.see(o, "add", lastEvent{uid: o.GetUID(), rv: o.GetResourceVersion()})
}

func (k *tracker[T]) HandleUpdate(_, o T) {
	k.see(o, "update", lastEvent{uid: o.GetUID(), rv: o.GetResourceVersion()})
}

func (k *tracker[T]) HandleDelete(d informers.Deleted[T]) {
	k.see(d.Object, "delete", lastEvent{uid: d.Object.GetUID(), rv: d.Object.GetResourceVersion(), deleted: true, unknown: d.FinalStateUnknown})
}

func (k *tracker[T]) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.events
}

// view returns the handler's events replayed: the objects it was told of
// and not told are gone, and the problems its events showed.
func (k *tracker[T]) view() (map[string]version, []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v := make(map[string]version, len(k.last))
	for key, ev := range k.last {
		if !ev.deleted {
			v[key] = version{ev.uid, ev.rv}
		}
	}
	return v, slices.Clone(k.problems)
}

// converged reports whether the handler's view equals the server's objects.
func (k *tracker[T]) converged(server []metav1.Object) (bool, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.problems) > 0 {
		return false, fmt.Sprint(k.problems)
	}
	want := map[string]string{}
	for _, o := range server {
		want[keyOf(o)] = o.GetResourceVersion()
	}
	for key, rv := range want {
		if got, ok := k.last[key]; !ok || got.deleted || got.rv != rv {
			return false, fmt.Sprintf("%s: server has rv %s, handler saw %+v", key, rv, got)
		}
	}
	for key, ev := range k.last {
		if _, ok := want[key]; !ok && !ev.deleted {
			return false, fmt.Sprintf("%s: gone from the server, handler saw no delete", key)
		}
	}
	return true, ""
}

func rvLess(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

// wire records the requests a client makes and the content types of the
// responses.
type wire struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []exchange
}

type exchange struct {
	method, url, contentType string
	status                   int
}

// recorded returns a configuration of env whose requests w records.
func recorded(env *testenv.Env) (*wire, *rest.Config) {
	w := &wire{}
	cfg := env.Config()
	cfg.WrapTransport = w.wrap
	return w, cfg
}

func (w *wire) wrap(rt http.RoundTripper) http.RoundTripper {
	w.next = rt
	return w
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	w.mu.Lock()
	w.seen = append(w.seen, exchange{method: req.Method, url: req.URL.String(), contentType: resp.Header.Get("Content-Type"), status: resp.StatusCode})
	w.mu.Unlock()
	return resp, nil
}

func (w *wire) exchanges() []exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]exchange(nil), w.seen...)
}
