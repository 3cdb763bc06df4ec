// Crd is a controller for a custom resource with a Go type of its own,
// Greeting (greeting.go): for each one it writes "Hello, <spec.name>!" to
// its status.
//
//	go run ./examples/crd
//
// It creates the CustomResourceDefinition if it is missing (and leaves it:
// kubectl delete crd greetings.demo.example.com removes it), and serves
// Greeting through an informers.Factory whose scheme knows the type, so
// that the cache, the lister and the handlers all deal in *Greeting. It
// also shows the same resource without a Go type, as unstructured objects.
// Both are decoded by the library's JSON decoder, in one pass, sharing
// equal parts between cached objects (DisableDecoder turns it off).
//
// Without $KUBECONFIG it runs against a local control plane (see
// examples/internal/cluster) and creates, changes and deletes a few
// greetings there (demo.go); -demo does that on any cluster.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
)

type options struct {
	Workers int
	Demo    bool // play the scenario of demo.go
}

func main() {
	var o options
	flag.IntVar(&o.Workers, "workers", 2, "number of greetings reconciled at once")
	flag.BoolVar(&o.Demo, "demo", false, "create, change and delete greetings (always on without KUBECONFIG)")
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	flag.Parse()
	o.Demo = o.Demo || cluster.Local()
	log.SetFlags(0)
	log.SetPrefix("crd: ")

	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run reconciles greetings until ctx ends.
func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	logger := log.New(out, "", log.Ltime)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureCRD(ctx, dyn, logger); err != nil {
		return err
	}

	// No clientset: the factory reaches the server through RESTConfig, and
	// learns from Scheme that *Greeting is the kind Greeting of
	// demo.example.com/v1, served as the resource greetings.
	factory := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Scheme: newScheme()})
	typed := informers.Informer[*Greeting](factory)
	c := &controller{
		dynamic:   dyn,
		greetings: typed.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "greetings"}),
		log: logger,
	}
	_, err = typed.AddHandler(informers.HandlerFuncs[*Greeting]{
		OnAdd:    func(g *Greeting, _ bool) { c.enqueue(g) },
		OnUpdate: func(_, g *Greeting) { c.enqueue(g) },
		OnDelete: func(d informers.Deleted[*Greeting]) {
			// Nothing to clean up: the status went with the object. The
			// last state is a *Greeting, however the delete was found.
			logger.Printf("%s deleted; it said %q", d.Key, d.Object.Status.Message)
		},
	})
	if err != nil {
		return err // e.g. Greeting missing from the scheme
	}

	// The same resource without a Go type: name the resource, and read
	// fields by path.
	untyped := informers.InformerWith(factory, informers.Options[*unstructured.Unstructured]{Resource: greetings})
	_, err = untyped.AddHandler(informers.HandlerFuncs[*unstructured.Unstructured]{
		OnAdd: func(u *unstructured.Unstructured, _ bool) {
			whom, _, _ := unstructured.NestedString(u.Object, "spec", "name")
			logger.Printf("(unstructured informer) %s/%s is new, for %q", u.GetNamespace(), u.GetName(), whom)
		},
	})
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	if err := informers.WaitForSync(ctx, factory); err != nil {
		return err
	}
	logger.Printf("watching greetings (Ctrl-C to stop); %d exist", typed.Lister().Len())

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Demo {
		wg.Go(func() { demo(ctx, dyn, logger) })
	}
	c.run(ctx, o.Workers)
	return nil
}

type controller struct {
	dynamic   dynamic.Interface
	greetings informers.Lister[*Greeting]
	queue     workqueue.TypedRateLimitingInterface[types.NamespacedName]
	log       *log.Logger
}

func (c *controller) enqueue(g *Greeting) {
	c.queue.Add(types.NamespacedName{Namespace: g.Namespace, Name: g.Name})
}

// run starts the workers and, once ctx ends, stops them after the
// reconciles in progress.
func (c *controller) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDownWithDrain() // waits for the keys being processed
	c.queue.ShutDown()          // also stops the queue's delay timer goroutine
	wg.Wait()
}

func (c *controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		return true // stopping: drop it
	}
	err := c.reconcile(ctx, key)
	switch {
	case err == nil:
		c.queue.Forget(key)
	case ctx.Err() != nil:
		// The error is that we are stopping.
	default:
		c.log.Printf("%s: %v (retry %d)", key, err, c.queue.NumRequeues(key)+1)
		c.queue.AddRateLimited(key)
	}
	return true
}

// reconcile writes the greeting's status if it is not what it should be.
// It reads the cache; the status write comes back as an update, which
// queues the key again, and that pass finds nothing to do.
func (c *controller) reconcile(ctx context.Context, key types.NamespacedName) error {
	g, err := c.greetings.Namespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil // deleted since it was queued
	}
	want := GreetingStatus{Message: fmt.Sprintf("Hello, %s!", g.Spec.Name), ObservedGeneration: g.Generation}
	if g.Status == want {
		return nil
	}
	// A merge patch of the status subresource: no Go client for Greeting
	// is needed, and it cannot overwrite the spec.
	patch, err := json.Marshal(map[string]any{"status": want})
	if err != nil {
		return err
	}
	_, err = c.dynamic.Resource(greetings).Namespace(key.Namespace).
		Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		c.log.Printf("%s: status.message = %q", key, want.Message)
	}
	return err
}

// ensureCRD creates the CustomResourceDefinition of Greeting unless it
// exists, and waits until the server serves greetings: until then the
// informers.WaitForSync of the informer would fail at once with NotFound.
func ensureCRD(ctx context.Context, dyn dynamic.Interface, logger *log.Logger) error {
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := greetingCRD()
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		return fmt.Errorf("creating CustomResourceDefinition %s: %w", crd.GetName(), err)
	default:
		logger.Printf("created CustomResourceDefinition %s", crd.GetName())
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(greetings).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be served: %w", crd.GetName(), err)
	}
	return nil
}
