package informers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchSource is what every implementation under test lists and watches: the
// same functions, so the same objects, for all of them.
type benchSource struct {
	// List returns the list (or the page) to sync from; it is called for
	// every list request.
	List func(metav1.ListOptions) (*corev1.PodList, error)
	// Watch returns the watch that follows a list; it is called for every
	// watch.
	Watch func() watch.Interface
	// ListBytes, if set, returns the page List decodes, as the server
	// sends it (fixture=wire): ours decodes it its own way, the others
	// take List's, decoded by client-go's codecs.
	ListBytes func(metav1.ListOptions) ([]byte, error)
	// WatchFrames, if set, returns the watch stream, in protobuf frames,
	// that ours decodes its own way instead of calling Watch.
	WatchFrames func() io.ReadCloser
}

// benchHandler is the handler work of a benchmark, written once and adapted to
// each implementation's handler interface. Nil fields do nothing.
type benchHandler struct {
	Add    func(p *corev1.Pod)
	Update func(oldPod, newPod *corev1.Pod)
	Delete func(p *corev1.Pod)
}

func (h benchHandler) add(p *corev1.Pod) {
	if h.Add != nil {
		h.Add(p)
	}
}

func (h benchHandler) update(o, n *corev1.Pod) {
	if h.Update != nil {
		h.Update(o, n)
	}
}

func (h benchHandler) delete(p *corev1.Pod) {
	if h.Delete != nil {
		h.Delete(p)
	}
}

// benchCacheOptions configures a cache under test.
type benchCacheOptions struct {
	// Resync is the handlers' resync period; 0 means none.
	Resync time.Duration
	// NodeIndex adds an index of pods by spec.nodeName called benchNodeIndex.
	NodeIndex bool
	// StripManagedFields drops managedFields before caching.
	StripManagedFields bool
	// DisableDecoder turns our decoder off (ours only, fixture=wire).
	DisableDecoder bool
	// SkipManagedFields has ours never decode managedFields.
	SkipManagedFields bool
}

// benchNodeIndex is the name of the index by spec.nodeName.
const benchNodeIndex = "node"

// benchCache is an implementation under test: an informer, or the floor.
type benchCache interface {
	// AddHandler registers h; remove unregisters it.
	AddHandler(h benchHandler) (remove func(), err error)
	// Start runs the cache in the background.
	Start()
	// HasSynced reports whether the initial list is in the cache.
	HasSynced() bool
	// Stop stops the cache and waits for its goroutines.
	Stop()
}

// benchImpl names an implementation and builds caches of it.
type benchImpl struct {
	Name string
	New  func(benchSource, benchCacheOptions) (benchCache, error)
}

// The implementations under test.
var (
	// benchClientGoImpl is client-go's SharedIndexInformer with untyped
	// handlers, which assert the type of what they are given.
	benchClientGoImpl = benchImpl{"clientgo", func(s benchSource, o benchCacheOptions) (benchCache, error) { return benchNewClientGo(s, o) }}
	// clientgo-typed, the same informer through client-go's typed
	// wrappers, is in bench_clientgo_typed_test.go.
	// benchInformersImpl is ours.
	benchInformersImpl = benchImpl{"informers", func(s benchSource, o benchCacheOptions) (benchCache, error) { return benchNewInformers(s, o) }}
	// benchFloorImpl is the least work possible; see benchFloorCache.
	benchFloorImpl = benchImpl{"floor", func(s benchSource, o benchCacheOptions) (benchCache, error) { return benchNewFloorCache(s, o), nil }}
)

// benchErrWatchListOn is returned when client-go would stream its initial state
// with watch-list: the benchmarks compare list and watch with list and
// watch.
var benchErrWatchListOn = errors.New("client-go's WatchListClient feature gate is still on")

// benchWatchListOff turns client-go's WatchListClient feature gate off, once,
// when a benchmark first needs client-go, and for the rest of the test
// binary: benchmarks run after the tests and examples, which keep client-go's
// defaults. benchfixtures.SetClientGoWatchList says how.
var benchWatchListOff = sync.OnceValue(func() error { return bf.SetClientGoWatchList(false) })

