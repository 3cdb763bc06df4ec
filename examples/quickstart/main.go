// Quickstart watches pods with a typed informer and prints how many each
// namespace has as they come and go.
//
//	go run ./examples/quickstart                 # until Ctrl-C
//	go run ./examples/quickstart -duration 20s
//
// It runs against the cluster $KUBECONFIG names or, without it, a local
// kube-apiserver and etcd (see examples/internal/cluster). Nothing else
// happens on the local one, so there it also creates and deletes a few
// pods in a namespace of its own; -demo does that on any cluster.
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
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
	"github.com/kubetyped/informers/examples/internal/demo"
)

type options struct {
	Demo      bool          // create and delete pods, see demo.Pods
	DemoEvery time.Duration // how often the demo acts
}

func main() {
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	demoFlag := flag.Bool("demo", false, "create and delete pods in a new namespace (always on without KUBECONFIG)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("quickstart: ")

	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, options{Demo: *demoFlag || cluster.Local(), DemoEvery: time.Second})
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run watches pods until ctx ends.
func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	logger := log.New(out, "", log.Ltime)
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// StripManagedFields saves memory: we never read managedFields.
	factory := informers.NewFactoryWith(clientset, informers.FactoryOptions{StripManagedFields: true})
	pods := informers.Informer[*corev1.Pod](factory)

	// The handler only notes that something changed; the loop below prints.
	// Counts change on adds and deletes only, so updates are not handled.
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default: // a print is pending already
		}
	}
	_, err = pods.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(*corev1.Pod, bool) { poke() },
		OnDelete: func(informers.Deleted[*corev1.Pod]) { poke() },
	}, informers.WithName("quickstart"))
	if err != nil {
		return err // the informer could not be made; err says why
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	if err := factory.WaitForSync(ctx); err != nil {
		return err // says why: 403 Forbidden (RBAC), 404...
	}
	counts := countByNamespace(pods.Lister())
	logger.Printf("watching pods (Ctrl-C to stop): %s", describe(nil, counts))

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Demo {
		wg.Go(func() {
			if err := demo.Pods(ctx, clientset, logger, o.DemoEvery); err != nil {
				logger.Printf("demo: %v", err)
			}
		})
	}

	// Print on change, at most every 500ms.
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		last := counts
		counts = countByNamespace(pods.Lister())
		if line := describe(last, counts); line != "" {
			logger.Print(line)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// countByNamespace reads the cache: no request to the server.
func countByNamespace(pods informers.Lister[*corev1.Pod]) map[string]int {
	counts := map[string]int{}
	for p := range pods.All() { // p is a *corev1.Pod
		counts[p.Namespace]++
	}
	return counts
}

// describe says how many pods there are and which namespaces' counts
// changed since before, as in "pods: 7 total, demo-x7k2p=2 (+1)", or
// returns "" if none did. With before nil, it lists every namespace.
func describe(before, now map[string]int) string {
	namespaces := map[string]int{}
	maps.Copy(namespaces, before)
	maps.Copy(namespaces, now)
	total, changes := 0, []string{}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		n, was := now[ns], before[ns]
		total += n
		switch {
		case before == nil:
			changes = append(changes, fmt.Sprintf("%s=%d", ns, n))
		case n != was:
			changes = append(changes, fmt.Sprintf("%s=%d (%+d)", ns, n, n-was))
		}
	}
	if before != nil && len(changes) == 0 {
		return ""
	}
	return strings.Join(append([]string{fmt.Sprintf("pods: %d total", total)}, changes...), ", ")
}
