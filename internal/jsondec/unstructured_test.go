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
