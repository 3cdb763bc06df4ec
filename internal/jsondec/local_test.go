package jsondec

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsjson "sigs.k8s.io/json"

	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// repeatingWidget is a widget whose parts repeat within it: a part, its
// conditions, a time and a name, at several places. Its times held by
// value in a map are decoded into a value copied into the map, then
// reused, to which no pointer may point.
const repeatingWidget = `{"kind":"Widget","apiVersion":"example.com/v1",
"metadata":{"name":"w-0001","labels":{"app":"w-0001"},"creationTimestamp":"2026-01-02T03:04:05Z","managedFields":[
{"manager":"m","operation":"Update","apiVersion":"example.com/v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:owner":{}}}},
{"manager":"n","operation":"Update","apiVersion":"example.com/v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:owner":{}}}}]},
"spec":{"owner":"w-0001","times":{"a":"2028-01-02T03:04:05Z","b":"2027-01-02T03:04:05Z"},"since":"2026-01-02T03:04:05Z","until":"2028-01-02T03:04:05Z",
"items":[{"name":"w-0001","weight":1,"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"r","message":"m"}],"next":{"name":"n","weight":2,"next":{"name":"deep","weight":3}}},
{"name":"w-0001","weight":1,"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"r","message":"m"}]}],
"partPtrs":{"a":{"name":"n","weight":2,"next":{"name":"deep","weight":3}},"b":{"name":"n","weight":2,"next":{"name":"deep","weight":3}}},
"values":{"x":{"k":["v","w"]},"y":{"k":["v","w"]},"z":["v","w"]},
"template":{"a":1},"port":0,"size":"1","color":"red","micro":null,"duration":"1s"},
"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"r","message":"m"}]}}`

// TestSharedWithinObject decodes objects whose parts repeat within them:
// the repeats are decoded equal to sigs.k8s.io/json's result and shared,
// but for parts under a skipped field, which differ from the same parts
// elsewhere; and writes to a deep copy change nothing of the decoded.
func TestSharedWithinObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		skip []string
		// wantNextNext is whether items[0].next.next is decoded.
		wantNextNext bool
	}{
		{name: "no skip", wantNextNext: true},
		{name: "skip under a repeated part", skip: []string{"spec.items.next.next"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := New(reflect.TypeFor[*Widget](), Options{Share: true, Skip: tc.skip})
			require.NoError(t, err)
			want := &Widget{}
			require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(repeatingWidget), want))
			if !tc.wantNextNext {
				want.Spec.Items[0].Next.Next = nil
			}
			for range 2 { // the second time, the places' tables share too
				got := &Widget{}
				require.NoError(t, dec.Decode(unsafe.Pointer(got), []byte(repeatingWidget)))
				require.True(t, reflect.DeepEqual(want, got), "%s", valuediff.First(want, got))

				s := got.Spec
				assert.Same(t, s.PartPtrs["a"], s.PartPtrs["b"], "an equal part held by pointer")
				assert.Same(t, unsafe.SliceData(s.Items[0].Conditions), unsafe.SliceData(s.Items[1].Conditions), "equal slices")
				assert.Same(t, unsafe.SliceData(s.Items[0].Conditions), unsafe.SliceData(got.Status.Conditions), "equal slices of one type at other places")
				assert.Same(t, unsafe.StringData(got.Name), unsafe.StringData(s.Items[1].Name), "equal strings")
				assert.Same(t, &got.CreationTimestamp, s.Since, "a time held by pointer, equal to one held by value")
				mf := got.ManagedFields
				assert.Same(t, mf[0].FieldsV1, mf[1].FieldsV1, "equal managed fields")
				assert.Same(t, &got.CreationTimestamp, mf[0].Time, "a time held by pointer, equal to one held by value")
				if tc.wantNextNext {
					assert.Same(t, s.Items[0].Next, s.PartPtrs["a"], "equal parts held by pointers of one type")
				} else {
					assert.NotSame(t, s.Items[0].Next, s.PartPtrs["a"], "a part with a field skipped")
				}

				c := got.DeepCopyObject()
				scribble(reflect.ValueOf(c), 0)
				require.True(t, reflect.DeepEqual(want, got), "changed by writes to a deep copy:\n%s", valuediff.First(want, got))
			}
		})
	}
}

// TestUnstructuredSharedWithinObject is TestSharedWithinObject for
// unstructured objects: equal objects, arrays and strings in one object
// are shared, boxed once.
func TestUnstructuredSharedWithinObject(t *testing.T) {
	u := NewUnstructured(true)
	want, _, err := unstructured.UnstructuredJSONScheme.Decode([]byte(repeatingWidget), nil, nil)
	require.NoError(t, err)
	for range 2 {
		obj, err := u.Decode([]byte(repeatingWidget))
		require.NoError(t, err)
		require.True(t, reflect.DeepEqual(want, obj), "%s", valuediff.First(want, obj))

		m := obj.(*unstructured.Unstructured).Object
		spec := m["spec"].(map[string]any)
		ptrs := spec["partPtrs"].(map[string]any)
		assert.Equal(t, reflect.ValueOf(ptrs["a"]).Pointer(), reflect.ValueOf(ptrs["b"]).Pointer(), "equal objects")
		values := spec["values"].(map[string]any)
		x, z := values["x"].(map[string]any)["k"], values["z"]
		assert.Equal(t, eface2(x), eface2(z), "equal arrays, boxed once")
		name := m["metadata"].(map[string]any)["name"]
		assert.Equal(t, eface2(name), eface2(spec["owner"]), "equal strings, boxed once")

		c := obj.DeepCopyObject().(*unstructured.Unstructured)
		scribble(reflect.ValueOf(c.Object), 0)
		require.True(t, reflect.DeepEqual(want, obj), "changed by writes to a deep copy:\n%s", valuediff.First(want, obj))
	}
}

// eface2 returns the words of the interface{} value v.
func eface2(v any) eface { return *(*eface)(unsafe.Pointer(&v)) }
