package informers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// InitialSync on fixture=server: realistic pods with managedFields served
// over HTTP by an API server in this process (benchfixtures.PodServer),
// which writes every body in flushed chunks of 64 KiB from pods encoded
// once, so that each implementation reads and decodes the responses by
// its real client path as they arrive. The encoded pods are kept outside
// the Go heap, and the server allocates little (about 11 KB a page, 13 KB
// a watch-list stream, the client's transport included), so that the
// heap figures are the client's. The paths:
//
//	path=watchlist     a watch-list stream: an Added event per pod, then
//	                   the bookmark that ends the initial events (client-go's
//	                   WatchListClient gate on, for client-go and ours)
//	path=list          lists in pages of 500 (limit and continue honoured,
//	                   as etcd serves them), then a watch (the gate off, and
//	                   FactoryOptions.DisableWatchList for ours)
//	path=list-pages=1  the same, but the list at resource version "0" is
//	                   answered whole, its limit ignored, as kube-apiserver's
//	                   watch cache does
//
// The impls:
//
//	clientgo              client-go's informer of the clientset
//	                      (informers/core/v1.NewPodInformer:
//	                      NewSharedIndexInformer over the clientset's
//	                      ListWatch, namespace index)
//	informers             our factory from the server's rest.Config, as
//	                      users get it: the library's decoder
//	informers-view        the same with the view of what a pod controller
//	                      reads, and
//	informers-view-empty  with the view of the metadata alone (see
//	                      bench_view_test.go)
//
// Each sync is checked: every pod added once and cached, the cache synced,
// no error reported, and the server asked for what the path says (one
// watch-list stream; a page per 500 pods; one list), else the benchmark
// fails.
//
// At 1M pods (INFORMERS_BENCH_1M), the encoded pods take 5.4 GB and ours
// keeps 3.1 GB: the process peaks at about 9 GB. client-go keeps about
// 14 GB, and its heap peaks at 1.4 to 1.9 times that (100k's ratios),
// beside the 5.4 GB: more than a machine of 24 GB holds, so select
// impl=informers there.

// benchMillionEnv, set to anything, adds a count of 1 000 000 pods to
// InitialSync's fixture=server and to Query.
const benchMillionEnv = "INFORMERS_BENCH_1M"

// benchMillion reports whether INFORMERS_BENCH_1M asks for 1M pods.
func benchMillion() bool { return os.Getenv(benchMillionEnv) != "" }

// benchServerPath is a way of syncing from the server.
type benchServerPath struct {
	name string
	// watchList is the setting of client-go's WatchListClient gate, and
	// whether ours may stream.
	watchList bool
	// wholeLists has the server answer a list at version "0" whole.
	wholeLists bool
}

var benchServerPaths = []benchServerPath{
	{name: "watchlist", watchList: true},
	{name: "list"},
	{name: "list-pages=1", wholeLists: true},
}

// check returns an error unless got, the requests of a sync of count
// pods, are what the path makes: one watch-list stream and no list; or
// lists, one per page of benchPageSize (one in all for wholeLists), and no
// watch-list stream. Watches are not counted: the watch after a list may
// not have been asked for yet.
func (p benchServerPath) check(got bf.PodServerRequests, count int) error {
	want := bf.PodServerRequests{WatchLists: 1}
	switch {
	case p.watchList:
	case p.wholeLists:
		want = bf.PodServerRequests{Lists: 1}
	default:
		want = bf.PodServerRequests{Lists: int64((count + benchPageSize - 1) / benchPageSize)}
	}
	got.Watches = 0
	if got != want {
		return fmt.Errorf("path=%s: the server answered %+v, want %+v", p.name, got, want)
	}
	return nil
}

// benchServerCache is a cache under test synced from a server.
type benchServerCache struct {
	synced func() bool
	len    func() int
	// lastErr returns the last error the cache reported, or nil.
	lastErr func() error
	// stop stops the cache and waits for its goroutines.
	stop func() error
}

// benchServerImpl is an implementation synced from a server: start
// builds a cache of the pods of the server cfg reaches, with a handler
// that calls onAdd for every pod added and onUpdate, unless nil, for
// every update, and starts it.
type benchServerImpl struct {
	name  string
	start func(ctx context.Context, cfg *rest.Config, watchList bool, onAdd, onUpdate func()) (*benchServerCache, error)
}

var benchServerImpls = []benchServerImpl{
	{"clientgo", benchServerClientGo},
	{"informers", benchServerInformers(informers.Options[*corev1.Pod]{})},
	{"informers-view", benchServerInformers(informers.Options[*podView]{Resource: podsResource})},
	{"informers-view-empty", benchServerInformers(informers.Options[*metaView]{Resource: podsResource})},
}

// benchServerClientGo starts client-go's pod informer of the clientset of
// cfg. Whether it streams is client-go's WatchListClient gate's to say,
// which the caller sets.
func benchServerClientGo(ctx context.Context, cfg *rest.Config, _ bool, onAdd, onUpdate func()) (*benchServerCache, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	inf := coreinformers.NewPodInformer(cs, metav1.NamespaceAll, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var lastErr atomic.Pointer[error]
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) { lastErr.Store(&err) }); err != nil {
		return nil, err
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { onAdd() }}
	if onUpdate != nil {
		h.UpdateFunc = func(any, any) { onUpdate() }
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	return &benchServerCache{
		synced:  inf.HasSynced,
		len:     func() int { return len(inf.GetStore().ListKeys()) },
		lastErr: func() error { return benchLoadErr(&lastErr) },
		stop:    func() error { cancel(); <-done; return nil },
	}, nil
}

