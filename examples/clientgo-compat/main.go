// Podcount keeps, in every namespace that has pods, a ConfigMap named
// pod-count that says how many pods the namespace has, and which.
//
// This is ../migration/clientgo, the version written against client-go's
// informers, run on github.com/kubetyped/informers without rewriting it:
// its informers are clientgo.SharedIndexInformer views of ours, and its
// handlers, generated listers and cache.WaitForCacheSync are unchanged.
// diff -u ../migration/clientgo/main.go main.go shows the few lines that
// say where the informers come from. The work queue, the workers and the
// reconcile, which do not depend on the informers, are in
// examples/internal/podcount.
//
//	go run ./examples/clientgo-compat -namespace team-a
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
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
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
	// All that changes: the informers are views of ours. The
	// ConfigMap filter is per informer, so one factory serves both.
	pods := clientgo.SharedIndexInformer(informers.Informer[*corev1.Pod](factory))
	configMaps := clientgo.SharedIndexInformer(informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{
		FieldSelector: "metadata.name=" + podcount.ConfigMapName,
	}))
	podLister, cmLister := corelisters.NewPodLister(pods.GetIndexer()), corelisters.NewConfigMapLister(configMaps.GetIndexer())
	c := podcount.New(clientset, out, podcount.Cache{
		Pods: func(ns string) ([]*corev1.Pod, error) { return podLister.Pods(ns).List(labels.Everything()) },
		ConfigMap: func(ns string) (*corev1.ConfigMap, error) {
			return cmLister.ConfigMaps(ns).Get(podcount.ConfigMapName)
		},
	})

	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
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
	_, err = configMaps.AddEventHandler(cache.ResourceEventHandlerFuncs{
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

	factory.Start(ctx)
	defer cluster.Shutdown(factory) // waits for the informers, once ctx has ended
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, configMaps.HasSynced) {
		// informers.WaitForSync(ctx, factory) would say why (403? no CRD?).
		return fmt.Errorf("caches not synced: %w", informers.WaitForSync(ctx, factory))
	}
	return c.Run(ctx, o)
}
