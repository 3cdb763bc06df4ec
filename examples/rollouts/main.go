// Rollouts reports, for every Deployment, its ReplicaSets and their pods,
// in an annotation of the Deployment (rollouts.example.com/report) and on
// its output: a controller over three informers whose events all reduce
// to one key, the Deployment's, on a typed work queue.
//
//	go run ./examples/rollouts -duration 30s
//
// Deployments enqueue themselves (informers.Enqueue), ReplicaSets their
// controlling Deployment (informers.EnqueueOwner), and pods the Deployment
// of their ReplicaSet (informers.EnqueueMapped through the ReplicaSet
// lister). Owner indexes (informers.IndexByController) find a Deployment's
// ReplicaSets and a ReplicaSet's pods without a scan. It reads each
// Deployment through an informers.Tracker of its own annotation writes:
// a reconcile that follows its own write, before the informer has
// delivered it, would read the Deployment without the report and write
// it again. It runs against
// $KUBECONFIG's cluster or, without it, a local kube-apiserver and etcd,
// where nothing creates pods: there it only reports what it is shown.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
)

// reportAnnotation holds a Deployment's report.
const reportAnnotation = "rollouts.example.com/report"

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
	clientset kubernetes.Interface
	// deployments reads Deployments as the controller's own writes left
	// them.
	deployments *informers.Tracker[*appsv1.Deployment]
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
	factory := informers.NewFactoryWith(clientset, informers.FactoryOptions{Tuning: informers.Tuning{StripManagedFields: informers.Set(true)}})
	deployments := informers.Informer[*appsv1.Deployment](factory)
	c := &controller{
		clientset:   clientset,
		deployments: informers.NewTracker(deployments, 0),
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
	for c.reconcileNext(ctx) {
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

// reconcileNext reconciles one Deployment; it returns false once the
// queue is shut down.
func (c *controller) reconcileNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil && ctx.Err() == nil {
		c.log.Printf("deployment %s: %v (retry %d)", key, err, c.queue.NumRequeues(key)+1)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// reconcile writes the report of the Deployment key into its annotation,
// if it changed, and prints it.
func (c *controller) reconcile(ctx context.Context, key types.NamespacedName) error {
	// Waits until the cache shows the report this controller last wrote.
	d, err := c.deployments.Get(ctx, key)
	if apierrors.IsNotFound(err) {
		c.deployments.Forget(key)
		c.log.Printf("deployment %s: gone", key)
		return nil
	}
	if err != nil {
		return err
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
	// No generation in it: a change of a Deployment's annotations moves its
	// generation on.
	report := fmt.Sprintf("%d replicasets, %d pods, %d running", len(rsets), pods, ready)
	if d.Annotations[reportAnnotation] == report {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{reportAnnotation: report}}})
	if err != nil {
		return err
	}
	patched, err := c.clientset.AppsV1().Deployments(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		c.deployments.WriteFailed(key, err)
		return err
	}
	if err := c.deployments.Wrote(key, patched); err != nil {
		return err
	}
	c.log.Printf("deployment %s: %s", key, report)
	return nil
}
