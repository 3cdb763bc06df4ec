package jsondec

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
