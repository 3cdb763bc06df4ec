package informers_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
)

// A reconcile of a ReplicaSet-like owner creates a pod and records it; the
// next reconcile of the owner waits until the cache shows the pod, and so
// does not create a second one.
func ExampleTracker() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	pods, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := informers.WaitForSync(ctx, pods); err != nil {
		fmt.Println(err)
		return
	}
	tracker := informers.NewTracker(pods, 0)

	owner := types.NamespacedName{Namespace: "default", Name: "web"}
	reconcile := func() error {
		if err := tracker.Wait(ctx, owner); err != nil {
			return err // requeue
		}
		if _, err := pods.Lister().Namespace("default").Get("web-1"); err == nil {
			fmt.Println("web-1 exists")
			return nil
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}}
		rv, err := src.Add(pod) // a clientset's Create returns the object with its version
		if err != nil {
			tracker.WriteFailed(owner, err)
			return err
		}
		pod.ResourceVersion = rv
		if err := tracker.Wrote(owner, pod); err != nil {
			return err
		}
		fmt.Println("created web-1")
		return nil
	}
	for range 2 {
		if err := reconcile(); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// created web-1
	// web-1 exists
}
