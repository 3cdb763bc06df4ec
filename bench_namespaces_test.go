package informers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

type configMapSource = informerstest.Source[*corev1.ConfigMap, *corev1.ConfigMapList]

// namespaceBench is an in-memory cluster of namespaces, one in ten
// labelled team=a, each with the same number of config maps.
type namespaceBench struct {
	configMaps *configMapSource
	namespaces *namespaceSource
	cluster    *informerstest.Cluster
}

func newNamespaceBench(b *testing.B, namespaces, perNamespace int) *namespaceBench {
	nb := &namespaceBench{
		configMaps: informerstest.NewSource[*corev1.ConfigMap, *corev1.ConfigMapList](corev1.Resource("configmaps")),
		namespaces: informerstest.NewSource[*corev1.Namespace, *corev1.NamespaceList](corev1.Resource("namespaces")),
		cluster:    informerstest.NewCluster(),
	}
	informerstest.Serve(nb.cluster, corev1.SchemeGroupVersion.WithResource("configmaps"), nb.configMaps)
	informerstest.Serve(nb.cluster, corev1.SchemeGroupVersion.WithResource("namespaces"), nb.namespaces)
	for n := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%04d", n), Labels: map[string]string{"team": "b"}}}
		if n%10 == 0 {
			ns.Labels["team"] = "a"
		}
		mustWrite(b)(nb.namespaces.Add(ns))
		for i := range perNamespace {
			mustWrite(b)(nb.configMaps.Add(benchConfigMap(ns.Name, fmt.Sprintf("cm-%04d", i))))
		}
	}
	nb.configMaps.Compact() // no history to replay: the source's heap is the state alone
	return nb
}

// mustWrite returns a function that fails b on the error of a write.
func mustWrite(b *testing.B) func(string, error) {
	return func(_ string, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchConfigMap is a config map of a controller's usual size: a few
// labels and a few hundred bytes of data.
func benchConfigMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web", "tier": "frontend"}},
		Data:       map[string]string{"config.yaml": fmt.Sprintf("name: %s\nreplicas: 3\nimage: registry.example/web:1.2.3\nport: 8080\n", name)},
	}
}

func (nb *namespaceBench) factory() *informers.Factory {
	return informers.NewFactoryWith(nil, informers.FactoryOptions{Server: nb.cluster, Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
}

// BenchmarkNamespaceSelector compares, on 1 000 namespaces of 100 config
// maps each with one namespace in ten selected, an informer with
// NamespaceSelector (impl=informers, which NamespaceModeAuto makes watch
// each namespace; impl=informers-clusterwide, one cluster-wide watch) and
// what operators do today: a cluster-wide informer whose handler filters
// events with a predicate on the namespace's labels (impl=predicate).
// Each reports retained-MB, the heap its cache keeps after the sync, and
// the objects cached. enter measures, per op and in each mode, the time
// from labelling a namespace of 1 000 config maps team=a to the last of
// their adds delivered to a handler.
func BenchmarkNamespaceSelector(b *testing.B) {
	const namespaces, perNamespace = 1000, 100
	nb := newNamespaceBench(b, namespaces, perNamespace)
	selected := map[string]bool{}
	for _, ns := range nb.namespaces.Objects() {
		if ns.Labels["team"] == "a" {
			selected[ns.Name] = true
		}
	}
	for _, impl := range []string{"informers", "informers-clusterwide", "predicate"} {
		b.Run(fmt.Sprintf("namespaces=%d/configmaps=%d/selected=10%%/impl=%s", namespaces, namespaces*perNamespace, impl), func(b *testing.B) {
			var retainedSum float64
			var cached int
			for b.Loop() {
				b.StopTimer()
				base := bf.LiveHeap()
				b.StartTimer()
				f := nb.factory()
				opts := informers.Options[*corev1.ConfigMap]{}
				switch impl {
				case "informers":
					opts.NamespaceSelector = informers.Set("team=a")
				case "informers-clusterwide":
					opts.NamespaceSelector, opts.NamespaceMode = informers.Set("team=a"), informers.Set(informers.NamespaceModeClusterWide)
				}
				inf := informers.InformerWith(f, opts)
				var delivered atomic.Int64
				if _, err := inf.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{OnAdd: func(cm *corev1.ConfigMap, _ bool) {
					if selected[cm.Namespace] { // the predicate; always true for impl=informers
						delivered.Add(1)
					}
				}}); err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
				f.Start(ctx)
				if err := informers.WaitForSync(ctx, f); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				retainedSum += float64(bf.LiveHeap()) - float64(base)
				cached = inf.Lister().Len()
				cancel()
				if err := f.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(bf.MB(retainedSum/float64(b.N)), "retained-MB")
			b.ReportMetric(float64(cached), "objects-cached")
		})
	}

	const entering = "entering" // a namespace of 1 000 config maps, not selected yet
	mustWrite(b)(nb.namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: entering}}))
	for i := range 1000 {
		mustWrite(b)(nb.configMaps.Add(benchConfigMap(entering, fmt.Sprintf("cm-%04d", i))))
	}
	for _, mode := range []informers.NamespaceMode{informers.NamespaceModePerNamespace, informers.NamespaceModeClusterWide} {
		b.Run(fmt.Sprintf("enter/mode=%v/objects=1000", mode), func(b *testing.B) { benchmarkEnter(b, nb, entering, mode) })
	}
}

// benchmarkEnter measures, per op, the time from labelling namespace
// entering team=a to the last of its 1 000 adds delivered, in mode.
func benchmarkEnter(b *testing.B, nb *namespaceBench, entering string, mode informers.NamespaceMode) {
	f := nb.factory()
	inf := informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), NamespaceMode: informers.Set(mode)}})
	var adds, deletes atomic.Int64
	if _, err := inf.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{
		OnAdd: func(cm *corev1.ConfigMap, _ bool) {
			if cm.Namespace == entering {
				adds.Add(1)
			}
		},
		OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) {
			if d.Key.Namespace == entering {
				deletes.Add(1)
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer func() {
		cancel()
		_ = f.Shutdown(context.Background())
	}()
	f.Start(ctx)
	if err := informers.WaitForSync(ctx, f); err != nil {
		b.Fatal(err)
	}
	wait := func(n *atomic.Int64, want int64) {
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		if err := bf.PollUntil(wctx, func() bool { return n.Load() == want }); err != nil {
			b.Fatalf("%d of %d events: %v", n.Load(), want, err)
		}
	}
	label := func(team string) {
		mustWrite(b)(nb.namespaces.Update(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: entering, Labels: map[string]string{"team": team}}}))
	}
	var round int64
	for b.Loop() {
		round++
		label("a")
		wait(&adds, 1000*round)
		b.StopTimer()
		label("b")
		wait(&deletes, 1000*round)
		b.StartTimer()
	}
}
