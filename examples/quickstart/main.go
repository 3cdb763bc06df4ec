// Quickstart watches pods with a typed informer and prints how many each
// namespace has as they come and go.
//
//	go run .                                     # until Ctrl-C
//	go run . -duration 20s
//	go run . -metrics-addr :8080                 # serves /metrics and /readyz
//
// (from examples/quickstart, a module of its own, so that the library does
// not depend on the Prometheus client that -metrics-addr uses).
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
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
	"github.com/kubetyped/informers/examples/internal/demo"
	informersprom "github.com/kubetyped/informers/prometheus"
)

type options struct {
	Demo        bool          // create and delete pods, see demo.Pods
	DemoEvery   time.Duration // how often the demo acts
	MetricsAddr string        // if set, serve /metrics and /readyz there
}

func main() {
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	demoFlag := flag.Bool("demo", false, "create and delete pods in a new namespace (always on without KUBECONFIG)")
	metricsAddr := flag.String("metrics-addr", "", "serve Prometheus /metrics and /readyz on this address, such as :8080")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("quickstart: ")

	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, options{Demo: *demoFlag || cluster.Local(), DemoEvery: time.Second, MetricsAddr: *metricsAddr})
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
	fo := informers.FactoryOptions{Tuning: informers.Tuning{StripManagedFields: informers.Set(true)}}
	registry := prometheus.NewRegistry()
	if o.MetricsAddr != "" {
		metrics, err := informersprom.New(registry)
		if err != nil {
			return err
		}
		fo.Metrics = informers.Set[informers.Metrics](metrics)
	}
	factory := informers.NewFactoryWith(clientset, fo)
	pods := informers.Informer[*corev1.Pod](factory)
	if o.MetricsAddr != "" {
		stop, err := serveMetrics(ctx, o.MetricsAddr, registry, informers.ReadyCheck(factory), logger)
		if err != nil {
			return err
		}
		defer stop()
	}

	// The handler only notes that something changed; the loop below prints.
	// Counts change on adds and deletes only, so updates are not handled.
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default: // a print is pending already
		}
	}
	_, err = pods.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(*corev1.Pod, bool) { poke() },
		OnDelete: func(informers.Deleted[*corev1.Pod]) { poke() },
	}, informers.HandlerOptions{Name: "quickstart"})
	if err != nil {
		return err // the informer could not be made; err says why
	}

	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	if err := informers.WaitForSync(ctx, factory); err != nil {
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

// serveMetrics serves registry on /metrics and ready on /readyz at addr, as
// a controller's metrics and probe endpoints would, until stop is called.
func serveMetrics(ctx context.Context, addr string, registry *prometheus.Registry, ready func(*http.Request) error, logger *log.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
			logger.Printf("metrics server: %v", err)
		}
	}()
	logger.Printf("serving http://%s/metrics and /readyz", l.Addr())
	return func() {
		_ = srv.Close()
		<-done
	}, nil
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