// benchSetClientGoWatchList sets client-go's WatchListClient feature gate,
// which its reflectors read when they are created.
func benchSetClientGoWatchList(on bool) error {
	if err := benchWatchListOff(); err != nil {
		return err
	}
	return bf.SetClientGoWatchList(on)
}

// benchClientGoWatchListFor sets client-go's WatchListClient gate to on
// for b, and turns it off again when b ends.
func benchClientGoWatchListFor(b *testing.B, on bool) {
	b.Helper()
	if err := benchSetClientGoWatchList(on); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := benchSetClientGoWatchList(false); err != nil {
			b.Error(err)
		}
	})
}

// benchCheckClientGoListWatch turns client-go's watch-list off
// (benchWatchListOff) and returns an error unless client-go's informers will
// list and watch.
func benchCheckClientGoListWatch() error {
	if err := benchWatchListOff(); err != nil {
		return err
	}
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		return benchErrWatchListOn
	}
	return nil
}

// benchClientGo is a client-go SharedIndexInformer under test.
type benchClientGo struct {
	Informer cache.SharedIndexInformer
	// addTyped, for clientgo-typed, adds a handler through client-go's
	// typed wrappers (bench_clientgo_typed_test.go); nil for clientgo.
	addTyped func(benchHandler) (cache.ResourceEventHandlerRegistration, error)
	stopCh   chan struct{}
	wg       sync.WaitGroup
}

// benchNewClientGo returns a client-go informer over s with the namespace
// index (and the node index if asked).
func benchNewClientGo(s benchSource, o benchCacheOptions) (*benchClientGo, error) {
	if err := benchCheckClientGoListWatch(); err != nil {
		return nil, err
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if o.NodeIndex {
		indexers[benchNodeIndex] = func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		}
	}
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.List(opts)
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return s.Watch(), nil
		},
	}, &corev1.Pod{}, cache.SharedIndexInformerOptions{ResyncPeriod: o.Resync, Indexers: indexers})
	if o.StripManagedFields {
		// What controller-runtime's cache.TransformStripManagedFields does.
		if err := inf.SetTransform(func(obj any) (any, error) {
			if m, err := apimeta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}); err != nil {
			return nil, err
		}
	}
	return &benchClientGo{Informer: inf, stopCh: make(chan struct{})}, nil
}

// AddHandler adds h as client-go users write handlers: typed functions for
// the typed informer; functions of interface{} with type assertions, and
// a tombstone check on delete, for the untyped one.
func (c *benchClientGo) AddHandler(h benchHandler) (func(), error) {
	var reg cache.ResourceEventHandlerRegistration
	var err error
	if c.addTyped != nil {
		reg, err = c.addTyped(h)
	} else {
		reg, err = c.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { h.add(obj.(*corev1.Pod)) },
			UpdateFunc: func(o, n any) { h.update(o.(*corev1.Pod), n.(*corev1.Pod)) },
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				h.delete(obj.(*corev1.Pod))
			},
		})
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = c.Informer.RemoveEventHandler(reg) }, nil
}

// Start runs the informer.
func (c *benchClientGo) Start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.Informer.Run(c.stopCh)
	}()
}

// HasSynced reports whether the informer has synced.
func (c *benchClientGo) HasSynced() bool { return c.Informer.HasSynced() }

// Stop stops the informer and waits for Run to return.
func (c *benchClientGo) Stop() {
	close(c.stopCh)
	c.wg.Wait()
}

// benchInformers is our informer under test.
type benchInformers struct {
	Informer *informers.SharedInformer[*corev1.Pod]
	// Nodes is the node index, if asked for.
	Nodes  *informers.Index[*corev1.Pod]
	cancel context.CancelFunc
	done   chan error
}

