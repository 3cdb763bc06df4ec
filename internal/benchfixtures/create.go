package benchfixtures

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateAll calls create(i) for every i below count, 16 at a time, and
// returns the first error: how the benchmarks that use a real API server
// fill it.
func CreateAll(count int, create func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := create(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range count {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// CreateNamespace creates namespace ns.
func CreateNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return err
}

// CreatePods creates the pods of l through cs, as a ReplicaSet controller
// and a kubelet would: each pod is created without its status, which is
// then written through pods/status, so that the server records both in
// managedFields. A pod of namespace ns in l goes to namespace(ns), which
// CreatePods creates first.
func CreatePods(ctx context.Context, cs kubernetes.Interface, l *PodList, namespace func(string) string) error {
	var namespaces []string
	for i := range l.Len() {
		ns, _ := l.Key(i)
		if ns = namespace(ns); !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	for _, ns := range namespaces {
		if err := CreateNamespace(ctx, cs, ns); err != nil {
			return err
		}
	}
	return CreateAll(l.Len(), func(i int) error {
		p := l.Pod(i)
		p.Namespace = namespace(p.Namespace)
		return CreatePod(ctx, cs, p)
	})
}

// CreatePod creates p, a pod of a PodList, through cs as a ReplicaSet
// controller and a kubelet would: without its status, which is then
// written through pods/status.
func CreatePod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	status := p.Status
	p.ResourceVersion, p.UID, p.ManagedFields, p.Status = "", "", nil, corev1.PodStatus{}
	created, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = status
	_, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}
