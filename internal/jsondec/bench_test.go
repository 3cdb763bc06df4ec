package jsondec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// benchPage returns a list page of n widgets as an operator's custom
// resources look: labels, owner, spec and conditions repeated across
// objects, names, UIDs and versions unique.
func benchPage(n, first int) []byte {
	l := WidgetList{TypeMeta: metav1.TypeMeta{Kind: "WidgetList", APIVersion: "example.com/v1"}}
	replicas := int32(3)
	for i := first; i < first+n; i++ {
		w := Widget{
			TypeMeta: metav1.TypeMeta{Kind: "Widget", APIVersion: "example.com/v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("widget-%06d", i), Namespace: fmt.Sprintf("team-%d", i%20),
				UID: types.UID(fmt.Sprintf("5f1c1a7e-0000-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i), Generation: 2,
				CreationTimestamp: metav1.Unix(1700000000+int64(i), 0),
				Labels:            map[string]string{"app.kubernetes.io/name": "widget", "app.kubernetes.io/part-of": fmt.Sprintf("shop-%d", i%20), "env": "prod"},
				Annotations:       map[string]string{"example.com/revision": fmt.Sprint(i % 7)},
			},
			Spec: WidgetSpec{
				Common:   Common{Owner: fmt.Sprintf("team-%d", i%20), Labels: map[string]string{"tier": "backend"}},
				Replicas: &replicas, Size: resource.MustParse("10Gi"), Port: intstr.FromString("http"),
				Limits: map[string]resource.Quantity{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi")},
				Items:  []Part{{Name: "frontend", Weight: 10}, {Name: "backend", Weight: 20}, {Name: fmt.Sprintf("cache-%d", i), Weight: 5}},
				Values: map[string]any{"image": "registry.example.com/shop/widget:v1.4.2", "replicas": int64(3), "debug": false},
				Ratio:  0.5, Color: Color{Name: "BLUE"},
			},
			Status: &WidgetStatus{Phase: "Ready", Observed: 2, Conditions: []metav1.Condition{
				{Type: "Ready", Status: "True", Reason: "Reconciled", Message: "all parts are ready", LastTransitionTime: metav1.Unix(1700000000, 0), ObservedGeneration: 2},
				{Type: "Degraded", Status: "False", Reason: "Reconciled", Message: "", LastTransitionTime: metav1.Unix(1700000000, 0), ObservedGeneration: 2},
			}},
		}
		l.Items = append(l.Items, w)
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkDecodeList decodes 20 list pages of 500 widgets each (about
// 1.9 KB of JSON a widget, 10 000 distinct objects) by apimachinery's
// decoders (sigs.k8s.io/json into the typed list; client-go's
// UnstructuredJSONScheme) and by ours, keeping every page, and reports
// the heap the objects keep. impl=jsondec-stream reads each page as an
// informer's list does, item by item from a reader (StreamList), where
// impl=jsondec decodes it whole (DecodeList). The decoders are made once,
// as an informer's are, so later iterations find the strings of earlier
// ones.
func BenchmarkDecodeList(b *testing.B) {
	const pages, perPage = 20, 500
	bodies := make([][]byte, pages)
	for k := range bodies {
		bodies[k] = benchPage(perPage, k*perPage)
	}
	newWidget := func() *Widget { return &Widget{} }
	for _, impl := range []struct {
		name   string
		decode func(page []byte) (any, error)
	}{
		{"impl=apimachinery", func(page []byte) (any, error) {
			var l WidgetList
			return &l, sigsjson.UnmarshalCaseSensitivePreserveInts(page, &l)
		}},
		{"impl=jsondec", func() func([]byte) (any, error) {
			dec, _ := New(reflect.TypeFor[*Widget](), Options{Share: true})
			return func(page []byte) (any, error) { return DecodeList(dec, page, "WidgetList", newWidget) }
		}()},
		{"impl=jsondec-stream", func() func([]byte) (any, error) {
			dec, _ := New(reflect.TypeFor[*Widget](), Options{Share: true})
			return func(page []byte) (any, error) {
				var items []*Widget
				_, err := StreamList(dec, bytes.NewReader(page), "WidgetList", newWidget, func(w *Widget) { items = append(items, w) }, nil)
				return items, err
			}
		}()},
		{"impl=clientgo-unstructured", func(page []byte) (any, error) {
			obj, _, err := unstructured.UnstructuredJSONScheme.Decode(page, nil, nil)
			return obj, err
		}},
		{"impl=jsondec-unstructured", func() func([]byte) (any, error) {
			u := NewUnstructured(true)
			return func(page []byte) (any, error) { return u.Decode(page) }
		}()},
	} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(bodies[0]) * pages))
			b.ReportAllocs()
			var retained float64
			for b.Loop() {
				b.StopTimer()
				kept := make([]any, 0, pages)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				for _, page := range bodies {
					l, err := impl.decode(page)
					if err != nil {
						b.Fatal(err)
					}
					kept = append(kept, l)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained = float64(after.HeapAlloc-before.HeapAlloc) / (pages * perPage)
				runtime.KeepAlive(kept)
				b.StartTimer()
			}
			b.ReportMetric(retained, "retained-B/obj")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pages*perPage), "ns/obj")
		})
	}
}

