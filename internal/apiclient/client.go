// Package apiclient reaches the API server, or client-go's fakes, for
// informers of any type: one generic path instead of a generated client
// per resource. It resolves a Go type to its resource, looks the resource
// up by discovery, and builds the list and watch functions an informer's
// reflector calls, decoding built-in types with the library's decoder.
package apiclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

// Client reaches the server, or client-go's fakes, for informers of any
// type. The zero value is not usable; call New.
type Client struct {
	server    Server         // serves every typed informer, or nil
	fake      fakeInvoker    // client-go's fake clientset, or nil
	rest      rest.Interface // typed requests, by absolute path
	discovery rest.Interface // resource names and scopes; nil with fakes
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	// metadataOwn says metadata was made from RESTConfig, not given:
	// metadata-only informers may then list and watch through rest.
	metadataOwn bool
	// dynamicOwn says dynamic was made from RESTConfig, not given:
	// unstructured informers may then list and watch through rest.
	dynamicOwn bool
	errs       error     // why the clients above could not be made
	decoders   *Decoders // shared with other clients, or nil
	// codecs decode the responses that the library's decoders leave to
	// client-go's, CBOR among them.
	codecs serializer.CodecFactory

	mu        sync.Mutex
	resources map[schema.GroupVersion]*metav1.APIResourceList
	// openAPI reads the schemas views are checked against; nil without
	// discovery.
	openAPI *OpenAPI
}

// fakeInvoker is implemented by client-go's fake clientsets.
type fakeInvoker interface {
	Invokes(clienttesting.Action, runtime.Object) (runtime.Object, error)
	InvokesWatch(clienttesting.Action) (watch.Interface, error)
}

// Server serves list and watch requests for any resource in place of an
// API server; it is the library's FactoryOptions.Server.
type Server interface {
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// Config says how a Client reaches the server: through Server, if set;
// else through RESTConfig, if set; else through the clientset given to
// New, real or fake. Dynamic and Metadata override the clients made from
// RESTConfig. Scheme decodes the responses of RESTConfig's client.
type Config struct {
	Server     Server
	RESTConfig *rest.Config
	Dynamic    dynamic.Interface
	Metadata   metadata.Interface
	Scheme     *runtime.Scheme
	// Decoders, if set, are shared with the other clients that set it.
	Decoders *Decoders
}

// paramCodec encodes list options as query parameters for any resource.
var paramCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(s)
}()

// New returns a client over client, a real or fake clientset, or over what
// cfg sets instead.
func New(client kubernetes.Interface, o Config) *Client {
	a := &Client{server: o.Server, dynamic: o.Dynamic, metadata: o.Metadata, decoders: o.Decoders, codecs: builtInCodecs(), resources: make(map[schema.GroupVersion]*metav1.APIResourceList)}
	if o.Server != nil {
		return a
	}
	if fake, ok := client.(fakeInvoker); ok && o.RESTConfig == nil {
		a.fake = fake
		return a
	}
	if o.RESTConfig == nil {
		if client != nil {
			// Every group's client decodes every built-in type.
			a.rest = client.CoreV1().RESTClient()
			a.discovery = client.Discovery().RESTClient()
			a.openAPI = NewOpenAPI(a.discovery)
		}
		return a
	}
	cfg := rest.CopyConfig(o.RESTConfig)
	a.codecs = codecsFor(cmp.Or(o.Scheme, scheme.Scheme))
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(o.Scheme).WithoutConversion()
	if cborAllowed() {
		// As client-go's generated clients do.
		cfg.NegotiatedSerializer = a.codecs.WithoutConversion()
	}
	cfg.Wrap(recordContentType)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		a.errs = fmt.Errorf("RESTConfig: %w", err)
		return a
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		a.errs = fmt.Errorf("RESTConfig: %w", err)
		return a
	}
	a.rest, a.discovery = rc, rc
	a.openAPI = NewOpenAPI(rc)
	a.dynamicOwn = a.dynamic == nil
	a.dynamic, a.errs = orMake(a.dynamic, a.errs, func() (dynamic.Interface, error) {
		return dynamic.NewForConfigAndClient(cfg, httpClient)
	})
	a.metadataOwn = a.metadata == nil
	a.metadata, a.errs = orMake(a.metadata, a.errs, func() (metadata.Interface, error) {
		return metadata.NewForConfigAndClient(cfg, httpClient)
	})
	return a
}

func orMake[C comparable](have C, errs error, make func() (C, error)) (C, error) {
	var zero C
	if have != zero {
		return have, errs
	}
	c, err := make()
	return c, errors.Join(errs, err)
}

// pathOf returns the path segments of a resource's collection.
func pathOf(gv schema.GroupVersion, res metav1.APIResource, ns string) []string {
	p := groupVersionPath(gv)
	if res.Namespaced && ns != "" {
		p = append(p, "namespaces", ns)
	}
	return append(p, res.Name)
}

// groupVersionPath returns the path segments of a group version: /api/v1
// for the core group, /apis/group/version for the others.
func groupVersionPath(gv schema.GroupVersion) []string {
	if gv.Group == "" {
		return []string{"/api", gv.Version}
	}
	return []string{"/apis", gv.Group, gv.Version}
}

// resource looks a resource up in the server's discovery document of its
// group version, by kind if kind is set and by name otherwise: this gives
// its exact name and scope. Without discovery (fakes), the name stands and
// the resource counts as namespaced.
func (a *Client) resource(ctx context.Context, gvr schema.GroupVersionResource, kind string) (metav1.APIResource, error) {
	if a.discovery == nil {
		return metav1.APIResource{Name: gvr.Resource, Namespaced: true}, nil
	}
	gv := gvr.GroupVersion()
	a.mu.Lock()
	list := a.resources[gv]
	a.mu.Unlock()
	if list == nil {
		res := a.discovery.Get().AbsPath(groupVersionPath(gv)...).SetHeader("Accept", "application/json").Do(ctx)
		raw, err := res.Raw()
		if err != nil {
			// Error decodes the server's Status, which Raw leaves out.
			return metav1.APIResource{}, fmt.Errorf("discovery of %s: %w", gv, res.Error())
		}
		list = &metav1.APIResourceList{}
		if err := json.Unmarshal(raw, list); err != nil {
			return metav1.APIResource{}, fmt.Errorf("discovery of %s: %w", gv, err)
		}
		a.mu.Lock()
		a.resources[gv] = list
		a.mu.Unlock()
	}
	for _, r := range list.APIResources {
		if (kind != "" && r.Kind == kind || kind == "" && r.Name == gvr.Resource) && !strings.Contains(r.Name, "/") {
			return r, nil
		}
	}
	a.forget(gv)
	return metav1.APIResource{}, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server does not serve %s", ResourceName(gvr)),
	}}
}

// forgetOnNotFound drops the cached discovery of gv when the server says a
// resource is gone, so that the next request looks again.
func (a *Client) forgetOnNotFound(gv schema.GroupVersion, err error) {
	if apierrors.IsNotFound(err) {
		a.forget(gv)
	}
}

func (a *Client) forget(gv schema.GroupVersion) {
	a.mu.Lock()
	delete(a.resources, gv)
	a.mu.Unlock()
}
