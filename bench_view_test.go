package informers_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
)

// Views on fixture=wire (see benchWireSyncVariants): the pods decoded
// straight into a view of the fields a controller reads.
//
//	informers-view        a view of what a pod controller reads: name, namespace, labels,
//	                      owner references, spec.nodeName, the containers'
//	                      names and images, status.phase and the
//	                      conditions' types and statuses
//	informers-view-empty  a view of the metadata alone (ViewMeta): the
//	                      least a view of these pods costs

var (
	// benchViewImpl is ours caching podView, the view of view_test.go.
	benchViewImpl = benchImpl{"informers-view", func(s benchSource, o benchCacheOptions) (benchCache, error) {
		return benchNewViewInformer[*podView](s, o)
	}}
	// benchEmptyViewImpl is ours caching metaView, metadata only.
	benchEmptyViewImpl = benchImpl{"informers-view-empty", func(s benchSource, o benchCacheOptions) (benchCache, error) {
		return benchNewViewInformer[*metaView](s, o)
	}}
)

// benchViewInformer is our informer of views of type V.
type benchViewInformer[V informers.Object] struct {
	informer *informers.SharedInformer[V]
	cancel   context.CancelFunc
	done     chan error
}

// benchNewViewInformer returns our informer of views of type V over s,
// which must serve bytes (fixture=wire).
func benchNewViewInformer[V informers.Object](s benchSource, o benchCacheOptions) (*benchViewInformer[V], error) {
	if s.ListBytes == nil {
		return nil, errors.New("views decode the bytes of fixture=wire")
	}
	opts := informers.Options[V]{Tuning: informers.Tuning{ResyncPeriod: informers.Set(o.Resync)}}
	if o.SkipManagedFields {
		opts.SkipFields = []string{"metadata.managedFields"}
	}
	lw, err := informers.WireViewListWatch(opts, corev1.SchemeGroupVersion.WithResource("pods"), s.ListBytes)
	if err != nil {
		return nil, err
	}
	lw.WatchFunc = func(context.Context, metav1.ListOptions) (watch.Interface, error) { return s.Watch(), nil }
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, opts)
	if err != nil {
		return nil, err
	}
	return &benchViewInformer[V]{informer: inf}, nil
}

// AddHandler adds h, which is told of adds, updates and deletes with no
// pod: a view is none.
func (c *benchViewInformer[V]) AddHandler(h benchHandler) (func(), error) {
	reg, err := c.informer.AddHandler(informers.HandlerFuncs[V]{
		OnAdd:    func(V, bool) { h.add(nil) },
		OnUpdate: func(V, V) { h.update(nil, nil) },
		OnDelete: func(informers.Deleted[V]) { h.delete(nil) },
	})
	if err != nil {
		return nil, err
	}
	return reg.Remove, nil
}

// Start runs the informer.
func (c *benchViewInformer[V]) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan error, 1)
	go func() { c.done <- c.informer.Run(ctx) }()
}

// HasSynced reports whether the informer has synced.
func (c *benchViewInformer[V]) HasSynced() bool { return c.informer.HasSynced() }

// Stop stops the informer and waits for Run to return.
func (c *benchViewInformer[V]) Stop() {
	c.cancel()
	if err := <-c.done; err != nil {
		panic(fmt.Sprintf("benchfixtures: view informer: %v", err))
	}
}
