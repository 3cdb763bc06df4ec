package jsondec

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

type clearedItem struct {
	Name string            `json:"name"`
	Env  map[string]string `json:"env,omitempty"`
}

type clearedObject struct {
	Items  []clearedItem           `json:"items"`
	ByName map[string]clearedItem  `json:"byName"`
	Ptrs   map[string]*clearedItem `json:"ptrs"`
}

// A Decoder's Clear zeroes the fields to skip through slices, maps of
// values and maps of pointers, and writes nothing where there is nothing
// to clear.
func TestClear(t *testing.T) {
	c, err := New(reflect.TypeFor[*clearedObject](), Options{Skip: []string{"items.env", "byName.env", "ptrs.env"}})
	require.NoError(t, err)
	env := map[string]string{"a": "b"}
	obj := &clearedObject{
		Items:  []clearedItem{{Name: "x", Env: env}},
		ByName: map[string]clearedItem{"x": {Name: "x", Env: env}},
		Ptrs:   map[string]*clearedItem{"x": {Name: "x", Env: env}},
	}
	c.Clear(reflect.ValueOf(obj).UnsafePointer())
	require.Equal(t, &clearedObject{
		Items:  []clearedItem{{Name: "x"}},
		ByName: map[string]clearedItem{"x": {Name: "x"}},
		Ptrs:   map[string]*clearedItem{"x": {Name: "x"}},
	}, obj)

	_, err = New(reflect.TypeFor[*clearedObject](), Options{Skip: []string{"items.nothing"}})
	require.ErrorContains(t, err, `no field "nothing"`)
	_, err = New(reflect.TypeFor[map[string]any](), Options{})
	require.ErrorContains(t, err, "does not decode by plan")
}

// An UnstructuredClearer removes the fields to skip through maps and
// lists, copying what it changes on the way: a part shared with another
// object keeps its fields there.
func TestUnstructuredClearer(t *testing.T) {
	c, err := NewUnstructuredClearer([]string{"metadata.managedFields", "spec.containers.env", "status"})
	require.NoError(t, err)
	shared := map[string]any{"containers": []any{
		map[string]any{"name": "a", "env": []any{"x"}},
		map[string]any{"name": "b"},
	}}
	other := map[string]any{"spec": shared}
	obj := map[string]any{
		"metadata": map[string]any{"name": "n", "managedFields": []any{}},
		"spec":     shared,
		"status":   map[string]any{"phase": "Running"},
	}
	c.Clear(obj)
	require.Equal(t, map[string]any{
		"metadata": map[string]any{"name": "n"},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a"},
			map[string]any{"name": "b"},
		}},
	}, obj)
	require.Equal(t, []any{"x"}, other["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"], "the shared part is untouched")

	_, err = NewUnstructuredClearer([]string{"metadata.uid"})
	require.ErrorContains(t, err, "the informer needs it")
}
