// Secretmirror copies the Secrets labelled mirror=true from one namespace
// to another, keeps the copies up to date, and deletes a copy once its
// source is deleted or loses the label.
//
//	go run ./examples/secretmirror -from team-a -to team-b
//
// It has the usual shape of a controller: informers keep a cache and put
// keys on a work queue; workers read the cache, compare what is with what
// should be, and write through the clientset; failures are retried with
// backoff. Deletes matter here, which is why this example mirrors secrets:
// with client-go a delete the informer missed arrives as a
// cache.DeletedFinalStateUnknown tombstone to unwrap; here every delete is
// an informers.Deleted[*corev1.Secret], and informers.EnqueueMapped turns
// adds, updates and deletes alike into the queue's keys.
//
// It reads its own writes: an informers.Tracker records each mirror it
// creates, updates or deletes, and a reconcile first waits until the
// mirrors' cache shows them. Without it, a reconcile that follows its own
// create before the informer has delivered the new mirror (a source
// changed twice in a row is enough) finds no mirror and creates it again:
// the server refuses the second create, and the controller reports a
// foreign secret where there is none, and backs off
// (-read-your-writes=false shows it).
//
// Without $KUBECONFIG it runs against a local control plane (see
// examples/internal/cluster) and plays a short scenario there (demo.go);
// -demo plays it on any cluster.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"maps"
	"os"
	"sync"

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

const (
	// mirrorLabel=true asks for a secret to be mirrored.
	mirrorLabel = "mirror"
	// sourceLabel marks a mirror; its value is the source's namespace.
	sourceLabel = "example.com/mirror-of"
)

type options struct {
	From, To string // namespaces
	Workers  int
	Demo     bool // play the scenario of demo.go
	// StaleReads turns the Tracker's wait off, to show what it prevents.
	StaleReads bool
}

func main() {
	var o options
	flag.StringVar(&o.From, "from", "mirror-from", "namespace to copy secrets labelled "+mirrorLabel+"=true from")
	flag.StringVar(&o.To, "to", "mirror-to", "namespace to copy them to")
	flag.IntVar(&o.Workers, "workers", 2, "number of secrets reconciled at once")
	flag.BoolVar(&o.Demo, "demo", false, "create, change and delete secrets in -from (always on without KUBECONFIG)")
	readYourWrites := flag.Bool("read-your-writes", true, "wait, before a reconcile, until the cache shows the controller's own writes")
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	flag.Parse()
	o.Demo = o.Demo || cluster.Local()
	o.StaleReads = !*readYourWrites
	log.SetFlags(0)
	log.SetPrefix("secretmirror: ")

	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run mirrors secrets until ctx ends, then waits for the work in progress.
func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	if o.From == "" || o.To == "" || o.From == o.To {
		return errors.New("-from and -to must name two different namespaces")
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactory(clientset)
	// Each informer caches only what the controller reads: the labelled
	// secrets of one namespace, the mirrors in the other.
	sources := informers.InformerWith(factory, informers.Options[*corev1.Secret]{
		Tuning: informers.Tuning{Namespace: informers.Set(o.From)}, LabelSelector: mirrorLabel + "=true",
	})
	mirrors := informers.InformerWith(factory, informers.Options[*corev1.Secret]{
		Tuning: informers.Tuning{Namespace: informers.Set(o.To)}, LabelSelector: sourceLabel + "=" + o.From,
	})
	c := &controller{
		from: o.From, to: o.To, clientset: clientset,
		sources: sources.Lister(), mirrors: mirrors.Lister(),
		mirrorWrites: informers.NewTracker(mirrors, 0), staleReads: o.StaleReads,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "secretmirror"}),
		log: log.New(out, "", log.Ltime),
	}
	// A source and its mirror have the same name, so both informers queue
	// the source's key.
	fromSources, err := sources.AddHandlerWith(informers.EnqueueMapped(c.queue, c.sourceKey), informers.HandlerOptions{Name: "sources"})
	if err != nil {
		return err
	}
	fromMirrors, err := mirrors.AddHandlerWith(informers.EnqueueMapped(c.queue, c.sourceKey), informers.HandlerOptions{Name: "mirrors"})
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	// The handlers, not only the caches: every existing secret is queued
	// before the workers start.
	if err := informers.WaitForSync(ctx, fromSources, fromMirrors); err != nil {
		return err
	}
	c.log.Printf("mirroring secrets labelled %s=true from namespace %s to %s (Ctrl-C to stop)", mirrorLabel, o.From, o.To)

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Demo {
		wg.Go(func() { demo(ctx, clientset, c.log, o.From, o.To) })
	}
	c.run(ctx, o.Workers)
	return nil
}

