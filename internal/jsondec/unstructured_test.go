package jsondec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// TestUnstructuredMatchesClientGo decodes random objects and lists, as a
// custom resource's JSON and as arbitrary JSON objects, and compares them
// with what client-go's UnstructuredJSONScheme decodes, with sharing off
// and on (each decoded twice, the second time shared).
func TestUnstructuredMatchesClientGo(t *testing.T) {
	var inputs [][]byte
	for i := range objectsPerType {
		var w Widget
		newFiller(uint64(i)).Fill(&w)
		w.Kind, w.APIVersion = "Widget", "example.com/v1"
		b, err := json.Marshal(&w)
		require.NoError(t, err)
		inputs = append(inputs, b)
		c := randfill.NewWithSeed(int64(i)).Funcs(func(m *map[string]any, c randfill.Continue) { *m = randomObject(c, 4) })
		var m map[string]any
		c.Fill(&m)
		m["kind"] = "Thing"
		b, err = json.Marshal(m)
		require.NoError(t, err)
		inputs = append(inputs, b)
	}
	for i := 0; i+5 <= len(inputs); i += 5 {
		list := `{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"7"},"items":[`
		for k, b := range inputs[i : i+5] {
			if k > 0 {
				list += ","
			}
			list += string(b)
		}
		inputs = append(inputs, []byte(list+`,{"metadata":{"name":"bare"}}]}`))
	}
	for _, share := range []bool{false, true} {
		u := NewUnstructured(share)
		for pass := range 2 {
			for i, b := range inputs {
				t.Run(fmt.Sprintf("share=%v/%d/%d", share, pass, i), func(t *testing.T) { checkUnstructured(t, u, b) })
			}
		}
	}
}

// checkUnstructured decodes b with u and with client-go's
// UnstructuredJSONScheme: both fail, or both decode equal objects.
func checkUnstructured(t *testing.T, u *Unstructured, b []byte) {
	want, _, wantErr := unstructured.UnstructuredJSONScheme.Decode(b, nil, nil)
	got, err := u.Decode(b)
	if wantErr != nil {
		require.Error(t, err, "client-go fails: %v", wantErr)
		return
	}
	require.NoError(t, err)
	require.True(t, reflect.DeepEqual(want, got), "%s", valuediff.First(want, got))
	if l, ok := got.(*unstructured.UnstructuredList); ok {
		for i := range l.Items {
			c := l.Items[i].DeepCopy()
			scribble(reflect.ValueOf(c.Object), 0)
		}
		require.True(t, reflect.DeepEqual(want, got), "changed by writes to deep copies:\n%s", valuediff.First(want, got))
	} else {
		scribble(reflect.ValueOf(got.DeepCopyObject().(*unstructured.Unstructured).Object), 0)
		require.True(t, reflect.DeepEqual(want, got), "changed by writes to a deep copy:\n%s", valuediff.First(want, got))
	}
	_ = runtime.Object(got)
}

// Lists decode in one pass whatever the order of their members: items
// before the list's kind, null or empty items, items met twice, an object
// whose "items" comes late, each as client-go decodes it, by a new decoder
// and by one that decoded a longer list before.
func TestUnstructuredListShapes(t *testing.T) {
	used := NewUnstructured(true)
	_, err := used.Decode([]byte(`{"kind":"WidgetList","apiVersion":"v1","items":[{"kind":"W"},{"kind":"W"},{"kind":"W"}]}`))
	require.NoError(t, err)
	for name, b := range map[string]string{
		"items first":       `{"items":[{"metadata":{"name":"a"}},{"kind":"Own","metadata":{"name":"b"}}],"kind":"WidgetList","apiVersion":"example.com/v1"}`,
		"items null":        `{"kind":"WidgetList","apiVersion":"example.com/v1","items":null}`,
		"items empty":       `{"kind":"WidgetList","apiVersion":"example.com/v1","items":[]}`,
		"items twice":       `{"kind":"WidgetList","items":[{"a":1}],"apiVersion":"v1","items":[{"b":2},{"c":3}]}`,
		"items last":        `{"kind":"WidgetList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"spec":{"x":[1,2]},"items":[{"kind":"W"}]}`,
		"null item":         `{"kind":"WidgetList","apiVersion":"v1","items":[null,{"kind":"W"}]}`,
		"items not array":   `{"kind":"WidgetList","items":{"a":1}}`,
		"item not object":   `{"kind":"WidgetList","items":[1]}`,
		"nested items":      `{"kind":"Widget","apiVersion":"v1","spec":{"items":[1,2]}}`,
		"object, no kind":   `{"metadata":{"name":"a"}}`,
		"list of no kind":   `{"items":[{"kind":"W"}]}`,
		"escaped items key": `{"kind":"WidgetList","apiVersion":"v1","\u0069tems":[{"kind":"W"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			checkUnstructured(t, NewUnstructured(true), []byte(b))
			checkUnstructured(t, used, []byte(b))
		})
	}
}
