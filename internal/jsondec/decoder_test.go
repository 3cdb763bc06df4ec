package jsondec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// testTypes returns the struct types of client-go's scheme, of
// PartialObjectMetadata and its list, and of the tests' custom resource,
// once each, by name.
func testTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	for _, t := range scheme.Scheme.AllKnownTypes() {
		seen[t] = true
	}
	seen[reflect.TypeFor[metav1.PartialObjectMetadata]()] = true
	seen[reflect.TypeFor[metav1.PartialObjectMetadataList]()] = true
	seen[reflect.TypeFor[Widget]()] = true
	types := make([]reflect.Type, 0, len(seen))
	for t := range seen {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b reflect.Type) int { return strings.Compare(typeName(a), typeName(b)) })
	return types
}

// typeName names t with its package path, such as k8s.io/api/core/v1.Pod.
func typeName(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// rawJSON are the JSON values random raw fields hold.
var rawJSON = []string{`{"a":1}`, `[1,2.5,"x"]`, `"s"`, `{"kind":"Pod","spec":{"containers":[{"name":"c"}]}}`, `12345678901234567890`, `null`, `true`}

// newFiller returns a randfill.Filler of random objects that
// encoding/json can encode: times, quantities, raw JSON and interface{}
// values, which randfill cannot fill on its own, are filled here.
func newFiller(seed uint64) *randfill.Filler {
	return randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(7).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			if c.Intn(5) > 0 {
				*t = metav1.Unix(c.Int63n(1<<34)-1<<30, c.Int63n(1e9))
			}
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			if c.Intn(5) > 0 {
				*t = metav1.NewMicroTime(time.Unix(c.Int63n(1<<34)-1<<30, c.Int63n(1e9)))
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			forms := []string{"%d", "%dm", "%dMi", "%dGi", "%de3", "%dk", "0.%d", "%dn"}
			*q = resource.MustParse(fmt.Sprintf(forms[c.Intn(len(forms))], c.Int63n(1<<40)))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			if c.Intn(3) > 0 {
				r.Raw = []byte(rawJSON[c.Intn(len(rawJSON)-1)])
			}
		},
		func(r *json.RawMessage, c randfill.Continue) {
			if c.Intn(3) > 0 {
				*r = json.RawMessage(rawJSON[c.Intn(len(rawJSON))])
			}
		},
		func(r *JSON, c randfill.Continue) {
			r.Raw = []byte(rawJSON[c.Intn(len(rawJSON)-1)])
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(rawJSON[c.Intn(2)])
		},
		func(m *map[string]any, c randfill.Continue) {
			*m = randomObject(c, 3)
		},
		func(o *runtime.Object, c randfill.Continue) {},
		func(a *any, c randfill.Continue) {
			*a = randomValue(c, 3)
		},
	)
}

// randomValue returns a random value of an interface{} decoded from JSON.
func randomValue(c randfill.Continue, depth int) any {
	switch k := c.Intn(8); {
	case k == 0:
		return nil
	case k == 1:
		return c.Int63() - 1<<62
	case k == 2:
		return c.Float64() * 1e6
	case k == 3:
		return c.Intn(2) == 0
	case k == 4 && depth > 0:
		return randomObject(c, depth-1)
	case k == 5 && depth > 0:
		s := make([]any, c.Intn(4))
		for i := range s {
			s[i] = randomValue(c, depth-1)
		}
		return s
	default:
		return c.String(10)
	}
}

// randomObject returns a random JSON object.
func randomObject(c randfill.Continue, depth int) map[string]any {
	m := map[string]any{}
	for range c.Intn(4) {
		m[[]string{"a", "b", "name", c.String(5)}[c.Intn(4)]] = randomValue(c, depth)
	}
	return m
}

// objectsPerType is how many random objects of each type the differential
// test decodes.
const objectsPerType = 50

// TestJSONDecoderMatchesAPIMachinery decodes random objects of every type
// of client-go's scheme, PartialObjectMetadata and a custom resource,
// encoded by encoding/json, and compares them with what
// sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts (apimachinery's
// decoder) decodes from the same bytes: with sharing off, and on, where
// every object is decoded again after the others so that the second time
// is shared; then scribbles over deep copies of the shared objects, which
// must leave the cached ones unchanged.
func TestJSONDecoderMatchesAPIMachinery(t *testing.T) {
	for _, typ := range testTypes() {
		t.Run(typeName(typ), func(t *testing.T) {
			t.Parallel()
			require.True(t, Supports(reflect.PointerTo(typ)), "every type of the scheme has a plan")
			encoded := make([][]byte, objectsPerType)
			want := make([]any, objectsPerType)
			for i := range encoded {
				in := reflect.New(typ).Interface()
				newFiller(uint64(i)).Fill(in)
				data, err := json.Marshal(in)
				require.NoError(t, err)
				out := reflect.New(typ).Interface()
				require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(data, out))
				encoded[i], want[i] = data, out
			}
			for _, share := range []bool{false, true} {
				dec, err := New(reflect.PointerTo(typ), Options{Share: share})
				require.NoError(t, err)
				order := append(append(slices.Collect(seq(objectsPerType)), slices.Collect(seq(objectsPerType))...), 0, 1, 2)
				got := make([]any, objectsPerType)
				for _, i := range order {
					obj := reflect.New(typ)
					require.NoError(t, dec.Decode(obj.UnsafePointer(), encoded[i]), "object %d", i)
					require.True(t, reflect.DeepEqual(want[i], obj.Interface()), "object %d, share=%v:\n%s", i, share, valuediff.First(want[i], obj.Interface()))
					require.True(t, apiequality.Semantic.DeepEqual(want[i], obj.Interface()), "object %d, share=%v", i, share)
					got[i] = obj.Interface()
				}
				for i, obj := range got {
					if o, ok := obj.(runtime.Object); ok {
						scribble(reflect.ValueOf(o.DeepCopyObject()), 0)
					}
					require.True(t, reflect.DeepEqual(want[i], obj), "object %d changed by writes to a deep copy of another:\n%s", i, valuediff.First(want[i], obj))
				}
			}
		})
	}
}

// scribble writes over every string, number, slice element and map of v,
// in place.
func scribble(v reflect.Value, depth int) {
	if depth > 12 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i), depth+1)
		}
	case reflect.Map:
		if !v.IsNil() && v.Type().Key().Kind() == reflect.String {
			for _, k := range v.MapKeys() {
				e := reflect.New(v.Type().Elem()).Elem()
				v.SetMapIndex(k, e)
			}
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString("scribbled")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.CanSet() {
			v.SetInt(7)
		}
	}
}

func seq(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}
