package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var (
	labels   = map[string]string{"app": "web"}
	template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
)

// controlledBy is an owner reference to obj as its controller.
func controlledBy(obj metav1.Object, kind string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true)}}
}

// The report follows a Deployment's ReplicaSets and pods as they change.
// The test control plane runs no controllers: the test plays them.
func TestReport(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ns := cluster.Namespace(t)
	ctx := exampletest.Context(t)

	p := exampletest.Start(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, cluster.Config, out)
	})
	p.EventuallyPrints("synced")
	reported := func(want string) func() bool {
		return func() bool { return strings.Contains(p.Output(), fmt.Sprintf("deployment %s/web: %s", ns, want)) }
	}

	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Eventually(reported("0 replicasets, 0 pods, 0 running"), "the new deployment")

	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", OwnerReferences: controlledBy(d, "Deployment")},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Eventually(reported("1 replicasets, 0 pods, 0 running"), "its replicaset")

	var pods []*corev1.Pod
	for i := range 2 {
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-1-%d", i), Labels: labels, OwnerReferences: controlledBy(rs, "ReplicaSet")},
			Spec:       template.Spec,
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		pods = append(pods, pod)
	}
	p.Eventually(reported("1 replicasets, 2 pods, 0 running"), "its pods")
	annotated, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1 replicasets, 2 pods, 0 running", annotated.Annotations[reportAnnotation], "the report is written into the Deployment")

	pods[0].Status.Phase = corev1.PodRunning
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pods[0], metav1.UpdateOptions{})
	require.NoError(t, err)
	p.Eventually(reported("1 replicasets, 2 pods, 1 running"), "a pod running")

	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, pods[1].Name, metav1.DeleteOptions{}))
	p.Eventually(reported("1 replicasets, 1 pods, 1 running"), "a pod deleted")

	// Each report is written once: a reconcile that follows the
	// controller's own write reads the Deployment with it.
	for _, report := range []string{"0 replicasets, 0 pods, 0 running", "1 replicasets, 1 pods, 1 running"} {
		assert.Equal(t, 1, strings.Count(p.Output(), fmt.Sprintf("deployment %s/web: %s", ns, report)), report)
	}

	require.NoError(t, cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}))
	p.EventuallyPrints(fmt.Sprintf("deployment %s/web: gone", ns))
}
