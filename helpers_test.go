package informers_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestMain(m *testing.M) { testutil.MainNoLeaks(m) }

type podSource = informerstest.Source[*corev1.Pod, *corev1.PodList]

func newPodSource() *podSource {
	return informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
}

// fastBackoff makes informers retry at once in tests.
var fastBackoff = &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// newPodInformer returns an informer of src's pods, which retries at once.
func newPodInformer(t *testing.T, src *podSource) *informers.SharedInformer[*corev1.Pod] {
	t.Helper()
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	return inf
}

// runSynced runs an informer of src's pods until the test ends and waits
// for its sync.
func runSynced(t *testing.T, src *podSource) *informers.SharedInformer[*corev1.Pod] {
	t.Helper()
	inf := newPodInformer(t, src)
	testutil.Run(t, inf)
	waitSynced(t, inf)
	return inf
}

func mustAdd(t *testing.T, src *podSource, objs ...*corev1.Pod) {
	t.Helper()
	for _, o := range objs {
		_, err := src.Add(o)
		require.NoError(t, err)
	}
}

// startRecording runs an informer over lw with a recorder as its handler
// and waits until the recorder has received the initial state, so that a
// test counting its events counts no initial add as a later event.
func startRecording[L informers.List](t *testing.T, lw *informers.ListWatch[*corev1.Pod, L], opts informers.Options[*corev1.Pod]) (*informers.SharedInformer[*corev1.Pod], *recorder) {
	t.Helper()
	inf, err := informers.NewInformer(lw, opts)
	require.NoError(t, err)
	rec := &recorder{}
	reg, err := inf.AddHandler(rec)
	require.NoError(t, err)
	testutil.Run(t, inf)
	waitSynced(t, reg)
	return inf, rec
}

// waitSynced waits up to 10 seconds for s, an informer, a handler's
// registration or a factory, to sync.
func waitSynced(t *testing.T, s informers.Syncer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, informers.WaitForSync(ctx, s))
}

// waitOn returns the wait of informers.WaitForSync for s.
func waitOn(s informers.Syncer) func(context.Context) error {
	return func(ctx context.Context) error { return informers.WaitForSync(ctx, s) }
}

// waitFailsPromptly calls wait with a minute to spare and returns its
// error, which must come well before that deadline: a cause that retrying
// does not fix, such as a 403, ends the wait at once.
func waitFailsPromptly(t *testing.T, wait func(context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err := wait(ctx)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second, "returned promptly, not at the deadline")
	return err
}

// recorder is the handler of most tests here: it records events as
// strings such as "add a/x initial", "update a/x 3->4", "delete a/x unknown".
type recorder = testutil.Recorder[*corev1.Pod]

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// names returns the sorted namespace/name keys of objs.
func names(objs []*corev1.Pod) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = key(o)
	}
	slices.Sort(out)
	return out
}