// benchServerInformers returns how to start our factory's informer of T
// with opts, from cfg, streaming only if watchList.
func benchServerInformers[T informers.Object](opts informers.Options[T]) func(context.Context, *rest.Config, bool, func(), func()) (*benchServerCache, error) {
	return func(ctx context.Context, cfg *rest.Config, watchList bool, onAdd, onUpdate func()) (*benchServerCache, error) {
		var lastErr atomic.Pointer[error]
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{
			RESTConfig: cfg,
			Tuning:     informers.Tuning{DisableWatchList: informers.Set(!watchList), OnError: informers.Set(func(err error) { lastErr.Store(&err) })},
		})
		inf := informers.InformerWith(f, opts)
		h := informers.HandlerFuncs[T]{OnAdd: func(T, bool) { onAdd() }}
		if onUpdate != nil {
			h.OnUpdate = func(T, T) { onUpdate() }
		}
		if _, err := inf.AddHandler(h); err != nil {
			return nil, err
		}
		// Our informers log the progress of long syncs, which go test
		// would print between a benchmark's name and its figures.
		ctx, cancel := context.WithCancel(klog.NewContext(ctx, klog.FromContext(ctx).V(1)))
		f.Start(ctx)
		return &benchServerCache{
			synced:  inf.HasSynced,
			len:     func() int { return inf.Stats().Objects },
			lastErr: func() error { return benchLoadErr(&lastErr) },
			stop: func() error {
				cancel()
				return f.Shutdown(context.Background())
			},
		}, nil
	}
}

func benchLoadErr(p *atomic.Pointer[error]) error {
	if err := p.Load(); err != nil {
		return *err
	}
	return nil
}

// benchInitialSyncServer runs InitialSync's fixture=server at count pods.
// The pods are encoded when a sub-benchmark first needs them, and a
// path's server started then; both are dropped when the count's
// sub-benchmarks are done.
func benchInitialSyncServer(b *testing.B, count int) {
	var enc *bf.EncodedPods
	defer func() {
		if enc != nil {
			if err := enc.Close(); err != nil {
				b.Error(err)
			}
		}
	}()
	for _, path := range benchServerPaths {
		var srv *bf.PodServer
		for _, impl := range benchServerImpls {
			b.Run(fmt.Sprintf("pods=%d/fixture=server/path=%s/impl=%s", count, path.name, impl.name), func(b *testing.B) {
				if enc == nil {
					enc = benchEncodeServerPods(b, count)
				}
				if srv == nil {
					var err error
					if srv, err = bf.NewPodServer(enc, bf.PodServerOptions{WholeLists: path.wholeLists}); err != nil {
						b.Fatal(err)
					}
				}
				benchSyncFromServer(b, srv, path, impl)
			})
		}
		if srv != nil {
			srv.Close()
		}
	}
}

// benchEncodeServerPods encodes the pods of fixture=server: count of
// benchPods's, with managedFields. A list of more than 100k pods, which no
// other benchmark shares, is made for the purpose and not kept.
func benchEncodeServerPods(b *testing.B, count int) *bf.EncodedPods {
	b.Helper()
	var pods *bf.PodList
	if count <= 100_000 {
		pods = benchPods(count, true)
	} else {
		o := benchSpread
		o.ManagedFields = true
		pods = bf.NewPodList(count, o)
	}
	enc, err := bf.EncodePods(pods)
	if err != nil {
		b.Fatal(err)
	}
	return enc
}

// benchSyncFromServer measures syncs of impl from srv by path, each
// checked (see the comment at the top of this file).
func benchSyncFromServer(b *testing.B, srv *bf.PodServer, path benchServerPath, impl benchServerImpl) {
	benchClientGoWatchListFor(b, path.watchList)
	n := srv.Len()
	b.ReportAllocs()
	benchMeasureSync(b, n, func(onAdd func()) func() {
		before := srv.Requests()
		var adds atomic.Int64
		c, err := impl.start(b.Context(), srv.Config(), path.watchList, func() {
			adds.Add(1)
			onAdd()
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			defer func() {
				if err := c.stop(); err != nil {
					b.Error(err)
				}
			}()
			benchWait(b, c.synced)
			var errs []error
			if err := c.lastErr(); err != nil {
				errs = append(errs, fmt.Errorf("reported: %w", err))
			}
			if got := adds.Load(); got != int64(n) {
				errs = append(errs, fmt.Errorf("%d pods added, want %d", got, n))
			}
			if got := c.len(); got != n {
				errs = append(errs, fmt.Errorf("%d pods cached, want %d", got, n))
			}
			if err := path.check(srv.Requests().Sub(before), n); err != nil {
				errs = append(errs, err)
			}
			if err := errors.Join(errs...); err != nil {
				b.Fatalf("impl=%s: %v", impl.name, err)
			}
		}
	})
}

// benchSyncTimeout is how long benchMeasureSync waits for a sync.
const benchSyncTimeout = 10 * time.Minute
