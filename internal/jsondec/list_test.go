package jsondec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// WidgetList is a list of widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// A list body decodes into the items sigs.k8s.io/json decodes, each on
// its own, with the list's metadata; a list of another kind or a bad
// item is an error naming the item and the field.
func TestDecodeList(t *testing.T) {
	in := WidgetList{TypeMeta: metav1.TypeMeta{Kind: "WidgetList", APIVersion: "example.com/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for i := range 5 {
		var w Widget
		newFiller(uint64(i)).Fill(&w)
		in.Items = append(in.Items, w)
	}
	body, err := json.Marshal(in)
	require.NoError(t, err)
	var want WidgetList
	require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(body, &want))

	dec, err := New(reflect.TypeFor[*Widget](), Options{Share: true})
	require.NoError(t, err)
	newWidget := func() *Widget { return &Widget{} }
	l, err := DecodeList(dec, body, "WidgetList", newWidget)
	require.NoError(t, err)
	assert.Equal(t, want.ListMeta, l.ListMeta)
	require.Len(t, l.Items, len(want.Items))
	for i := range want.Items {
		require.True(t, reflect.DeepEqual(&want.Items[i], l.Items[i]), "item %d:\n%s", i, valuediff.First(&want.Items[i], l.Items[i]))
	}

	_, err = DecodeList(dec, body, "GadgetList", newWidget)
	assert.ErrorContains(t, err, `want "GadgetList"`)
	_, err = DecodeList(dec, []byte(`{"kind":"WidgetList","items":[{},{"spec":{"replicas":"x"}}]}`), "WidgetList", newWidget)
	assert.ErrorContains(t, err, "item 1")
	assert.ErrorContains(t, err, "spec.replicas")
	_, err = DecodeList(dec, body[:len(body)/2], "WidgetList", newWidget)
	assert.Error(t, err)
}

// Items are decoded into the objects newT makes whatever T is: a pointer
// type, or an interface holding one, as the controller-runtime adapter's
// client.Object.
func TestDecodeListInterfaceItems(t *testing.T) {
	dec, err := New(reflect.TypeFor[*Widget](), Options{Share: true})
	require.NoError(t, err)
	body := []byte(`{"kind":"WidgetList","items":[{"metadata":{"name":"a"},"spec":{"tiny":3}},{"metadata":{"name":"b"}}]}`)
	l, err := DecodeList(dec, body, "WidgetList", func() runtime.Object { return &Widget{} })
	require.NoError(t, err)
	require.Len(t, l.Items, 2)
	assert.Equal(t, "a", l.Items[0].(*Widget).Name)
	assert.Equal(t, int8(3), l.Items[0].(*Widget).Spec.Tiny)
	assert.Equal(t, "b", l.Items[1].(*Widget).Name)
}

// A list decodes in one pass whatever the order of its members: items
// before the list's kind and metadata, null items as none.
func TestDecodeListMemberOrder(t *testing.T) {
	dec, err := New(reflect.TypeFor[*Widget](), Options{Share: true})
	require.NoError(t, err)
	newWidget := func() *Widget { return &Widget{} }
	for _, tc := range []struct {
		name, body string
		items      int
		rv, err    string
	}{
		{name: "items first", body: `{"items":[{"metadata":{"name":"a"}},{}],"kind":"WidgetList","metadata":{"resourceVersion":"9"}}`, items: 2, rv: "9"},
		{name: "null items", body: `{"kind":"WidgetList","metadata":{"resourceVersion":"4"},"items":null}`, rv: "4"},
		{name: "empty items", body: `{"kind":"WidgetList","items":[ ]}`},
		{name: "wrong kind after items", body: `{"items":[{}],"kind":"GadgetList"}`, err: `want "WidgetList"`},
		{name: "items not an array", body: `{"kind":"WidgetList","items":{}}`, err: "items are not an array"},
		{name: "items twice", body: `{"kind":"WidgetList","items":[],"items":[]}`, err: "items twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := DecodeList(dec, []byte(tc.body), "WidgetList", newWidget)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, l.Items, tc.items)
			assert.Equal(t, tc.rv, l.ResourceVersion)
		})
	}
}

