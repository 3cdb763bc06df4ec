package controllerruntime

import (
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/adapter"
)

// Decoding says how a Cache decodes objects: by default with the
// library's decoders, protobuf for built-in types and metadata-only
// (PartialObjectMetadata) informers, JSON for custom resources with a Go
// type in the scheme and for unstructured objects, which share equal
// strings and parts (labels, containers, volumes, owner references)
// between cached objects as they decode; see the informers package's
// Tuning.DisableDecoder and Options.SkipFields. The zero value is the
// default.
type Decoding struct {
	// Disable turns the library's decoder off: objects are decoded by
	// client-go's codecs and the generated code, and share nothing. It
	// cannot be set with Options.Views: views are decoded by the
	// library's decoders only.
	Disable bool
	// SkipFields names, per type, fields never decoded, by JSON paths
	// such as metadata.managedFields or spec.containers.env: they read as
	// zero values, in the cache and in what reads copy from it. Types are
	// given by an object, as in ByObject; a metadata-only informer's by
	// &metav1.PartialObjectMetadata{}. Custom resources with a Go type are
	// named by their json names, views (Options.Views) by their view
	// object and their own json names; unstructured objects, whose Go
	// type names no kind, cannot be given.
	SkipFields map[client.Object][]string
}

// setDecoding makes the cache decode as d says.
func (c *Cache) setDecoding(d Decoding) error {
	c.decoding = d
	c.skip = map[reflect.Type][]string{}
	for obj, paths := range d.SkipFields {
		t := reflect.TypeOf(obj)
		if _, err := adapter.NewClearer(t, paths); err != nil {
			return fmt.Errorf("controllerruntime: Decoding.SkipFields: %w", err)
		}
		c.skip[t] = paths
	}
	return nil
}

// partDecoder is the decoder of one informer, made on first use: the
// list-watches of its namespaces (with a namespace selector) share it, and
// so share equal strings and parts. dec is nil if the decoder is off or
// does not know the informer's objects.
type partDecoder struct {
	once sync.Once
	dec  *adapter.Decoder
	err  error
	// unknown says a view's resource has no Go type the scheme knows: the
	// view is checked against the server's schema.
	unknown bool
}

// decoderFor returns shared with the decoder of the objects of Go type t
// (nil for unstructured ones, in unstructuredShape) made.
func (c *Cache) decoderFor(t reflect.Type, sh shape, shared *partDecoder) (*partDecoder, error) {
	shared.once.Do(func() {
		switch {
		case c.decoding.Disable:
		case sh == unstructuredShape:
			shared.dec = adapter.NewUnstructuredDecoder()
		case t != nil:
			shared.dec, shared.err = adapter.NewDecoder(t, c.skip[t])
		}
	})
	return shared, shared.err
}

// clearSkipped returns a transform that zeroes the fields to skip of
// objects of type t, which the objects the decoder did not decode (a
// response in JSON) still have; nil if there are none.
func (c *Cache) clearSkipped(t reflect.Type) informers.TransformFunc[client.Object] {
	paths := c.skip[t]
	if len(paths) == 0 {
		return nil
	}
	clearer, err := adapter.NewClearer(t, paths)
	if err != nil { // checked by setDecoding
		return nil
	}
	return func(obj client.Object) (client.Object, error) {
		clearer.Clear(obj)
		return obj, nil
	}
}

// metadataRequests returns the requests of the metadata of gvr in
// namespace ns ("" for all), through a REST client of c's, asking for
// PartialObjectMetadata as client-go's metadata client does; nil if the
// decoder is off.
func (c *Cache) metadataRequests(gvr schema.GroupVersionResource, ns string) (func(*metav1.ListOptions) *rest.Request, error) {
	rc, err := apiutil.RESTClientForGVK(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"), false, false, c.config, c.codecs, c.httpClient)
	if err != nil {
		return nil, err
	}
	return func(opts *metav1.ListOptions) *rest.Request {
		path := []string{"/apis", gvr.Group, gvr.Version}
		if gvr.Group == "" {
			path = []string{"/api", gvr.Version}
		}
		if ns != "" {
			path = append(path, "namespaces", ns)
		}
		as := "PartialObjectMetadata"
		if !opts.Watch {
			as += "List"
		}
		return rc.Get().AbsPath(append(path, gvr.Resource)...).
			SpecificallyVersionedParams(opts, c.paramCodec, schema.GroupVersion{Version: "v1"}).
			SetHeader("Accept", "application/vnd.kubernetes.protobuf;as="+as+";g=meta.k8s.io;v=v1,application/json;as="+as+";g=meta.k8s.io;v=v1,application/json")
	}, nil
}

// goType returns the Go type of the objects of gvk cached in shape sh, or
// nil for unstructured ones.
func (c *Cache) goType(gvk schema.GroupVersionKind, sh shape) reflect.Type {
	switch sh {
	case metadataShape:
		return reflect.TypeFor[*metav1.PartialObjectMetadata]()
	case typed:
		if obj, err := c.scheme.New(gvk); err == nil {
			return reflect.TypeOf(obj)
		}
	}
	return nil
}
