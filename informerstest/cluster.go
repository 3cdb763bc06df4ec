package informerstest

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
)

// Cluster serves Sources of several resources to a Factory, as its
// FactoryOptions.Server, so that a controller built on a Factory can be
// tested through what client-go's fake clientset cannot do: resource
// versions, compaction, closed watches and failing requests.
//
//	pods := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
//	cluster := informerstest.NewCluster()
//	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), pods)
//	factory := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster})
//
// It is safe for concurrent use. The zero value is not usable; call
// NewCluster.
type Cluster struct {
	mu      sync.Mutex
	sources map[schema.GroupVersionResource]served
}

// served is a Source with its types erased.
type served struct {
	list  func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error)
}

var _ informers.Server = (*Cluster)(nil)

// NewCluster returns a cluster that serves no resource yet.
func NewCluster() *Cluster {
	return &Cluster{sources: make(map[schema.GroupVersionResource]served)}
}

// Serve makes c serve src as resource gvr, replacing any source it served
// as gvr before.
func Serve[T informers.Object, L informers.List](c *Cluster, gvr schema.GroupVersionResource, src *Source[T, L]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources[gvr] = served{
		list: func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return src.List(ctx, ns, opts)
		},
		watch: src.Watch,
	}
}

// List serves a list request of resource gvr.
func (c *Cluster) List(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (runtime.Object, error) {
	s, err := c.source(gvr)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, ns, opts)
}

// Watch serves a watch request of resource gvr.
func (c *Cluster) Watch(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	s, err := c.source(gvr)
	if err != nil {
		return nil, err
	}
	return s.watch(ctx, ns, opts)
}

// source returns the source of gvr, or the 404 a server gives for a
// resource it does not serve.
func (c *Cluster) source(gvr schema.GroupVersionResource) (served, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sources[gvr]
	if !ok {
		return served{}, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	return s, nil
}
