// Podcount keeps, in every namespace that has pods, a ConfigMap named
// pod-count that says how many pods the namespace has, and which.
//
// This is the version written with github.com/kubetyped/informers; the
// one in ../clientgo is the same controller written with client-go's
// informers. ../README.md compares them. The work queue, the workers and
// the reconcile, which do not depend on the informers, are in
// examples/internal/podcount.
//
//	go run ./examples/migration/informers -namespace team-a
//
// On a cluster you share, pass -namespace: it writes to every namespace it
// watches. Without $KUBECONFIG it runs against a local control plane (see
// examples/internal/cluster) and creates and deletes pods there; -demo
// does that on any cluster.
package main

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
	"github.com/kubetyped/informers/examples/internal/podcount"
)

func main() { podcount.Main(run) }

func run(ctx context.Context, cfg *rest.Config, out io.Writer, o podcount.Options) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactoryWith(clientset, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(o.Namespace)}})
	pods := informers.Informer[*corev1.Pod](factory)
	// Selectors are per informer: the pods informer above sees all pods.
	configMaps := informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{
		FieldSelector: "metadata.name=" + podcount.ConfigMapName,
	})
	podLister, cmLister := pods.Lister(), configMaps.Lister()
	c := podcount.New(clientset, out, podcount.Cache{
		// nil selects everything; reading the cache cannot fail.
		Pods: func(ns string) ([]*corev1.Pod, error) { return podLister.Namespace(ns).List(nil), nil },
		ConfigMap: func(ns string) (*corev1.ConfigMap, error) {
			return cmLister.Namespace(ns).Get(podcount.ConfigMapName)
		},
	})

	_, err = pods.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd: func(pod *corev1.Pod, _ bool) { c.Enqueue(pod.Namespace) },
		// Every delete, even one the informer missed, is a Deleted[T].
		OnDelete: func(d informers.Deleted[*corev1.Pod]) { c.Enqueue(d.Key.Namespace) },
	})
	if err != nil {
		return err
	}
	// Someone changed or deleted our ConfigMap: put it right.
	_, err = configMaps.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{
		OnUpdate: func(_, cm *corev1.ConfigMap) { c.Enqueue(cm.Namespace) },
		OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) { c.Enqueue(d.Key.Namespace) },
	})
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory) // factory.Shutdown(ctx): stops the informers and waits for their handlers
	if err := informers.WaitForSync(ctx, factory); err != nil {
		return err
	}
	return c.Run(ctx, o)
}
