// Rollouts reports, for every Deployment, its ReplicaSets and their pods:
// a controller over three informers whose events all reduce to one key,
// the Deployment's, on a typed work queue.
//
//	go run ./examples/rollouts -duration 30s
//
// Deployments enqueue themselves (informers.Enqueue), ReplicaSets their
// controlling Deployment (informers.EnqueueOwner), and pods the Deployment
// of their ReplicaSet (informers.EnqueueMapped through the ReplicaSet
// lister). Owner indexes (informers.IndexByController) find a Deployment's
// ReplicaSets and a ReplicaSet's pods without a scan. It runs against
// $KUBECONFIG's cluster or, without it, a local kube-apiserver and etcd,
// where nothing creates pods: there it only reports what it is shown.
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
)

var (
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()
	replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind()
)

func main() {
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("rollouts: ")
	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout)
	})
	if err != nil {
		log.Fatal(err)
	}
}

type controller struct {
	deployments informers.Lister[*appsv1.Deployment]
	replicaSets *informers.SharedInformer[*appsv1.ReplicaSet]
	pods        *informers.SharedInformer[*corev1.Pod]
	queue       workqueue.TypedRateLimitingInterface[types.NamespacedName]
	log         *log.Logger
}

func run(ctx context.Context, cfg *rest.Config, out io.Writer) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactoryWith(clientset, informers.FactoryOptions{StripManagedFields: true})
	deployments := informers.Informer[*appsv1.Deployment](factory)
	c := &controller{
		deployments: deployments.Lister(),
		replicaSets: informers.InformerWith(factory, informers.Options[*appsv1.ReplicaSet]{
			Indexers: map[string]informers.IndexFunc[*appsv1.ReplicaSet]{"controller": informers.IndexByController[*appsv1.ReplicaSet](deploymentKind)},
		}),
		pods: informers.InformerWith(factory, informers.Options[*corev1.Pod]{
			Indexers: map[string]informers.IndexFunc[*corev1.Pod]{"controller": informers.IndexByController[*corev1.Pod](replicaSetKind)},
		}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
		log:   log.New(out, "", log.Ltime),
	}
	fromDeployments, err := deployments.AddHandler(informers.Enqueue[*appsv1.Deployment](c.queue))
	if err != nil {
		return err
	}
	fromReplicaSets, err := c.replicaSets.AddHandler(informers.EnqueueOwner[*appsv1.ReplicaSet](c.queue, deploymentKind))
	if err != nil {
		return err
	}
	fromPods, err := c.pods.AddHandler(informers.EnqueueMapped(c.queue, c.deploymentOf))
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	defer c.queue.ShutDown()
	// The handlers, not only the caches: every Deployment is queued.
	if err := informers.WaitForSync(ctx, fromDeployments, fromReplicaSets, fromPods); err != nil {
		return err
	}
	c.log.Print("synced")
	stop := context.AfterFunc(ctx, c.queue.ShutDown)
	defer stop()
	for c.reconcileNext() {
	}
	return nil
}

// deploymentOf maps a pod to the Deployment of its ReplicaSet, if any.
func (c *controller) deploymentOf(p *corev1.Pod) []types.NamespacedName {
	rsKey, ok := informers.ControllerOf(p, replicaSetKind)
	if !ok {
		return nil
	}
	rs, err := c.replicaSets.Lister().Namespace(rsKey.Namespace).Get(rsKey.Name)
	if err != nil {
		return nil // not cached yet: the ReplicaSet's own add enqueues it
	}
	if d, ok := informers.ControllerOf(rs, deploymentKind); ok {
		return []types.NamespacedName{d}
	}
	return nil
}

// reconcileNext reports one Deployment; it returns false once the queue
// is shut down.
func (c *controller) reconcileNext() bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	d, err := c.deployments.Namespace(key.Namespace).Get(key.Name)
	if err != nil {
		c.log.Printf("deployment %s: gone", key)
		return true
	}
	rsets, _ := c.replicaSets.Lister().ByIndex("controller", key.String())
	pods, ready := 0, 0
	for _, rs := range rsets {
		owned, _ := c.pods.Lister().ByIndex("controller", informers.KeyOf(rs).String())
		for _, p := range owned {
			pods++
			if p.Status.Phase == corev1.PodRunning {
				ready++
			}
		}
	}
	c.log.Printf("deployment %s: generation %d, %d replicasets, %d pods, %d running", key, d.Generation, len(rsets), pods, ready)
	c.queue.Forget(key)
	return true
}