// BenchmarkValid checks a list page of 500 widgets, as every list body
// is checked before it is decoded.
func BenchmarkValid(b *testing.B) {
	page := benchPage(500, 0)
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if !Valid(page) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkEvent checks a watch event of an application with its managed
// fields (internal/benchfixtures, 5.5 KB) and finds its type, object and
// kind, as every JSON watch event is read before its object is decoded.
func BenchmarkEvent(b *testing.B) {
	obj, err := json.Marshal(bf.NewApplication(1, 1))
	if err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"type":"ADDED","object":` + string(obj) + `}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, _, kind, ok := Event(line); !ok || kind != "Application" {
			b.Fatal("not an application's event")
		}
	}
}

// BenchmarkApplicationBytes decodes 20 000 applications of
// internal/benchfixtures without managed fields (3.9 KB of JSON each), as
// BenchmarkInitialSync fixture=json serves them, typed and unstructured,
// sharing as informers do, and reports two figures per object: the heap
// the objects keep (retained-B/obj), and the bytes of the values they
// are made of (values-B/obj): the exact sizes of the distinct
// allocations reachable from them, a map at the size of its header and
// groups of eight slots, before the allocator rounds anything up. The
// second is the least any cache of these Go values can keep per object,
// whatever decodes them, short of sharing more than the decoder does.
func BenchmarkApplicationBytes(b *testing.B) {
	const n = 20000
	bodies := make([][]byte, n)
	for i := range bodies {
		a := bf.NewApplication(i, 1)
		a.ManagedFields = nil
		var err error
		if bodies[i], err = json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
	for _, impl := range []struct {
		name   string
		decode func() func([]byte) (any, error)
	}{
		{"typed", func() func([]byte) (any, error) {
			dec, err := New(reflect.TypeFor[*bf.Application](), Options{Share: true})
			if err != nil {
				b.Fatal(err)
			}
			return func(body []byte) (any, error) {
				a := &bf.Application{}
				return a, dec.Decode(unsafe.Pointer(a), body)
			}
		}},
		{"unstructured", func() func([]byte) (any, error) {
			u := NewUnstructured(true)
			return func(body []byte) (any, error) { return u.Decode(body) }
		}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			var retained, values float64
			for b.Loop() {
				decode := impl.decode()
				kept := make([]any, n)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i, body := range bodies {
					obj, err := decode(body)
					if err != nil {
						b.Fatal(err)
					}
					kept[i] = obj
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained = float64(after.HeapAlloc-before.HeapAlloc) / n
				values = float64(valueBytes(kept)) / n
				runtime.KeepAlive(bodies)
			}
			b.ReportMetric(retained, "retained-B/obj")
			b.ReportMetric(values, "values-B/obj")
		})
	}
}

// valueBytes returns the exact size of the distinct allocations reachable
// from objs: pointed-to values, slices' backing arrays, strings' bytes,
// maps and the values interfaces box, each counted once however many
// values share it.
func valueBytes(objs []any) int {
	seen := map[uintptr]bool{}
	size := 0
	once := func(p uintptr, n int) bool {
		if p == 0 || n == 0 || seen[p] {
			return false
		}
		seen[p] = true
		size += n
		return true
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() && once(v.Pointer(), int(v.Type().Elem().Size())) {
				walk(v.Elem())
			}
		case reflect.Interface:
			if v.IsNil() {
				return
			}
			e := v.Elem()
			if boxed(e) {
				iface := v.Interface()
				once(uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(&iface))[1]), int(e.Type().Size()))
			}
			walk(e)
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Slice:
			if !v.IsNil() && once(v.Pointer(), v.Cap()*int(v.Type().Elem().Size())) {
				for i := range v.Len() {
					walk(v.Index(i))
				}
			}
		case reflect.String:
			s := v.String()
			once(uintptr(unsafe.Pointer(unsafe.StringData(s))), len(s))
		case reflect.Map:
			if v.IsNil() || !once(v.Pointer(), mapBytes(v)) {
				return
			}
			for it := v.MapRange(); it.Next(); {
				walk(it.Key())
				walk(it.Value())
			}
		}
	}
	for _, obj := range objs {
		walk(reflect.ValueOf(obj))
	}
	return size
}

