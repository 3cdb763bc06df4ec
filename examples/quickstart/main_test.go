package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers/examples/internal/demo"
	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The printed counts follow the pods on the server.
func TestCounts(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ns := cluster.Namespace(t)
	ctx := exampletest.Context(t)

	p := exampletest.Run(t, run, cluster.Config, options{})
	p.EventuallyPrints("watching pods")

	var names []string
	for range 3 {
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		names = append(names, pod.Name)
	}
	p.Eventually(func() bool { return printed(p, ns) == 3 && onServer(t, cs, ns) == 3 }, "3 pods printed")

	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, names[0], metav1.DeleteOptions{}))
	p.Eventually(func() bool { return printed(p, ns) == 2 && onServer(t, cs, ns) == 2 }, "2 pods printed")

	require.NoError(t, cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	p.Eventually(func() bool { return printed(p, ns) == 0 && onServer(t, cs, ns) == 0 }, "0 pods printed")
}

// The demo creates and deletes pods in a namespace of its own, and deletes
// them when it stops.
func TestDemo(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ctx := exampletest.Context(t)

	p := exampletest.Run(t, run, cluster.Config, options{Demo: true, DemoEvery: 100 * time.Millisecond})
	var ns string
	p.Eventually(func() bool {
		list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: demo.Label + "=pods"})
		require.NoError(t, err)
		for _, n := range list.Items {
			if n.DeletionTimestamp == nil {
				ns = n.Name
			}
		}
		return ns != ""
	}, "the demo's namespace exists")
	p.Eventually(func() bool { return onServer(t, cs, ns) >= 2 }, "the demo created pods")
	// The count keeps changing; the printed one catches up within 500ms.
	p.Eventually(func() bool { return printed(p, ns) == onServer(t, cs, ns) }, "the printed count matches the server")

	p.Stop()
	assert.Zero(t, onServer(t, cs, ns), "the demo's pods are deleted")
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, n.DeletionTimestamp, "the demo's namespace is being deleted")
}

// printed returns the last count printed for namespace ns, or -1.
func printed(p *exampletest.Program, ns string) int {
	m := regexp.MustCompile(regexp.QuoteMeta(ns)+`=(\d+)`).FindAllStringSubmatch(p.Output(), -1)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// onServer returns the number of pods in namespace ns.
func onServer(t *testing.T, cs kubernetes.Interface, ns string) int {
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return len(list.Items)
}

// With -metrics-addr the quickstart serves Prometheus metrics, whose
// objects gauge counts the cached pods, and a readiness check that passes
// once the cache has synced.
func TestMetricsEndpoint(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ns := cluster.Namespace(t)
	ctx := exampletest.Context(t)
	_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	p := exampletest.Run(t, run, cluster.Config, options{MetricsAddr: "127.0.0.1:0"})
	var base string
	p.Eventually(func() bool {
		m := regexp.MustCompile(`serving (http://\S+)/metrics`).FindStringSubmatch(p.Output())
		if m != nil {
			base = m[1]
		}
		return base != "" && strings.Contains(p.Output(), "watching pods")
	}, "serving and synced")

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	p.Eventually(func() bool {
		_, body := get("/metrics")
		m := regexp.MustCompile(`(?m)^informer_objects\{[^}]*resource="pods"[^}]*\} (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		return n == onServerAll(t, cs)
	}, "informer_objects counts the cached pods")
}

// onServerAll returns the number of pods in all namespaces.
func onServerAll(t *testing.T, cs kubernetes.Interface) int {
	list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return len(list.Items)
}
