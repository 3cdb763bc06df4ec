// Podcount keeps, in every namespace that has pods, a ConfigMap named
// pod-count that says how many pods the namespace has, and which.
//
// This is ../migration/clientgo, the version written against client-go's
// informers, run on github.com/kubetyped/informers without rewriting it:
// its informers are clientgo.SharedIndexInformer views of ours, and its
// handlers, generated listers and cache.WaitForCacheSync are unchanged.
// diff -u ../migration/clientgo/main.go main.go shows the few lines that
// say where the informers come from.
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
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
	"github.com/kubetyped/informers/examples/internal/cluster"
	"github.com/kubetyped/informers/examples/internal/demo"
)

const configMapName = "pod-count"

type options struct {
	Namespace string // "" for all
	Workers   int
	Demo      bool // create and delete pods, see demo.Pods
}

func main() {
	var o options
	flag.StringVar(&o.Namespace, "namespace", "", "namespace to watch; all if empty")
	flag.IntVar(&o.Workers, "workers", 2, "number of namespaces reconciled at once")
	flag.BoolVar(&o.Demo, "demo", false, "create and delete pods in a new namespace (always on without KUBECONFIG)")
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	flag.Parse()
	o.Demo = o.Demo || cluster.Local()
	log.SetFlags(0)
	log.SetPrefix("podcount: ")

	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

type controller struct {
	clientset  kubernetes.Interface
	pods       corelisters.PodLister
	configMaps corelisters.ConfigMapLister
	queue      workqueue.TypedRateLimitingInterface[string] // namespaces
	log        *log.Logger
}

func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactoryWith(clientset, informers.FactoryOptions{Namespace: o.Namespace})
	// All that changes: the informers are views of ours. The
	// ConfigMap filter is per informer, so one factory serves both.
	pods := clientgo.SharedIndexInformer(informers.Informer[*corev1.Pod](factory))
	configMaps := clientgo.SharedIndexInformer(informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{
		FieldSelector: "metadata.name=" + configMapName,
	}))
	c := &controller{
		clientset:  clientset,
		pods:       corelisters.NewPodLister(pods.GetIndexer()),
		configMaps: corelisters.NewConfigMapLister(configMaps.GetIndexer()),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podcount"}),
		log: log.New(out, "", log.Ltime),
	}

	_, err = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.queue.Add(obj.(*corev1.Pod).Namespace) },
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
			c.queue.Add(pod.Namespace)
		},
	})
	if err != nil {
		return err
	}
	// Someone changed or deleted our ConfigMap: put it right.
	_, err = configMaps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.queue.Add(obj.(*corev1.ConfigMap).Namespace) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			cm, ok := obj.(*corev1.ConfigMap)
			if !ok {
				utilruntime.HandleError(fmt.Errorf("unexpected object in a ConfigMap delete: %T", obj))
				return
			}
			c.queue.Add(cm.Namespace)
		},
	})
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory) // waits for the informers, once ctx has ended
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, configMaps.HasSynced) {
		// factory.WaitForSync(ctx) would say why (403? no CRD?).
		return fmt.Errorf("caches not synced: %w", factory.WaitForSync(ctx))
	}
	c.log.Printf("counting pods (Ctrl-C to stop)")

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Demo {
		wg.Go(func() {
			if err := demo.Pods(ctx, clientset, c.log, time.Second); err != nil {
				c.log.Printf("demo: %v", err)
			}
		})
	}
	for range o.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDownWithDrain()
	c.queue.ShutDown() // also stops the queue's delay timer goroutine
	return nil
}

func (c *controller) processNext(ctx context.Context) bool {
	ns, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(ns)
	if err := c.reconcile(ctx, ns); err != nil && ctx.Err() == nil {
		c.log.Printf("%s: %v", ns, err)
		c.queue.AddRateLimited(ns)
		return true
	}
	c.queue.Forget(ns)
	return true
}

// reconcile writes the pod count of namespace ns to its ConfigMap.
func (c *controller) reconcile(ctx context.Context, ns string) error {
	pods, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	want := map[string]string{"count": strconv.Itoa(len(names)), "pods": strings.Join(names, ",")}

	cm, err := c.configMaps.ConfigMaps(ns).Get(configMapName)
	switch {
	case apierrors.IsNotFound(err):
		if len(pods) == 0 {
			return nil
		}
		_, err = c.clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: configMapName},
			Data:       want,
		}, metav1.CreateOptions{})
	case err != nil:
		return err
	case !maps.Equal(cm.Data, want):
		cm = cm.DeepCopy() // objects from the cache are shared
		cm.Data = want
		_, err = c.clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	default:
		return nil
	}
	switch {
	case err == nil:
		c.log.Printf("%s/%s: %s pods", ns, configMapName, want["count"])
	case apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil // the namespace is going away
	}
	return err
}