type controller struct {
	from, to  string
	clientset kubernetes.Interface
	sources   informers.Lister[*corev1.Secret]
	mirrors   informers.Lister[*corev1.Secret]
	// mirrorWrites records the mirrors written for each source's key.
	mirrorWrites *informers.Tracker[*corev1.Secret]
	staleReads   bool // reconcile without waiting for mirrorWrites
	queue        workqueue.TypedRateLimitingInterface[types.NamespacedName]
	log          *log.Logger
}

// sourceKey maps a source or a mirror to the key of the source. A secret
// that loses the label the informers select on is delivered as deleted:
// its key is queued as well.
func (c *controller) sourceKey(s *corev1.Secret) []types.NamespacedName {
	return []types.NamespacedName{{Namespace: c.from, Name: s.Name}}
}

// run starts the workers and, once ctx ends, stops them: reconciles in
// progress finish, keys still queued are dropped (the next start lists
// everything anyway).
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

// processNext reconciles one key, and returns false once the queue is shut
// down.
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
		c.queue.Forget(key) // resets its backoff
	case ctx.Err() != nil:
		// The error is that we are stopping.
	default:
		c.log.Printf("%s: %v (retry %d)", key, err, c.queue.NumRequeues(key)+1)
		c.queue.AddRateLimited(key)
	}
	return true
}

// reconcile makes the mirror of the source key match it: created, updated
// or deleted. It reads the cache, not the server, and writes through the
// clientset; the informers then report the write, which queues the key
// again, and the second pass finds nothing to do. It records each write
// in mirrorWrites, and first waits until the mirrors' cache shows the
// writes of the passes before: a *informers.ConsistencyError, if it takes
// too long, retries the key later.
func (c *controller) reconcile(ctx context.Context, key types.NamespacedName) error {
	if !c.staleReads {
		if err := c.mirrorWrites.Wait(ctx, key); err != nil {
			return err
		}
	}
	mirror, err := c.mirrors.Namespace(c.to).Get(key.Name)
	mirrorExists := err == nil
	source, err := c.sources.Namespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		if !mirrorExists {
			return nil
		}
		// Gone, or no longer labelled: delete the mirror, but only the
		// one we looked at, not a secret created since under its name.
		err := c.clientset.CoreV1().Secrets(c.to).Delete(ctx, key.Name, metav1.DeleteOptions{
			Preconditions: metav1.NewUIDPreconditions(string(mirror.UID)),
		})
		if err == nil {
			c.mirrorWrites.Deleted(key, mirror)
			c.log.Printf("deleted %s/%s: its source is gone or unlabelled", c.to, key.Name)
		}
		c.mirrorWrites.WriteFailed(key, err)
		return ignoreNotFound(err)
	}

	if !mirrorExists {
		created, err := c.clientset.CoreV1().Secrets(c.to).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Labels: map[string]string{sourceLabel: c.from}},
			Type:       source.Type,
			Data:       source.Data, // only read: the cache's objects are shared
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The cache shows our own mirrors: a secret we do not manage
			// has the name. Retried with backoff, in case it goes.
			return errors.New("a secret not labelled as a mirror has the name")
		}
		if err != nil {
			c.mirrorWrites.WriteFailed(key, err)
			return err
		}
		c.log.Printf("created %s/%s from %s", c.to, key.Name, key)
		return c.mirrorWrites.Wrote(key, created)
	}

	if maps.EqualFunc(mirror.Data, source.Data, bytes.Equal) {
		return nil
	}
	update := mirror.DeepCopy() // never modify an object from the cache
	update.Data = source.Data
	updated, err := c.clientset.CoreV1().Secrets(c.to).Update(ctx, update, metav1.UpdateOptions{})
	if err != nil {
		c.mirrorWrites.WriteFailed(key, err)
		return err // a Conflict: someone else changed the mirror; retried
	}
	c.log.Printf("updated %s/%s from %s", c.to, key.Name, key)
	return c.mirrorWrites.Wrote(key, updated)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
