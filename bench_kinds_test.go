package informers_test

import (
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchKind is one kind of BenchmarkKindSync: count objects of resource,
// of kind kind, object i made by the function items returns when the
// kind's server is made; newScheme is as benchJSONImpl's start takes it.
type benchKind struct {
	name       string
	count      int
	resource   schema.GroupVersionResource
	kind       string
	namespaced bool
	items      func() (func(i int) any, error)
	newScheme  func() *runtime.Scheme
	impls      []benchJSONImpl
}

// benchKindImpls are the implementations of BenchmarkKindSync for objects
// of type T: benchJSONImpls', and our view of metadata alone.
func benchKindImpls[T informers.Object]() []benchJSONImpl {
	return append(benchJSONImpls[T](), benchJSONImpl{"informers-view-meta", benchJSONInformers[*metaView]})
}

// benchKindObjects returns benchKind's items for objects made by obj.
func benchKindObjects[T any](obj func(i int) T) func() (func(i int) any, error) {
	return func() (func(i int) any, error) { return func(i int) any { return obj(i) }, nil }
}

// benchUnstructuredImpls are the implementations of BenchmarkKindSync
// for a kind without a Go type in the module: crds, whose type
// (k8s.io/apiextensions-apiserver) the module does not require.
var benchUnstructuredImpls = []benchJSONImpl{
	{"clientgo-dynamic", benchJSONClientGoDynamic},
	{"informers-unstructured", benchJSONInformers[*unstructured.Unstructured]},
	{"informers-view-meta", benchJSONInformers[*metaView]},
}

// benchKinds are the kinds of BenchmarkKindSync, BenchmarkKindBytes'
// (internal/jsondec) at the same counts.
var benchKinds = []benchKind{
	{"pods", 5000, corev1.SchemeGroupVersion.WithResource("pods"), "Pod", true, func() (func(i int) any, error) {
		pods := bf.NewPodList(5000, bf.PodOptions{Namespaces: 50, Nodes: 100, Seed: 1})
		return func(i int) any {
			p := pods.Pod(i)
			p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
			return p
		}, nil
	}, nil, benchKindImpls[*corev1.Pod]()},
	{"applications", 5000, bf.ApplicationResource, "Application", true, benchKindObjects(func(i int) *bf.Application {
		a := bf.NewApplication(i, 1)
		a.ManagedFields = nil
		return a
	}), benchJSONScheme, benchKindImpls[*bf.Application]()},
	{"configmaps-random", 2000, corev1.SchemeGroupVersion.WithResource("configmaps"), "ConfigMap", true,
		benchKindObjects(bf.RandomConfigMap), nil, benchKindImpls[*corev1.ConfigMap]()},
	{"configmaps-realistic", 2000, corev1.SchemeGroupVersion.WithResource("configmaps"), "ConfigMap", true,
		benchKindObjects(bf.RealisticConfigMap), nil, benchKindImpls[*corev1.ConfigMap]()},
	{"secrets", 2000, corev1.SchemeGroupVersion.WithResource("secrets"), "Secret", true,
		benchKindObjects(bf.Secret), nil, benchKindImpls[*corev1.Secret]()},
	{"deployments", 5000, appsv1.SchemeGroupVersion.WithResource("deployments"), "Deployment", true,
		benchKindObjects(bf.Deployment), nil, benchKindImpls[*appsv1.Deployment]()},
	{"crds", 200, schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "CustomResourceDefinition", false, func() (func(i int) any, error) {
		crds, err := bf.CRDs(200)
		if err != nil {
			return nil, err
		}
		return func(i int) any { return json.RawMessage(crds[i]) }, nil
	}, nil, benchUnstructuredImpls},
}

// BenchmarkKindSync measures initial syncs of objects of several kinds,
// the kinds and objects of BenchmarkKindBytes (internal/jsondec), by
// informers: each kind served as JSON list pages of benchPageSize by an
// HTTP server on the loopback (benchfixtures.JSONServer), listed page by
// page, then watched, and decoded by each implementation its own way:
//
//	clientgo                client-go's typed informer: a
//	                        SharedIndexInformer over a REST client whose
//	                        codecs know the type (client-go's scheme, or
//	                        one registering Application)
//	clientgo-dynamic        client-go's dynamic informer
//	informers               ours, typed, from a factory
//	informers-unstructured  ours, *unstructured.Unstructured
//	informers-view-meta     ours, a view of metadata alone (metaView),
//	                        decoded from whole objects: the server does
//	                        not project metadata as kube-apiserver does
//	                        (as=PartialObjectMetadata) and refuses the
//	                        informer's first request for it (406), after
//	                        which the informer reads whole objects. The
//	                        figures are what the view keeps of them, not
//	                        what a sync of projected metadata costs
//	                        (BenchmarkMetadataSync has that)
//
// The kinds, in namespaces unless said:
//
//	pods                 5000 realistic pods (benchfixtures.NewPodList)
//	applications         5000 Argo-CD-like custom resources
//	                     (NewApplication), without managed fields
//	configmaps-random    2000, 4 keys of 2 KB of random data each
//	                     (RandomConfigMap)
//	configmaps-realistic 2000, kube-root-ca.crt in every namespace, and
//	                     application settings (RealisticConfigMap)
//	secrets              2000 service account tokens and TLS keys
//	                     (Secret)
//	deployments          5000 deployments of 100 applications
//	                     (Deployment)
//	crds                 200 cluster-scoped CRDs whose schemas share
//	                     little (CRDs); unstructured and the view only,
//	                     as the module does not require their Go type's
//	                     module, k8s.io/apiextensions-apiserver
//
// Schemes are as programs have them: for the built-in kinds client-go's
// (clientgo uses its codecs; our factory is given no Scheme), for
// applications one that registers Application, made at every start (as in
// InitialSync fixture=json) and given to every implementation that takes
// one. MB/s is the JSON read. Each sync is checked to have added every
// object. It reports benchMeasureSync's peak-MB, peak-live-MB, retained-MB
// and retained-B/obj. BENCHMARKS.md's per-kind table, ours ÷ client-go's
// matching path (informers ÷ clientgo, informers-unstructured ÷
// clientgo-dynamic), comes from
//
//	go test -run '^$' -bench 'KindSync' -count 3 .
func BenchmarkKindSync(b *testing.B) {
	for _, k := range benchKinds {
		benchKindSync(b, k)
	}
}

// benchKindSync runs the implementations of kind k, its server made when
// the first one runs and closed after the last.
func benchKindSync(b *testing.B, k benchKind) {
	var srv *bf.JSONServer
	defer func() {
		if srv != nil {
			srv.Close()
		}
	}()
	for _, impl := range k.impls {
		b.Run(fmt.Sprintf("kind=%s/impl=%s", k.name, impl.name), func(b *testing.B) {
			if srv == nil {
				items, err := k.items()
				if err != nil {
					b.Fatal(err)
				}
				if srv, err = bf.NewJSONServer(k.resource, k.kind, k.namespaced, k.count, benchPageSize, items); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(srv.Bytes()))
			benchMeasureSync(b, k.count, func(onAdd func()) func() {
				stop, err := impl.start(srv, k.newScheme, onAdd)
				if err != nil {
					b.Fatal(err)
				}
				return stop
			})
		})
	}
}
