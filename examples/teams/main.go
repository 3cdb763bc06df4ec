// Teams serves every namespace labelled team=a (-team picks another), while
// namespaces gain and lose that label: it counts the config maps of those
// namespaces, and logs the namespaces and config maps that enter and leave.
//
//	go run ./examples/teams -team a
//
// One option does it: Tuning.NamespaceSelector. The informer caches only
// the config maps of the selected namespaces and follows their labels
// while it runs. A namespace that gains the label brings its config maps
// as adds; one that loses it takes them away as deletes with
// Deleted.LeftNamespace set (the config maps still exist on the server:
// they are no longer ours). See docs/namespaces.md.
//
// Without $KUBECONFIG it runs against a local control plane (see
// examples/internal/cluster) and plays a short scenario there (demo.go);
// -demo plays it on any cluster.
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"os"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
)

type options struct {
	Team string // serve the namespaces labelled team=Team
	Demo bool   // play the scenario of demo.go
}

func main() {
	var o options
	flag.StringVar(&o.Team, "team", "a", "serve the namespaces labelled team=<this>")
	flag.BoolVar(&o.Demo, "demo", false, "label namespaces and create config maps (always on without KUBECONFIG)")
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	flag.Parse()
	o.Demo = o.Demo || cluster.Local()
	log.SetFlags(0)
	log.SetPrefix("teams: ")

	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run counts the config maps of the team's namespaces until ctx ends.
func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactory(clientset)
	configMaps := informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{
		Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=" + o.Team)}, // a label selector on Namespace objects
	})
	c := &counter{log: log.New(out, "", log.Ltime), count: map[string]int{}}
	reg, err := configMaps.AddHandler(c)
	if err != nil {
		return err
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	if err := informers.WaitForSync(ctx, reg); err != nil {
		return err
	}
	c.log.Printf("serving the namespaces labelled team=%s (Ctrl-C to stop)", o.Team)

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Demo {
		wg.Go(func() { play(ctx, clientset, c.log, o.Team) })
	}
	<-ctx.Done()
	return nil
}

// counter is the handler: it counts the config maps of each served
// namespace and logs what changes.
type counter struct {
	log   *log.Logger
	mu    sync.Mutex
	count map[string]int // by namespace
}

func (c *counter) HandleAdd(cm *corev1.ConfigMap, initial bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count[cm.Namespace]++
	c.log.Printf("serving %s/%s (%s has %d)", cm.Namespace, cm.Name, cm.Namespace, c.count[cm.Namespace])
}

func (c *counter) HandleUpdate(_, _ *corev1.ConfigMap) {}

func (c *counter) HandleDelete(d informers.Deleted[*corev1.ConfigMap]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := d.Key.Namespace
	c.count[ns]--
	why := "deleted"
	if d.LeftNamespace {
		why = "left with its namespace" // its namespace lost the label
	}
	c.log.Printf("%s %s (%s has %d)", why, d.Key, ns, c.count[ns])
	if c.count[ns] == 0 {
		delete(c.count, ns)
	}
}
