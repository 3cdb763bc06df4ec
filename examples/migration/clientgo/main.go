// Podcount keeps, in every namespace that has pods, a ConfigMap named
// pod-count that says how many pods the namespace has, and which.
//
// This is the version written with client-go's informers; the one in
// ../informers is the same controller written with
// github.com/kubetyped/informers. ../README.md compares them. The work
// queue, the workers and the reconcile, which do not depend on the
// informers, are in examples/internal/podcount.
//
//	go run ./examples/migration/clientgo -namespace team-a
//
// On a cluster you share, pass -namespace: it writes to every namespace it
// watches. Without $KUBECONFIG it runs against a local control plane (see
// examples/internal/cluster) and creates and deletes pods there; -demo
// does that on any cluster.
package main

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers/examples/internal/podcount"
)

func main() { podcount.Main(run) }

func run(ctx context.Context, cfg *rest.Config, out io.Writer, o podcount.Options) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(o.Namespace))
	pods := factory.Core().V1().Pods()
	// Selectors are per factory: the ConfigMap filter needs a factory of
	// its own, or the pods informer would select on metadata.name too.
	cmFactory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(o.Namespace),
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) {
			opts.FieldSelector = "metadata.name=" + podcount.ConfigMapName
		}))
	configMaps := cmFactory.Core().V1().ConfigMaps()
	podLister, cmLister := pods.Lister(), configMaps.Lister()
	c := podcount.New(clientset, out, podcount.Cache{
		Pods: func(ns string) ([]*corev1.Pod, error) { return podLister.Pods(ns).List(labels.Everything()) },
		ConfigMap: func(ns string) (*corev1.ConfigMap, error) {
			return cmLister.ConfigMaps(ns).Get(podcount.ConfigMapName)
		},
	})

	_, err = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.Enqueue(obj.(*corev1.Pod).Namespace) },
		DeleteFunc: func(obj any) {
			// A delete the informer missed comes as a tombstone.
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				utilruntime.HandleError(fmt.Errorf("unexpected object in a pod delete: %T", obj))
				return
			}
			c.Enqueue(pod.Namespace)
		},
	})
	if err != nil {
		return err
	}
	// Someone changed or deleted our ConfigMap: put it right.
	_, err = configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.Enqueue(obj.(*corev1.ConfigMap).Namespace) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				utilruntime.HandleError(fmt.Errorf("unexpected object in a ConfigMap delete: %T", obj))
				return
			}
			c.Enqueue(cm.Namespace)
		},
	})
	if err != nil {
		return err
	}

	factory.Start(ctx.Done())
	cmFactory.Start(ctx.Done())
	defer factory.Shutdown() // waits for the informers, once ctx has ended
	defer cmFactory.Shutdown()
	for _, f := range []informers.SharedInformerFactory{factory, cmFactory} {
		for typ, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return fmt.Errorf("cache of %v not synced", typ) // why (403? no CRD?) is only in the logs
			}
		}
	}
	return c.Run(ctx, o)
}