// boxed reports whether an interface holding v holds it in an allocation
// of its own: v is not a pointer or a map, and not a value the runtime
// keeps one copy of (empty strings, small integers, single bytes).
func boxed(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Bool, reflect.Int8, reflect.Uint8:
		return false
	case reflect.String:
		return v.Len() > 0
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() < 0 || v.Int() >= 256
	case reflect.Float64:
		return math.Float64bits(v.Float()) >= 256
	}
	return v.Type().Size() > 0
}

// mapBytes is the size of map m as Go's maps lay it out: a 48-byte
// header and, once it holds anything, groups of eight slots and a control
// word, one group up to eight entries, then tables of groups kept at most
// seven-eighths full.
func mapBytes(m reflect.Value) int {
	const header = 48
	n := m.Len()
	if n == 0 {
		return header
	}
	group := 8 + 8*int(m.Type().Key().Size()+m.Type().Elem().Size())
	if n <= 8 {
		return header + group
	}
	slots := 16
	for slots*7/8 < n {
		slots *= 2
	}
	return header + slots/8*group
}

// BenchmarkKindBytes decodes objects of several kinds from JSON, as
// client-go decodes them and as this package's decoder does with
// sharing, and reports the heap each keeps for them, with the decoder
// kept alive, as an informer keeps it: its places and their tables count.
// path=typed is ours against client-go's JSON codec (sigs.k8s.io/json
// into the Go type); path=unstructured is ours against
// UnstructuredJSONScheme, client-go's dynamic informer's. ratio is ours
// ÷ client-go's; values-B/obj is client-go's keep per object. The kinds:
//
//	pods                 realistic pods (benchfixtures.NewPodList)
//	applications         Argo-CD-like custom resources (NewApplication)
//	configmaps-random    4 keys of 2 KB of random data each
//	                     (benchfixtures.RandomConfigMap)
//	configmaps-realistic kube-root-ca.crt in every namespace, and
//	                     application settings that differ by a name
//	                     (RealisticConfigMap)
//	secrets              service account tokens and TLS keys: random
//	                     (Secret)
//	deployments          100 images, names and labels of their own
//	                     (Deployment)
//	crds                 200 CRDs whose schemas share little
//	                     (benchfixtures.CRDs), unstructured only
//
// The decoder's own kept state is part of ours, so a few objects show it
// most: crds has 200.
func BenchmarkKindBytes(b *testing.B) {
	crds, err := bf.CRDs(200)
	if err != nil {
		b.Fatal(err)
	}
	pods := bf.NewPodList(5000, bf.PodOptions{Namespaces: 50, Nodes: 100, Seed: 1})
	for _, kind := range []struct {
		name   string
		bodies [][]byte
		typed  reflect.Type
	}{
		{"pods", benchKindBodies(b, 5000, func(i int) any { return pods.Pod(i) }), reflect.TypeFor[corev1.Pod]()},
		{"applications", benchKindBodies(b, 5000, func(i int) any { a := bf.NewApplication(i, 1); a.ManagedFields = nil; return a }), reflect.TypeFor[bf.Application]()},
		{"configmaps-random", benchKindBodies(b, 2000, func(i int) any { return bf.RandomConfigMap(i) }), reflect.TypeFor[corev1.ConfigMap]()},
		{"configmaps-realistic", benchKindBodies(b, 2000, func(i int) any { return bf.RealisticConfigMap(i) }), reflect.TypeFor[corev1.ConfigMap]()},
		{"secrets", benchKindBodies(b, 2000, func(i int) any { return bf.Secret(i) }), reflect.TypeFor[corev1.Secret]()},
		{"deployments", benchKindBodies(b, 5000, func(i int) any { return bf.Deployment(i) }), reflect.TypeFor[appsv1.Deployment]()},
		{"crds", crds, nil},
	} {
		paths := []string{"typed", "unstructured"}
		if kind.typed == nil {
			paths = paths[1:]
		}
		for _, path := range paths {
			b.Run("kind="+kind.name+"/path="+path, func(b *testing.B) {
				var ours, theirs float64
				for b.Loop() {
					var dec *Decoder
					u := NewUnstructured(true)
					if path == "typed" {
						if dec, err = New(reflect.PointerTo(kind.typed), Options{Share: true}); err != nil {
							b.Fatal(err)
						}
						ours = benchKeep(b, kind.bodies, func(body []byte) (any, error) {
							obj := reflect.New(kind.typed).Interface()
							return obj, dec.Decode(reflect.ValueOf(obj).UnsafePointer(), body)
						})
						theirs = benchKeep(b, kind.bodies, func(body []byte) (any, error) {
							obj := reflect.New(kind.typed).Interface()
							return obj, sigsjson.UnmarshalCaseSensitivePreserveInts(body, obj)
						})
					} else {
						ours = benchKeep(b, kind.bodies, func(body []byte) (any, error) { return u.Decode(body) })
						theirs = benchKeep(b, kind.bodies, func(body []byte) (any, error) {
							obj, _, err := unstructured.UnstructuredJSONScheme.Decode(body, nil, nil)
							return obj, err
						})
					}
					runtime.KeepAlive(dec)
					runtime.KeepAlive(u)
				}
				b.ReportMetric(bf.MB(ours), "retained-MB")
				b.ReportMetric(bf.MB(theirs), "clientgo-retained-MB")
				b.ReportMetric(theirs/float64(len(kind.bodies)), "clientgo-B/obj")
				b.ReportMetric(ours/theirs, "ratio")
			})
		}
	}
}

// benchKindBodies returns the JSON of n objects made by obj, with kind and
// apiVersion, as a server sends them.
func benchKindBodies(b *testing.B, n int, obj func(i int) any) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		o := obj(i)
		if ro, ok := o.(interface{ GetObjectKind() schema.ObjectKind }); ok && ro.GetObjectKind().GroupVersionKind().Kind == "" {
			b.Fatalf("object %d of %T has no kind", i, o)
		}
		var err error
		if bodies[i], err = json.Marshal(o); err != nil {
			b.Fatal(err)
		}
	}
	return bodies
}

// benchKeep decodes bodies with decode and returns the heap the objects
// keep.
func benchKeep(b *testing.B, bodies [][]byte, decode func([]byte) (any, error)) float64 {
	kept := make([]any, len(bodies))
	before := bf.LiveHeap()
	for i, body := range bodies {
		var err error
		if kept[i], err = decode(body); err != nil {
			b.Fatal(err)
		}
	}
	after := bf.LiveHeap()
	runtime.KeepAlive(kept)
	return float64(after) - float64(before)
}
