// Package podcount is the podcount controller of examples/migration and
// examples/clientgo-compat, all but its informers: its command line, its
// work queue and workers, and its reconcile. Each version builds its
// informers its own way, adds handlers that call Controller.Enqueue, and,
// once the caches have synced, calls Controller.Run.
//
// The controller keeps, in every namespace that has pods, a ConfigMap named
// pod-count that says how many pods the namespace has, and which.
package podcount

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

	"github.com/kubetyped/informers/examples/internal/cluster"
	"github.com/kubetyped/informers/examples/internal/demo"
)

// ConfigMapName is the name of the ConfigMap the controller keeps.
const ConfigMapName = "pod-count"

// Options are the controller's settings.
type Options struct {
	Namespace string // "" for all
	Workers   int
	Demo      bool // create and delete pods, see demo.Pods
}

// Main parses the command line into Options and calls run with them, on
// the cluster that cluster.Run finds, until Ctrl-C or -duration.
func Main(run func(ctx context.Context, cfg *rest.Config, out io.Writer, o Options) error) {
	var o Options
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

// Cache is how the controller reads the informers' caches.
type Cache struct {
	// Pods returns the pods of a namespace.
	Pods func(namespace string) ([]*corev1.Pod, error)
	// ConfigMap returns the ConfigMap named ConfigMapName in a namespace,
	// or a NotFound error.
	ConfigMap func(namespace string) (*corev1.ConfigMap, error)
}

// Controller brings the ConfigMap of each namespace it is given through
// Enqueue in line with the namespace's pods, reading them from its Cache
// and writing through the clientset.
type Controller struct {
	clientset kubernetes.Interface
	cache     Cache
	queue     workqueue.TypedRateLimitingInterface[string] // namespaces
	log       *log.Logger
}

// New returns a controller that writes through clientset, logs to out and
// reads cache.
func New(clientset kubernetes.Interface, out io.Writer, cache Cache) *Controller {
	return &Controller{
		clientset: clientset,
		cache:     cache,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podcount"}),
		log: log.New(out, "", log.Ltime),
	}
}

// Enqueue asks for the ConfigMap of namespace to be reconciled.
func (c *Controller) Enqueue(namespace string) { c.queue.Add(namespace) }

// Run reconciles the namespaces enqueued, o.Workers at a time, and plays
// the demo if o.Demo is set, until ctx ends. Call it once the caches have
// synced.
func (c *Controller) Run(ctx context.Context, o Options) error {
	c.log.Printf("counting pods (Ctrl-C to stop)")
	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Demo {
		wg.Go(func() {
			if err := demo.Pods(ctx, c.clientset, c.log, time.Second); err != nil {
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

func (c *Controller) processNext(ctx context.Context) bool {
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
func (c *Controller) reconcile(ctx context.Context, ns string) error {
	pods, err := c.cache.Pods(ns)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	want := map[string]string{"count": strconv.Itoa(len(names)), "pods": strings.Join(names, ",")}

	cm, err := c.cache.ConfigMap(ns)
	switch {
	case apierrors.IsNotFound(err):
		if len(pods) == 0 {
			return nil
		}
		_, err = c.clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName},
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
		c.log.Printf("%s/%s: %s pods", ns, ConfigMapName, want["count"])
	case apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil // the namespace is going away
	}
	return err
}