// Event reads a watch event's type, object and the object's kind, the
// last of each where one appears twice, as encoding/json would.
func TestEvent(t *testing.T) {
	for _, tc := range []struct {
		line, typ, object, kind string
	}{
		{`{"type":"ADDED","object":{"kind":"Widget","metadata":{"name":"a"}}}`, `"ADDED"`, `{"kind":"Widget","metadata":{"name":"a"}}`, "Widget"},
		{`{"object":{"metadata":{"kind":"no"},"kind":"Status"} , "type":"ERROR"}`, `"ERROR"`, `{"metadata":{"kind":"no"},"kind":"Status"}`, "Status"},
		{`{"type":"ADDED","object":{"kind":"A","kind":"B"}}`, `"ADDED"`, `{"kind":"A","kind":"B"}`, "B"},
		{`{"type":"ADDED","object":{"kind":"A"},"object":{"x":1}}`, `"ADDED"`, `{"x":1}`, ""},
		{`{"type":"ADDED","object":"text"}`, `"ADDED"`, `"text"`, ""},
		{`{"type":"BOOKMARK","extra":[1,{"a":"}"}],"object":{}}`, `"BOOKMARK"`, `{}`, ""},
	} {
		typ, object, kind, valid := Event([]byte(tc.line))
		require.True(t, valid, tc.line)
		assert.Equal(t, tc.typ, string(typ), tc.line)
		assert.Equal(t, tc.object, string(object), tc.line)
		assert.Equal(t, tc.kind, kind, tc.line)
	}
	for _, line := range []string{`[1]`, `"text"`, `{}`} {
		typ, object, _, valid := Event([]byte(line))
		assert.True(t, valid, line)
		assert.Nil(t, typ, line)
		assert.Nil(t, object, line)
	}
	for _, line := range []string{`{"type":"ADDED","object":{"kind":"A"}`, `{"type":"ADDED","object":{"kind":"A"}}}`, `{"type":"ADDED" "object":{}}`, ``} {
		_, _, _, valid := Event([]byte(line))
		assert.False(t, valid, line)
	}
}

// Event reads the type, the object and the object's kind where
// encoding/json reads them, whatever the bytes.
func FuzzEvent(f *testing.F) {
	for _, c := range []string{
		`{"type":"ADDED","object":{"kind":"Widget","metadata":{"name":"a"}}}`,
		`{"object":{"metadata":{"kind":"no"},"kind":"Status"} , "type":"ERROR"}`,
		`{"type":"ADDED","object":{"kind":"A","kind":5}}`,
		`{"type":"BOOKMARK","extra":[1,{"a":"}"}],"object":{}}`,
		`{"typ\u0065":"ADDED","object":[{"kind":"A"}]}`,
		`[{"type":"ADDED"}]`,
	} {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"type":"MODIFIED","object":` + repeatingWidget + `}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		typ, object, kind, ok := Event(line)
		require.Equal(t, json.Valid(line), ok, "%q", line)
		var env map[string]json.RawMessage
		if !ok || json.Unmarshal(line, &env) != nil {
			assert.Nil(t, typ)
			assert.Nil(t, object)
			return
		}
		assert.Equal(t, []byte(env["type"]), typ, "type of %q", line)
		assert.Equal(t, []byte(env["object"]), object, "object of %q", line)
		assert.Equal(t, lastStringKind(t, env["object"]), kind, "kind of %q", line)
	})
}

// lastStringKind returns the last member "kind" of the JSON object raw
// that is a string, as it is spelled, or "".
func lastStringKind(t *testing.T, raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	kind := ""
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
		if key == "kind" && v[0] == '"' {
			kind = string(v[1 : len(v)-1])
		}
	}
	return kind
}
