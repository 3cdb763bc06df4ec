package informers_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// The library's decoder against client-go's codecs and the generated code,
// on sources that serve bytes as the server does (fixture=wire, and watch
// events as frames). The impls:
//
//	informers            ours with default options: the library's decoder
//	informers-nodecoder  ours with Options.DisableDecoder: lists decoded by
//	                     client-go's codecs, watches by the generated code
//	informers-skip       the decoder with SkipFields metadata.managedFields
//	informers-view       a view of the fields a controller reads, and
//	informers-view-empty of the metadata alone (see bench_view_test.go)
//	clientgo, floor      as elsewhere, decoding with client-go's codecs

// benchWireSyncVariants are the variants of InitialSync on fixture=wire.
func benchWireSyncVariants(managedFields bool) []benchSyncVariant {
	v := []benchSyncVariant{
		{"clientgo", benchClientGoImpl, benchCacheOptions{}},
		{"informers", benchInformersImpl, benchCacheOptions{}},
		{"informers-nodecoder", benchInformersImpl, benchCacheOptions{DisableDecoder: true}},
		{"informers-view", benchViewImpl, benchCacheOptions{}},
		{"informers-view-empty", benchEmptyViewImpl, benchCacheOptions{}},
		{"floor", benchFloorImpl, benchCacheOptions{}},
	}
	if managedFields {
		v = append(v,
			benchSyncVariant{"clientgo-strip", benchClientGoImpl, benchCacheOptions{StripManagedFields: true}},
			benchSyncVariant{"informers-skip", benchInformersImpl, benchCacheOptions{SkipManagedFields: true}},
		)
	}
	return v
}

// benchNewWireInformer returns our informer over s, which serves bytes,
// decoded as opts say.
func benchNewWireInformer(s benchSource, opts informers.Options[*corev1.Pod]) (*informers.SharedInformer[*corev1.Pod], error) {
	lw, err := informers.WireListWatch(opts, s.ListBytes, s.WatchFrames)
	if err != nil {
		return nil, err
	}
	if s.WatchFrames == nil {
		lw.WatchFunc = func(context.Context, metav1.ListOptions) (watch.Interface, error) { return s.Watch(), nil }
	}
	lw.DisableWatchList = true
	return informers.NewInformer(lw, opts)
}

// BenchmarkUpdateFrames is BenchmarkUpdate with each update sent as the
// server sends it, a protobuf frame of a watch stream, which the informer
// decodes: ours with its decoder (as users get it) and without it (the
// generated code, the default before the decoder). The initial list is
// fixture=wire's. One op is one event.
func BenchmarkUpdateFrames(b *testing.B) {
	const count = 10_000
	pods := benchPods(count, false)
	wire := benchWire(b, count, false, bf.Protobuf)
	frames := benchEventFrames(b, benchEvents(pods))
	for _, v := range []benchSyncVariant{
		{"informers", benchInformersImpl, benchCacheOptions{}},
		{"informers-nodecoder", benchInformersImpl, benchCacheOptions{DisableDecoder: true}},
	} {
		b.Run(fmt.Sprintf("pods=%d/handlers=1/impl=%s", count, v.name), func(b *testing.B) {
			benchUpdateFrames(b, v, wire, frames)
		})
	}
}

// benchEventFrames encodes events as the Modified frames of a watch
// stream.
func benchEventFrames(b *testing.B, events [2][]*corev1.Pod) [2][][]byte {
	var frames [2][][]byte
	for v := range events {
		frames[v] = make([][]byte, len(events[v]))
		for i, p := range events[v] {
			f, err := bf.WatchFrame(watch.Modified, p)
			if err != nil {
				b.Fatal(err)
			}
			frames[v][i] = f
		}
	}
	return frames
}

func benchUpdateFrames(b *testing.B, v benchSyncVariant, wire *bf.WirePods, frames [2][][]byte) {
	r, w := io.Pipe()
	defer w.Close()
	var adds, updates benchCounter
	src := benchSource{List: wire.List, ListBytes: wire.ListBytes, WatchFrames: func() io.ReadCloser { return r }}
	c := benchStart(b, v.impl, src, v.opts, benchHandler{
		Add:    func(*corev1.Pod) { adds.Add(1) },
		Update: func(_, _ *corev1.Pod) { updates.Add(1) },
	})
	defer c.Stop()
	benchWait(b, func() bool { return adds.Load() == int64(wire.Len()) })
	rng := rand.New(rand.NewPCG(1, 2))
	version := make([]uint8, wire.Len())
	b.ReportAllocs()
	for b.Loop() {
		k := rng.IntN(len(version))
		if _, err := w.Write(frames[version[k]][k]); err != nil {
			b.Fatal(err)
		}
		version[k] ^= 1
	}
	b.StartTimer() // the events still in flight are part of the work
	benchWait(b, func() bool { return updates.Load() >= int64(b.N) })
	b.StopTimer()
}
