package controllerruntime

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubetyped/informers"
)

// Options are the settings of a Cache that cache.Options has no field for.
// The zero value is the default.
type Options struct {
	// Decoding says how objects are decoded; see Decoding.
	Decoding Decoding
	// NamespaceSelector, a label selector on Namespace objects ("team=a"),
	// limits the namespaced types cached in all namespaces to the objects
	// of the namespaces it selects, following their labels while the
	// cache runs: a namespace that enters brings its objects (handlers
	// see adds), one that leaves takes them away (handlers see deletes),
	// and the cache never holds the objects of other namespaces (Get of
	// one returns NotFound, List leaves it out). It
	// combines with the label and field selectors and transforms of
	// cache.Options; namespaces listed in DefaultNamespaces or
	// ByObject.Namespaces are cached as listed, not selected. The cache
	// then reads Namespace objects too (a ClusterRole to list and watch
	// them). See the informers package's Tuning.NamespaceSelector and
	// docs/namespaces.md.
	NamespaceSelector string
	// NamespaceSelectorByObject overrides NamespaceSelector for the types
	// of its objects, as ByObject does for the other selectors; "" caches
	// a type in all namespaces.
	NamespaceSelectorByObject map[client.Object]string
	// NamespaceMode says how a type with a namespace selector is watched:
	// a list+watch per selected namespace (which works with Role-only
	// RBAC), one cluster-wide watch filtered by the cache, or (the zero
	// value) whichever suits the selection.
	NamespaceMode informers.NamespaceMode
	// Views are the views the cache serves, each given by an object of its
	// Go type, as in ByObject, with the resource it views:
	//
	//	Views: map[client.Object]schema.GroupVersionResource{
	//		&PodView{}: corev1.SchemeGroupVersion.WithResource("pods"),
	//	},
	//
	// A view is a struct of the fields of a resource a controller reads,
	// under the JSON names of the resource's type, with its metadata (an
	// informers.ViewMeta or a metav1.ObjectMeta) under "metadata", as the
	// informers package's ViewMeta describes; the cache decodes each
	// object straight into it, so that it holds only those fields. Being
	// a client.Object of its own, a view is registered in the scheme
	// under a kind of its own, which no server serves, with its list type
	// for List (PodView and PodViewList); Get, List, GetInformer,
	// IndexField and controllers' watches (builder.For, source.Kind) then
	// serve it as any type, its settings in ByObject, SkipFields and
	// NamespaceSelectorByObject given by a view object. A view of a
	// built-in type is checked against the type's fields when it is first
	// asked for (a field the type has not is an error naming it).
	//
	// Never write a view back: it holds only the fields it names, and an
	// update made from one (its JSON sent as the object, or a full object
	// filled from it) drops every field it omits. The client refuses to
	// write a view itself, its REST mapper knowing no resource of the
	// view's kind; change objects with patches of the fields you own,
	// through the full type or unstructured. See docs/adapters.md and
	// docs/memory.md.
	Views map[client.Object]schema.GroupVersionResource
}

// NewCacheWithOptions returns a cache.NewCacheFunc, for the manager's
// NewCache option, whose caches are configured by o as well:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		NewCache: controllerruntime.NewCacheWithOptions(controllerruntime.Options{NamespaceSelector: "team=a"}),
//	})
func NewCacheWithOptions(o Options) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		return NewWithOptions(cfg, opts, o)
	}
}

// NewWithOptions is New with Options.
func NewWithOptions(cfg *rest.Config, opts cache.Options, o Options) (*Cache, error) {
	c, err := newCache(cfg, opts, o.Views)
	if err != nil {
		return nil, err
	}
	if err := c.setDecoding(o.Decoding); err != nil {
		return nil, err
	}
	if o.Decoding.Disable && len(o.Views) > 0 {
		return nil, errors.New("controllerruntime: Decoding.Disable cannot be set with Views: the library's decoders are the only ones that decode views")
	}
	sel := namespaceSelection{namespaceSelector: o.NamespaceSelector, namespaceMode: o.NamespaceMode}
	for obj, s := range o.NamespaceSelectorByObject {
		gvk, err := apiutil.GVKForObject(obj, c.scheme)
		if err != nil {
			return nil, fmt.Errorf("controllerruntime: NamespaceSelectorByObject: %w", err)
		}
		if sel.byObject == nil {
			sel.byObject = map[schema.GroupVersionKind]string{}
		}
		sel.byObject[gvk] = s
	}
	if !sel.any() {
		return c, nil
	}
	cs, err := kubernetes.NewForConfigAndClient(c.config, c.httpClient)
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: client of namespaces: %w", err)
	}
	nss := cs.CoreV1().Namespaces()
	c.namespaces, err = informers.NewInformer(informers.NewListWatch[*corev1.Namespace](nss.List, nss.Watch), informers.Options[*corev1.Namespace]{})
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: informer of namespaces: %w", err)
	}
	c.namespaceSelection = sel
	return c, nil
}

// namespaceSelection is the namespace selectors of a Cache.
type namespaceSelection struct {
	namespaceSelector string
	byObject          map[schema.GroupVersionKind]string
	namespaceMode     informers.NamespaceMode
}

// any reports whether some type has a namespace selector.
func (s namespaceSelection) any() bool {
	if s.namespaceSelector != "" {
		return true
	}
	for _, sel := range s.byObject {
		if sel != "" {
			return true
		}
	}
	return false
}

// namespaceSelectorFor returns the namespace selector of the informer of
// kind gvk caching namespace ns (all for cache.AllNamespaces): "" for a
// cluster-scoped kind or a namespace of its own.
func (s namespaceSelection) namespaceSelectorFor(gvk schema.GroupVersionKind, namespaced bool, ns string) string {
	if !namespaced || ns != cache.AllNamespaces {
		return ""
	}
	if sel, ok := s.byObject[gvk]; ok {
		return sel
	}
	return s.namespaceSelector
}

// runNamespacesLocked runs the Namespace informer, if the cache has one,
// until the cache stops.
func (c *Cache) runNamespacesLocked() {
	if c.namespaces == nil {
		return
	}
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		if err := c.namespaces.Run(c.ctx); err != nil {
			klog.FromContext(c.ctx).Error(err, "Informer of namespaces did not run")
		}
	}()
}
