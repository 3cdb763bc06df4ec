// Podcount keeps, in every namespace that has pods, a ConfigMap named
// pod-count that says how many pods the namespace has, and which.
//
// This is the version written with github.com/kubetyped/informers; the
// one in ../clientgo is the same controller written with client-go's
// informers. ../README.md compares them.
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
	"flag"
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
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
	pods       informers.Lister[*corev1.Pod]
	configMaps informers.Lister[*corev1.ConfigMap]
	queue      workqueue.TypedRateLimitingInterface[string] // namespaces
	log        *log.Logger
}

func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactoryWith(clientset, informers.FactoryOptions{Namespace: o.Namespace})
	pods := informers.Informer[*corev1.Pod](factory)
	// Selectors are per informer: the pods informer above sees all pods.
	configMaps := informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{
		FieldSelector: "metadata.name=" + configMapName,
	})
	c := &controller{
		clientset:  clientset,
		pods:       pods.Lister(),
		configMaps: configMaps.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podcount"}),
		log: log.New(out, "", log.Ltime),
	}

	_, err = pods.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd: func(pod *corev1.Pod, _ bool) { c.queue.Add(pod.Namespace) },
		// Every delete, even one the informer missed, is a Deleted[T].
		OnDelete: func(d informers.Deleted[*corev1.Pod]) { c.queue.Add(d.Key.Namespace) },
	})
	if err != nil {
		return err
	}
	// Someone changed or deleted our ConfigMap: put it right.
	_, err = configMaps.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{
		OnUpdate: func(_, cm *corev1.ConfigMap) { c.queue.Add(cm.Namespace) },
		OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) { c.queue.Add(d.Key.Namespace) },
	})
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer shutdown(factory)
	if err := factory.WaitForSync(ctx); err != nil {
		return err
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
	pods := c.pods.Namespace(ns).List(nil) // nil selects everything; reading the cache cannot fail
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	want := map[string]string{"count": strconv.Itoa(len(names)), "pods": strings.Join(names, ",")}

	cm, err := c.configMaps.Namespace(ns).Get(configMapName)
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

// shutdown stops the factory's informers and waits, for a while, for their
// handlers to return.
func shutdown(f *informers.Factory) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Shutdown(ctx); err != nil {
		log.Print(err) // names the informers whose handlers are stuck
	}
}
