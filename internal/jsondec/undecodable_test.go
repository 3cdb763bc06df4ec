package jsondec

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers/internal/decoded"
)

// badWidget is a widget whose spec does not fit the Go type, as
// x-kubernetes-preserve-unknown-fields lets a custom resource be stored.
const badWidget = `{"kind":"Widget","metadata":{"name":"w2","namespace":"shop","uid":"u-2","resourceVersion":"77","labels":{"app":"web"}},"spec":{"tiny":"big","zone":"z"}}`

// A list whose items hold one that does not fit the type decodes the
// others, in order, and names that one, with where it failed; one that
// cannot be named (no name, metadata that does not decode) fails the
// list, as before.
func TestDecodeListUndecodable(t *testing.T) {
	dec, err := New(reflect.TypeFor[*Widget](), Options{Share: true})
	require.NoError(t, err)
	newWidget := func() *Widget { return &Widget{} }
	for _, tc := range []struct {
		name, bad, path, err string
	}{
		{name: "a string for an int", bad: badWidget, path: "spec.tiny"},
		{name: "a key twice", bad: `{"metadata":{"name":"w2","namespace":"shop","uid":"u-2","resourceVersion":"77"},"spec":{"zone":"a","zone":"b","tiny":"big"}}`, path: "spec.tiny"},
		{name: "out of range", bad: `{"metadata":{"name":"w2","namespace":"shop","uid":"u-2","resourceVersion":"77"},"spec":{"tiny":300}}`, path: "spec.tiny"},
		{name: "bad metadata elsewhere", bad: `{"metadata":{"name":"w2","namespace":"shop","uid":"u-2","resourceVersion":"77","labels":{"a":1}}}`, path: "metadata.labels.a"},
		{name: "no name", bad: `{"metadata":{"namespace":"shop"},"spec":{"tiny":"big"}}`, err: "item 1: decoding JSON of *jsondec.Widget at spec.tiny"},
		{name: "metadata does not decode", bad: `{"metadata":{"name":5},"spec":{"tiny":"big"}}`, err: "item 1: decoding JSON of *jsondec.Widget at metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"kind":"WidgetList","metadata":{"resourceVersion":"80"},"items":[{"metadata":{"name":"w1"},"spec":{"tiny":1}},` +
				tc.bad + `,{"metadata":{"name":"w3"},"spec":{"tiny":3}}]}`)
			l, err := DecodeList(dec, body, "WidgetList", newWidget)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "80", l.ResourceVersion)
			require.Len(t, l.Items, 2)
			assert.Equal(t, "w1", l.Items[0].Name)
			assert.Equal(t, int8(1), l.Items[0].Spec.Tiny)
			assert.Equal(t, "w3", l.Items[1].Name)
			assert.Equal(t, int8(3), l.Items[1].Spec.Tiny)
			require.Len(t, l.Undecodable, 1)
			u := l.Undecodable[0]
			assert.Equal(t, decoded.Undecodable{Namespace: "shop", Name: "w2", UID: "u-2", ResourceVersion: "77", Path: tc.path, Err: u.Err}, *u)
			require.Error(t, u.Err)
			assert.Contains(t, u.Error(), "object shop/w2 (uid u-2, resourceVersion 77) does not decode at "+tc.path)
		})
	}
}

// The decoder of watch events names an object that does not fit its type,
// and fails as before where it cannot.
func TestEventDecoderUndecodable(t *testing.T) {
	dec, err := New(reflect.TypeFor[*Widget](), Options{Share: true})
	require.NoError(t, err)
	decode := EventDecoder(dec, func() runtime.Object { return &Widget{} })
	obj, err := decode([]byte(`{"kind":"Widget","metadata":{"name":"w1"},"spec":{"tiny":1}}`), false)
	require.NoError(t, err)
	assert.Equal(t, int8(1), obj.(*Widget).Spec.Tiny)

	_, err = decode([]byte(badWidget), false)
	u, ok := errors.AsType[*decoded.Undecodable](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "w2", u.Name)
	assert.Equal(t, "spec.tiny", u.Path)

	_, err = decode([]byte(`{"spec":{"tiny":"big"}}`), false)
	require.ErrorContains(t, err, "spec.tiny")
	_, ok = errors.AsType[*decoded.Undecodable](err)
	assert.False(t, ok, "nothing names the object")
}

// Valid JSON decodes as an unstructured object but for a number out of
// float64's range: a watch event's object is then named, and a list fails
// naming its item.
func TestUnstructuredUndecodable(t *testing.T) {
	u := NewUnstructured(true)
	huge := `{"kind":"Widget","metadata":{"name":"w2","namespace":"shop","uid":"u-2","resourceVersion":"77"},"spec":{"size":1e999}}`
	_, err := UnstructuredEventDecoder[*unstructured.Unstructured](u)([]byte(huge), false)
	ud, ok := errors.AsType[*decoded.Undecodable](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, decoded.Undecodable{Namespace: "shop", Name: "w2", UID: "u-2", ResourceVersion: "77", Path: "spec.size", Err: ud.Err}, *ud)

	_, err = u.Decode([]byte(`{"kind":"WidgetList","items":[{"kind":"Widget","metadata":{"name":"w1"}},` + huge + `]}`))
	require.ErrorContains(t, err, "item 1: object shop/w2 (uid u-2, resourceVersion 77) does not decode at spec.size")
	_, err = u.Decode([]byte(`{"kind":"WidgetList","items":[{"kind":"Widget","metadata":{"name":"w1"}},7]}`))
	require.ErrorContains(t, err, "item 1: ")
}
