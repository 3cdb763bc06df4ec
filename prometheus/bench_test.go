package prometheus_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	informersprom "github.com/kubetyped/informers/prometheus"
)

// BenchmarkUpdate is the library's BenchmarkUpdate (bench_test.go at the
// repository root) for our informer alone, with and without this
// package's metrics: the same 10k realistic pods, updates sent through a
// buffered fake watch and delivered to one handler; one op is one event,
// waited for until the handler has seen it. The metrics=prometheus case
// counts every event, observes its latency in the histogram and keeps
// the gauges scrapeable.
func BenchmarkUpdate(b *testing.B) {
	const count = 10_000
	pods := bf.NewPodList(count, bf.PodOptions{Namespaces: 50, Nodes: 500, Seed: 1})
	var events [2][]*corev1.Pod
	for v := range events {
		events[v] = make([]*corev1.Pod, pods.Len())
		for i := range events[v] {
			events[v][i] = bf.Modified(pods.Pod(i), 1_000_000*(v+1)+i)
		}
	}
	for _, metrics := range []string{"none", "prometheus"} {
		b.Run(fmt.Sprintf("pods=%d/handlers=1/metrics=%s", count, metrics), func(b *testing.B) {
			var m informers.Metrics
			if metrics == "prometheus" {
				pm, err := informersprom.New(prom.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				m = pm
			}
			benchUpdate(b, pods, events, m)
		})
	}
}

func benchUpdate(b *testing.B, pods *bf.PodList, events [2][]*corev1.Pod, m informers.Metrics) {
	w := watch.NewFakeWithChanSize(1024, false)
	lw := &informers.ListWatch[*corev1.Pod, *corev1.PodList]{
		ListFunc: func(context.Context, metav1.ListOptions) (*corev1.PodList, error) { return pods.Fresh(), nil },
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return w, nil
		},
		DisableWatchList: true,
	}
	inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m)}})
	if err != nil {
		b.Fatal(err)
	}
	var adds, updates atomic.Int64
	if _, err := inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(*corev1.Pod, bool) { adds.Add(1) },
		OnUpdate: func(_, _ *corev1.Pod) { updates.Add(1) },
	}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	wait := func(counter *atomic.Int64, n int64) {
		deadline := time.Now().Add(time.Minute)
		for counter.Load() < n {
			if time.Now().After(deadline) {
				b.Fatalf("handler saw %d events of %d", counter.Load(), n)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	wait(&adds, int64(pods.Len()))

	rng := rand.New(rand.NewPCG(1, 2))
	version := make([]uint8, pods.Len())
	b.ReportAllocs()
	for b.Loop() {
		k := rng.IntN(len(version))
		w.Modify(events[version[k]][k])
		version[k] ^= 1
	}
	b.StartTimer() // the events still in flight are part of the work
	wait(&updates, int64(b.N))
	b.StopTimer()
}
