// Package demo makes something happen on a cluster where nothing else
// does, such as the local control plane, so that the examples have events
// to show. It is not part of any example: it plays the user with kubectl.
package demo

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Label marks the namespaces a demo creates; its value says which demo.
const Label = "example.com/demo"

// Pods creates a namespace, then every interval creates or deletes a pod
// there, keeping between one and five, until ctx ends. It then deletes its
// pods and the namespace, and returns. It reports what it does on logger.
func Pods(ctx context.Context, cs kubernetes.Interface, logger *log.Logger, every time.Duration) error {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "demo-", Labels: map[string]string{Label: "pods"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	logger.Printf("demo: creating and deleting pods in namespace %s", ns.Name)
	defer cleanUp(ctx, cs, logger, ns.Name)

	pods := cs.CoreV1().Pods(ns.Name)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 1; ; n++ {
		list, err := pods.List(ctx, metav1.ListOptions{})
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			// reported below
		case len(list.Items) <= 1 || len(list.Items) < 5 && rand.IntN(2) == 0:
			// On the local control plane the pod stays Pending: there is
			// no scheduler and no node. A real cluster runs it.
			name := fmt.Sprintf("web-%d", n)
			logger.Printf("demo: creating pod %s/%s", ns.Name, name)
			_, err = pods.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "busybox:1.37", Command: []string{"sleep", "3600"},
				}}},
			}, metav1.CreateOptions{})
		default:
			victim := list.Items[rand.IntN(len(list.Items))].Name
			logger.Printf("demo: deleting pod %s/%s", ns.Name, victim)
			err = pods.Delete(ctx, victim, immediately)
		}
		if err != nil && ctx.Err() == nil {
			logger.Printf("demo: %v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// immediately deletes without a grace period. On the local control plane
// pods go at once anyway: they are on no node, so no kubelet stops them.
var immediately = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

// cleanUp deletes the demo's pods, then its namespace. On the local control
// plane, which runs no namespace controller, the namespace itself stays
// Terminating; the pods are gone because they are deleted here first.
func cleanUp(ctx context.Context, cs kubernetes.Interface, logger *log.Logger, ns string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, immediately, metav1.ListOptions{})
	if err == nil {
		err = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	if err != nil {
		logger.Printf("demo: cleaning up namespace %s: %v", ns, err)
		return
	}
	logger.Printf("demo: deleted namespace %s and its pods", ns)
}
