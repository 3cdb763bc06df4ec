package main

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informers"
)

// shape is how a cache holds objects: as Go types, unstructured maps, or
// metadata only.
type shape string

const (
	shapeTyped        shape = "typed"
	shapeUnstructured shape = "unstructured"
	shapeMetadata     shape = "metadata"
)

// resource is what every implementation syncs.
type resource struct {
	gvr   schema.GroupVersionResource
	shape shape
	// kind is the resource's kind, from discovery: controller-runtime
	// asks for objects by kind.
	kind string
	// expected is how many objects the server said it has, before the
	// children sync: an estimate for progress, not a check.
	expected int
}

// resourceSpec is a resource as the parent passes it to a child.
type resourceSpec struct {
	Group, Version, Resource, Kind string
	Shape                          shape
}

func (r resource) spec() resourceSpec {
	return resourceSpec{Group: r.gvr.Group, Version: r.gvr.Version, Resource: r.gvr.Resource, Kind: r.kind, Shape: r.shape}
}

func (s resourceSpec) resource() resource {
	return resource{gvr: schema.GroupVersionResource{Group: s.Group, Version: s.Version, Resource: s.Resource}, kind: s.Kind, shape: s.Shape}
}

// gvk returns the resource's group, version and kind.
func (r resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// String names the resource as the -resource flag does, with its shape.
func (r resource) String() string {
	return fmt.Sprintf("%s (%s)", gvrString(r.gvr), r.shape)
}

func gvrString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// typedResource is a resource whose Go type the harness knows, which
// this library's typed informers need at compile time.
type typedResource struct {
	gvr schema.GroupVersionResource
	// informer asks f for the informer of the Go type.
	informer func(f *informers.Factory) informers.AnyInformer
}

// typedOf returns the typedResource of T, served as resource gvr.
func typedOf[T informers.Object](gvr schema.GroupVersionResource) typedResource {
	return typedResource{gvr: gvr, informer: func(f *informers.Factory) informers.AnyInformer { return informers.Informer[T](f) }}
}

// typedResources are the resources that can be cached typed, by the
// short names -resource takes.
var typedResources = map[string]typedResource{
	"pods":           typedOf[*corev1.Pod](corev1.SchemeGroupVersion.WithResource("pods")),
	"configmaps":     typedOf[*corev1.ConfigMap](corev1.SchemeGroupVersion.WithResource("configmaps")),
	"services":       typedOf[*corev1.Service](corev1.SchemeGroupVersion.WithResource("services")),
	"nodes":          typedOf[*corev1.Node](corev1.SchemeGroupVersion.WithResource("nodes")),
	"namespaces":     typedOf[*corev1.Namespace](corev1.SchemeGroupVersion.WithResource("namespaces")),
	"events":         typedOf[*corev1.Event](corev1.SchemeGroupVersion.WithResource("events")),
	"endpointslices": typedOf[*discoveryv1.EndpointSlice](discoveryv1.SchemeGroupVersion.WithResource("endpointslices")),
	"deployments":    typedOf[*appsv1.Deployment](appsv1.SchemeGroupVersion.WithResource("deployments")),
	"replicasets":    typedOf[*appsv1.ReplicaSet](appsv1.SchemeGroupVersion.WithResource("replicasets")),
	"jobs":           typedOf[*batchv1.Job](batchv1.SchemeGroupVersion.WithResource("jobs")),
}

// typedResourceNames returns the short names of typedResources, sorted.
func typedResourceNames() []string {
	names := make([]string, 0, len(typedResources))
	for n := range typedResources {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// typedFor returns the typedResource of gvr, if the harness knows its Go
// type.
func typedFor(gvr schema.GroupVersionResource) (typedResource, bool) {
	for _, t := range typedResources {
		if t.gvr == gvr {
			return t, true
		}
	}
	return typedResource{}, false
}

// parseResource parses the -resource and -as flags: a short name of
// typedResources or group/version/resource ("v1/secrets" for the core
// group), and typed, unstructured, metadata or "" for the resource's
// default (typed where the harness knows the Go type).
func parseResource(name, as string) (resource, error) {
	var r resource
	if t, ok := typedResources[name]; ok {
		r.gvr = t.gvr
	} else {
		parts := strings.Split(name, "/")
		switch {
		case len(parts) == 2 && !slices.Contains(parts, ""):
			r.gvr = schema.GroupVersionResource{Version: parts[0], Resource: parts[1]}
		case len(parts) == 3 && !slices.Contains(parts, ""):
			r.gvr = schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}
		default:
			return r, fmt.Errorf("-resource %q: want one of %s, or group/version/resource (v1/secrets, apps/v1/deployments)",
				name, strings.Join(typedResourceNames(), ", "))
		}
	}
	_, known := typedFor(r.gvr)
	switch shape(as) {
	case "":
		r.shape = shapeUnstructured
		if known {
			r.shape = shapeTyped
		}
	case shapeTyped:
		if !known {
			return r, fmt.Errorf("-as typed: the harness has no Go type for %s; known: %s (or -as unstructured, -as metadata)",
				gvrString(r.gvr), strings.Join(typedResourceNames(), ", "))
		}
		r.shape = shapeTyped
	case shapeUnstructured, shapeMetadata:
		r.shape = shape(as)
	default:
		return r, fmt.Errorf("-as %q: want typed, unstructured or metadata", as)
	}
	return r, nil
}