// benchNewInformers returns our informer over s, listing and watching (watch-
// list streaming off, as for client-go).
func benchNewInformers(s benchSource, o benchCacheOptions) (*benchInformers, error) {
	opts := informers.Options[*corev1.Pod]{Tuning: informers.Tuning{ResyncPeriod: informers.Set(o.Resync), DisableDecoder: informers.Set(o.DisableDecoder)}}
	if o.StripManagedFields {
		opts.Transform = informers.StripManagedFields[*corev1.Pod]()
	}
	if o.SkipManagedFields {
		opts.SkipFields = []string{"metadata.managedFields"}
	}
	var inf *informers.SharedInformer[*corev1.Pod]
	var err error
	if s.ListBytes != nil {
		inf, err = benchNewWireInformer(s, opts)
	} else {
		lw := informers.NewListWatch[*corev1.Pod](
			func(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) { return s.List(opts) },
			func(context.Context, metav1.ListOptions) (watch.Interface, error) { return s.Watch(), nil },
		)
		lw.DisableWatchList = true
		inf, err = informers.NewInformer(lw, opts)
	}
	if err != nil {
		return nil, err
	}
	c := &benchInformers{Informer: inf}
	if o.NodeIndex {
		c.Nodes, err = inf.AddIndex(benchNodeIndex, func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} })
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AddHandler adds h through HandlerFuncs.
func (c *benchInformers) AddHandler(h benchHandler) (func(), error) {
	reg, err := c.Informer.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod, _ bool) { h.add(p) },
		OnUpdate: h.update,
		OnDelete: func(d informers.Deleted[*corev1.Pod]) { h.delete(d.Object) },
	})
	if err != nil {
		return nil, err
	}
	return reg.Remove, nil
}

// Start runs the informer.
func (c *benchInformers) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan error, 1)
	go func() { c.done <- c.Informer.Run(ctx) }()
}

// HasSynced reports whether the informer has synced.
func (c *benchInformers) HasSynced() bool { return c.Informer.HasSynced() }

// Stop stops the informer and waits for Run to return.
func (c *benchInformers) Stop() {
	c.cancel()
	if err := <-c.done; err != nil {
		panic(fmt.Sprintf("benchfixtures: informer: %v", err))
	}
}

// benchFloorCache is the least work an informer can do: one goroutine lists
// into a bf.Floor, then applies each watch event to it and calls the handlers
// directly. It does not relist, resync, or protect handlers from each
// other; it is a lower bound, not an alternative.
type benchFloorCache struct {
	*bf.Floor
	src      benchSource
	handlers []benchHandler
	synced   atomic.Bool
	watcher  chan watch.Interface
	done     chan struct{}
}

// benchNewFloorCache returns a floor cache over s.
func benchNewFloorCache(s benchSource, o benchCacheOptions) *benchFloorCache {
	return &benchFloorCache{Floor: bf.NewFloor(o.NodeIndex), src: s, watcher: make(chan watch.Interface, 1), done: make(chan struct{})}
}

// AddHandler adds h; it must be called before Start, and cannot be
// removed.
func (f *benchFloorCache) AddHandler(h benchHandler) (func(), error) {
	f.handlers = append(f.handlers, h)
	return func() {}, nil
}

// Start lists, then watches on a goroutine of its own.
func (f *benchFloorCache) Start() {
	go func() {
		defer close(f.done)
		opts := metav1.ListOptions{Limit: benchPageSize}
		for {
			list, err := f.src.List(opts)
			if err != nil {
				panic(fmt.Sprintf("benchfixtures: floor: %v", err))
			}
			for i := range list.Items {
				p := &list.Items[i]
				f.Put(p)
				for _, h := range f.handlers {
					h.add(p)
				}
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
		w := f.src.Watch()
		f.watcher <- w
		f.synced.Store(true)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				old := f.Put(p)
				for _, h := range f.handlers {
					if old != nil {
						h.update(old, p)
					} else {
						h.add(p)
					}
				}
			case watch.Deleted:
				if f.Delete(p) != nil {
					for _, h := range f.handlers {
						h.delete(p)
					}
				}
			}
		}
	}()
}

// HasSynced reports whether the list is in.
func (f *benchFloorCache) HasSynced() bool { return f.synced.Load() }

// Stop stops the watch and waits for the goroutine; the cache must have
// synced.
func (f *benchFloorCache) Stop() {
	(<-f.watcher).Stop()
	<-f.done
}
