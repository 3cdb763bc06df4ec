package controllerruntime

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/adapter"
)

// setViews makes the cache serve views, the kind of each of which, in the
// scheme, views the resource it maps to (Options.Views).
func (c *Cache) setViews(views map[client.Object]schema.GroupVersionResource) error {
	c.views = map[schema.GroupVersionKind]schema.GroupVersionResource{}
	for obj, gvr := range views {
		t := reflect.TypeOf(obj)
		gvk, err := apiutil.GVKForObject(obj, c.scheme)
		if err != nil {
			return fmt.Errorf("controllerruntime: Views: register the view %v in the scheme under a kind of its own: %w", t, err)
		}
		if gvr.Version == "" || gvr.Resource == "" {
			return fmt.Errorf("controllerruntime: Views: view %v (%v) views no resource: %q", t, gvk, gvr.String())
		}
		if _, err := adapter.NewViewDecoder(t, nil, nil); err != nil {
			return fmt.Errorf("controllerruntime: Views: %w", err)
		}
		c.views[gvk] = gvr
	}
	return nil
}

// mappingFor returns the REST mapping of the objects of kind gvk: for a
// view, that of the resource it views.
func (c *Cache) mappingFor(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	gvr, ok := c.views[gvk]
	if !ok {
		return c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	kind, err := c.mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("controllerruntime: the kind of %s, which view %v views: %w", gvr.String(), gvk, err)
	}
	return c.mapper.RESTMapping(kind.GroupKind(), kind.Version)
}

// isNamespaced reports whether the objects of obj's kind, gvk, are
// namespaced: for a view, those of the resource it views.
func (c *Cache) isNamespaced(obj client.Object, gvk schema.GroupVersionKind) (bool, error) {
	if _, ok := c.views[gvk]; !ok {
		return apiutil.IsObjectNamespaced(obj, c.scheme, c.mapper)
	}
	mapping, err := c.mappingFor(gvk)
	if err != nil {
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// viewListWatch lists and watches the views of kind gvk of the resource
// gvr, whose kind is viewed, in namespace ns ("" for all), through a
// REST client of the viewed kind, decoded by the view decoder of shared.
func (c *Cache) viewListWatch(gvk, viewed schema.GroupVersionKind, gvr schema.GroupVersionResource, ns string, shared *partDecoder) (*informers.ListWatch[client.Object, informers.List], error) {
	example, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if _, ok := example.(client.Object); !ok {
		return nil, fmt.Errorf("view %v is a %T, not a client.Object", gvk, example)
	}
	t := reflect.TypeOf(example)
	d, err := c.viewDecoderFor(t, viewed, shared)
	if err != nil {
		return nil, err
	}
	rc, err := apiutil.RESTClientForGVK(viewed, false, false, c.config, c.codecs, c.httpClient)
	if err != nil {
		return nil, err
	}
	dec := d.dec
	if d.unknown {
		sc, err := c.schemaChecker()
		if err != nil {
			return nil, err
		}
		if dec, err = dec.CheckedBy(sc, viewed, gvr); err != nil {
			return nil, err
		}
	}
	newObject := func() client.Object { return reflect.New(t.Elem()).Interface().(client.Object) }
	return adapter.ListWatch(c.requests(rc, gvr, ns), gvr, viewed.Kind, dec, newObject, c.codecs)
}

// schemaChecker returns the checker of views against the server's
// schemas, made once.
func (c *Cache) schemaChecker() (*adapter.SchemaChecker, error) {
	c.schemasOnce.Do(func() {
		var dc *discovery.DiscoveryClient
		if c.httpClient != nil {
			dc, c.schemasErr = discovery.NewDiscoveryClientForConfigAndClient(c.config, c.httpClient)
		} else {
			dc, c.schemasErr = discovery.NewDiscoveryClientForConfig(c.config)
		}
		if c.schemasErr == nil {
			c.schemas = adapter.NewSchemaChecker(dc.RESTClient())
		}
	})
	return c.schemas, c.schemasErr
}

// viewDecoderFor returns shared with the decoder of views of Go type t of
// kind viewed made: checked against viewed's Go type if the scheme, or
// client-go's, knows one, and decoded from its protobuf if that decodes
// from protobuf (a built-in type); decoded from JSON otherwise, and, if
// no scheme knows viewed, checked against the server's schema before each
// list and watch.
func (c *Cache) viewDecoderFor(t reflect.Type, viewed schema.GroupVersionKind, shared *partDecoder) (*partDecoder, error) {
	shared.once.Do(func() {
		var api reflect.Type
		if obj, err := c.scheme.New(viewed); err == nil {
			api = reflect.TypeOf(obj)
		} else if obj, err := clientgoscheme.Scheme.New(viewed); err == nil {
			api = reflect.TypeOf(obj)
		}
		shared.unknown = api == nil
		shared.dec, shared.err = adapter.NewViewDecoder(t, api, c.skip[t])
	})
	return shared, shared.err
}
