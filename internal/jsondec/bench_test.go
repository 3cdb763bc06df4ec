package jsondec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
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
// the heap the objects keep. The decoders are made once, as an
// informer's are, so later iterations find the strings of earlier ones.
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

// BenchmarkEvent checks a watch event of one widget and finds its type,
// object and kind, as every JSON watch event is read before its object
// is decoded.
func BenchmarkEvent(b *testing.B) {
	page := benchPage(1, 0)
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(page, &l); err != nil {
		b.Fatal(err)
	}
	line := []byte(`{"type":"ADDED","object":` + string(l.Items[0]) + `}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, _, kind, ok := Event(line); !ok || kind != "Widget" {
			b.Fatal("not a widget event")
		}
	}
}
