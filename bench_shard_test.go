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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/shard"
)

// BenchmarkShardedSync measures the initial sync of one replica of four
// over 40k realistic pods, beside an unsharded informer: from creating the
// informer until a handler has been delivered every object it keeps. The
// list function plays the server and makes fresh objects each time, as
// decoding does: with server-side filtering it makes only the shard's
// pods (the server's own filtering is not timed), with client-side
// filtering all 40k, of which the informer keeps a quarter. Besides ns/op
// it reports peak-MB, retained-MB and the pods kept.
func BenchmarkShardedSync(b *testing.B) {
	const count, shards = 40_000, 4
	pods := benchPods(count, false)
	mine := shard.Of(shard.ByUID, 0, shards)
	var inShard []int
	for i := range pods.Len() {
		if mine.Contains(pods.Pod(i)) {
			inShard = append(inShard, i)
		}
	}
	variants := []struct {
		name          string
		shard         *shard.Shard
		serverFilters bool
	}{
		{"unsharded", nil, false},
		{"shard=1of4/filter=server", &mine, true},
		{"shard=1of4/filter=client", &mine, false},
	}
	for _, v := range variants {
		b.Run(fmt.Sprintf("pods=%d/%s", count, v.name), func(b *testing.B) {
			list := func(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
				if !v.serverFilters || opts.ShardSelector == "" {
					return pods.Fresh(), nil
				}
				l := pods.FreshSubset(inShard)
				l.ShardInfo = &metav1.ShardInfo{Selector: opts.ShardSelector}
				return l, nil
			}
			want := int64(count)
			if v.shard != nil {
				want = int64(len(inShard))
			}
			lw := informers.NewListWatch[*corev1.Pod](list, idleWatchFunc)
			lw.DisableWatchList = true // a sharded informer lists; so does this one
			benchShardedSync(b, lw, v.shard, want)
		})
	}
}

func idleWatchFunc(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return idleWatch(), nil
}

func benchShardedSync(b *testing.B, lw *informers.ListWatch[*corev1.Pod, *corev1.PodList], s *shard.Shard, want int64) {
	syncOnce := func() (stop func(), peak uint64) {
		inf, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Shard: s})
		if err != nil {
			b.Fatal(err)
		}
		var adds atomic.Int64
		all := make(chan struct{})
		if _, err := inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(*corev1.Pod, bool) {
			if adds.Add(1) == want {
				close(all)
			}
		}}); err != nil {
			b.Fatal(err)
		}
		hp := bf.StartHeapPeak(time.Millisecond)
		// The informer logs which filter is in effect: not into the results.
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = inf.Run(ctx)
		}()
		<-all
		peak = hp.Stop()
		if got := int64(inf.Lister().Len()); got != want {
			b.Fatalf("cached %d pods, want %d", got, want)
		}
		return func() { cancel(); <-done }, peak
	}
	var peakSum, retainedSum float64
	base := bf.LiveHeap()
	for b.Loop() {
		stop, peak := syncOnce()
		b.StopTimer()
		peakSum += float64(peak) - float64(base)
		retainedSum += float64(bf.LiveHeap()) - float64(base)
		stop()
		base = bf.LiveHeap()
		b.StartTimer()
	}
	iters := float64(b.N)
	b.ReportMetric(bf.MB(peakSum/iters), "peak-MB")
	b.ReportMetric(bf.MB(retainedSum/iters), "retained-MB")
	b.ReportMetric(float64(want), "pods-kept")
}
