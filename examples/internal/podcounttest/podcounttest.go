// Package podcounttest is the test of every version of the podcount
// controller: one scenario, so that all must behave alike.
package podcounttest

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/examples/internal/podcount"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// Check runs a version of the controller, run, on a new namespace of the
// shared test control plane, and checks the ConfigMap it keeps there as
// pods come and go and as the ConfigMap is deleted and changed behind its
// back.
func Check(t *testing.T, run func(ctx context.Context, cfg *rest.Config, out io.Writer, o podcount.Options) error) {
	env := testenv.Shared(t)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	ns := testutil.Namespace(t, cs)
	ctx := exampletest.Context(t)

	p := exampletest.Start(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, env.Config(), out, podcount.Options{Namespace: ns, Workers: 2})
	})
	p.EventuallyPrints("counting pods")
	// says returns whether the ConfigMap has count and pods.
	says := func(count, pods string) func() bool {
		return func() bool {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, podcount.ConfigMapName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false
			}
			require.NoError(t, err)
			return cm.Data["count"] == count && cm.Data["pods"] == pods
		}
	}
	createPod := func(name string) {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	createPod("b")
	createPod("a")
	p.Eventually(says("2", "a,b"), "two pods counted")

	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}))
	p.Eventually(says("1", "b"), "a delete counted")

	require.NoError(t, cs.CoreV1().ConfigMaps(ns).Delete(ctx, podcount.ConfigMapName, metav1.DeleteOptions{}))
	p.Eventually(says("1", "b"), "the ConfigMap is created again")

	_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, podcount.ConfigMapName, types.MergePatchType, []byte(`{"data":{"count":"42"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	p.Eventually(says("1", "b"), "a change to the ConfigMap is undone")

	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{}))
	p.Eventually(says("0", ""), "no pods left")
}
