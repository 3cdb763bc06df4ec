package informers_test

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// BenchmarkFleet caches the realistic pods of 10 clusters, 10k each, each
// cluster a server of its own that speaks protobuf over HTTP as the API
// server does (its pods drawn with a seed of its own: other names, UIDs,
// nodes and template hashes, the same kinds of images and labels), then
// attaches one cluster more. The servers are benchfixtures.PodServer,
// which pages lists and does not serve watch-list. impl=informers is a
// fleet (package fleet), whose factories share one decoder; impl=informers-unshared is ten of
// our factories, each with decoders of its own; impl=informers-shared ten
// of our factories sharing one Decoders, as a fleet's do, without the
// fleet; impl=clientgo is ten client-go factories, one per cluster, with
// protobuf and watch-list off.
// retained-B/obj is the heap the caches keep per pod; sync10-ms is how
// long the ten clusters take to sync, started together (with one shared
// decoder, which decodes one object at a time, they take turns);
// attach-ms is how long the eleventh cluster takes from attach to synced,
// and attach-cpu-ms the CPU time the process (the servers included, which
// send pods encoded beforehand) spends meanwhile, which other processes
// on the machine do not inflate. One op is the whole run.
func BenchmarkFleet(b *testing.B) {
	const clusters, count = 10, 10_000
	servers := make([]*bf.PodServer, clusters+1)
	for n := range servers {
		o := benchSpread
		o.Seed = uint64(n + 1)
		enc, err := bf.EncodePods(bf.NewPodList(count, o))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = enc.Close() }) // after the server's
		// Lists paged as asked, and no watch-list, as a server without
		// the feature: every implementation lists, then watches.
		if servers[n], err = bf.NewPodServer(enc, bf.PodServerOptions{NoWatchList: true}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(servers[n].Close)
	}
	config := func(n int) *rest.Config { return servers[n].Config() }
	clientGo := func(ctx context.Context, n int) (func(), func() error, error) {
		cs, err := kubernetes.NewForConfig(config(n))
		if err != nil {
			return nil, nil, err
		}
		f := kubeinformers.NewSharedInformerFactory(cs, 0)
		inf := f.Core().V1().Pods().Informer()
		stop := make(chan struct{})
		f.Start(stop)
		wait := func() error {
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				return fmt.Errorf("cluster %d: client-go's informer did not sync", n)
			}
			return nil
		}
		return func() { close(stop); f.Shutdown() }, wait, nil
	}
	factories := func(ctx context.Context, n int) (func(), func() error, error) {
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: config(n)})
		informers.Informer[*corev1.Pod](f)
		f.Start(ctx)
		return func() { _ = f.Shutdown(ctx) }, func() error { return informers.WaitForSync(ctx, f) }, nil
	}
	var shared *informers.Decoders // new for every fleet of factories
	sharedFactories := func(ctx context.Context, n int) (func(), func() error, error) {
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: config(n), Decoders: shared})
		informers.Informer[*corev1.Pod](f)
		f.Start(ctx)
		return func() { _ = f.Shutdown(ctx) }, func() error { return informers.WaitForSync(ctx, f) }, nil
	}
	for _, impl := range []string{"informers", "informers-unshared", "informers-shared", "clientgo"} {
		b.Run(fmt.Sprintf("clusters=%d/pods=%d/impl=%s", clusters, count, impl), func(b *testing.B) {
			if impl == "clientgo" {
				if err := benchCheckClientGoListWatch(); err != nil {
					b.Fatal(err)
				}
			}
			var retained, syncAll, attach, attachCPU float64
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				var fl *fleet.Fleet
				start := map[string]func(context.Context, int) (func(), func() error, error){"clientgo": clientGo, "informers-unshared": factories, "informers-shared": sharedFactories}[impl]
				shared = &informers.Decoders{}
				if impl == "informers" {
					fl = fleet.New(fleet.Options{})
					pods := fleet.Informer[*corev1.Pod](fl)
					start = func(ctx context.Context, n int) (func(), func() error, error) {
						name := strconv.Itoa(n)
						err := fl.Attach(ctx, name, fleet.Cluster{RESTConfig: config(n)})
						return func() {}, func() error {
							inf, _ := pods.Cluster(name)
							return informers.WaitForSync(ctx, inf)
						}, err
					}
				}
				run := func(ns ...int) []func() {
					var stops []func()
					var waits []func() error
					for _, n := range ns {
						stop, wait, err := start(ctx, n)
						if err != nil {
							b.Fatal(err)
						}
						stops, waits = append(stops, stop), append(waits, wait)
					}
					for _, wait := range waits {
						if err := wait(); err != nil {
							b.Fatal(err)
						}
					}
					return stops
				}
				base := bf.LiveHeap()
				began := time.Now()
				stops := run(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
				syncAll += float64(time.Since(began).Milliseconds())
				retained += float64(bf.LiveHeap()) - float64(base)
				began, cpu := time.Now(), benchProcessCPU(b)
				// Labelled, so that a CPU profile tells the attach apart
				// (go tool pprof -tagfocus phase=attach).
				pprof.Do(context.Background(), pprof.Labels("phase", "attach"), func(context.Context) { stops = append(stops, run(clusters)...) })
				attach += float64(time.Since(began).Milliseconds())
				attachCPU += float64((benchProcessCPU(b) - cpu).Milliseconds())
				for _, stop := range stops {
					stop()
				}
				if fl != nil {
					if err := fl.Shutdown(ctx); err != nil {
						b.Fatal(err)
					}
				}
				cancel()
			}
			b.ReportMetric(retained/float64(b.N)/float64(clusters*count), "retained-B/obj")
			b.ReportMetric(syncAll/float64(b.N), "sync10-ms")
			b.ReportMetric(attach/float64(b.N), "attach-ms")
			b.ReportMetric(attachCPU/float64(b.N), "attach-cpu-ms")
		})
	}
}
