package jsondec

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/decoded/decodedtest"
	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// streamUnstructured is u's StreamList of widgets, as decodedtest takes
// it.
func streamUnstructured(u *Unstructured, kind, apiVersion string) decodedtest.StreamFunc[*unstructured.Unstructured] {
	return func(r io.Reader, put func(*unstructured.Unstructured), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
		return u.StreamList(r, kind, apiVersion, put, bad)
	}
}

// An unstructured list streamed decodes as it does whole, in any order of
// its members, read in chunks of any size; where its kind and apiVersion
// come after its items, the items without theirs get the resource's.
func TestUnstructuredStreamList(t *testing.T) {
	tests := []struct {
		name string
		body string
		// kinds are the kind and apiVersion of each item; rv the list's
		// version; bad the names of the items that do not decode.
		kinds []string
		rv    string
		bad   []string
	}{{
		name:  "as the server sends it",
		body:  `{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"7","continue":"c"},"items":[{"metadata":{"name":"a"}},{"kind":"Own","apiVersion":"own/v1","metadata":{"name":"b"}}]}`,
		kinds: []string{"Widget example.com/v1", "Own own/v1"},
		rv:    "7",
	}, {
		name:  "metadata and kind after the items",
		body:  `{"items":[{"metadata":{"name":"a"}},{"kind":"Own","metadata":{"name":"b"}}],"metadata":{"resourceVersion":"8"},"kind":"WidgetList","apiVersion":"example.com/v1"}`,
		kinds: []string{"Widget example.com/v1", "Own "},
		rv:    "8",
	}, {
		name:  "a list that names another kind",
		body:  `{"kind":"GadgetList","apiVersion":"other/v2","items":[{"metadata":{"name":"a"}}]}`,
		kinds: []string{"Gadget other/v2"},
	}, {
		name:  "items null",
		body:  `{"kind":"WidgetList","apiVersion":"example.com/v1","items":null,"metadata":{"resourceVersion":"9"}}`,
		kinds: []string{},
		rv:    "9",
	}, {
		name:  "a number out of range, named",
		body:  `{"kind":"WidgetList","apiVersion":"example.com/v1","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"big","resourceVersion":"4"},"spec":{"n":1e999}},{"metadata":{"name":"c"}}]}`,
		kinds: []string{"Widget example.com/v1", "Widget example.com/v1"},
		bad:   []string{"big"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			for _, max := range []int{1, 5, len(body)} {
				l, err := decodedtest.Collect(streamUnstructured(NewUnstructured(true), "Widget", "example.com/v1"), decodedtest.Chunked(body, uint64(max), max))
				require.NoError(t, err)
				kinds := []string{}
				for _, item := range l.Items {
					kinds = append(kinds, item.GetKind()+" "+item.GetAPIVersion())
				}
				assert.Equal(t, tc.kinds, kinds)
				assert.Equal(t, tc.rv, l.ResourceVersion)
				var bad []string
				for _, u := range l.Undecodable {
					bad = append(bad, u.Name)
					assert.Equal(t, "spec.n", u.Path)
				}
				assert.Equal(t, tc.bad, bad)
			}
		})
	}
}

// A body cut anywhere fails, after handing over the items before the
// cut; so does a reader that fails.
func TestUnstructuredStreamListCut(t *testing.T) {
	body := []byte(`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"},"spec":{"x":[1,2,{"y":"z"}]}},{"metadata":{"name":"b"}}]}`)
	for n := range len(body) {
		l, err := decodedtest.Collect(streamUnstructured(NewUnstructured(true), "Widget", "example.com/v1"), bytes.NewReader(body[:n]))
		require.Error(t, err, "cut at %d", n)
		require.LessOrEqual(t, len(l.Items), 2)
	}
	broken := io.MultiReader(bytes.NewReader(body[:len(body)/2]), iotest.ErrReader(io.ErrClosedPipe))
	_, err := decodedtest.Collect(streamUnstructured(NewUnstructured(true), "Widget", "example.com/v1"), broken)
	require.ErrorIs(t, err, io.ErrClosedPipe)
}

// checkUnstructuredStream decodes b as a list, whole and streamed in
// chunks: where the whole decodes, the stream hands over the same items
// and version, or fails where streaming cannot follow the whole (a
// member twice, an item that is null, metadata that is not a list's);
// where the whole fails, the stream fails too, or names the items that
// failed it, or the whole failed only for want of a kind.
func checkUnstructuredStream(t *testing.T, u *Unstructured, b []byte) {
	obj, wholeErr := NewUnstructured(false).Decode(b)
	whole, isList := obj.(*unstructured.UnstructuredList)
	if wholeErr == nil && !isList {
		return // an object, not a list: a list response never is one
	}
	kind, apiVersion := "Widget", "example.com/v1"
	if whole != nil {
		kind, apiVersion = strings.TrimSuffix(whole.GetKind(), "List"), whole.GetAPIVersion()
	}
	for _, max := range []int{1, 7, len(b) + 1} {
		got, err := decodedtest.Collect(streamUnstructured(u, kind, apiVersion), decodedtest.Chunked(b, uint64(len(b)*max), max))
		switch {
		case wholeErr == nil && err != nil:
			require.Regexp(t, `items twice|metadata twice|null into an item|metadata|ListMeta`, err.Error(), "the whole list decodes")
		case wholeErr == nil:
			require.Empty(t, got.Undecodable)
			require.Equal(t, whole.GetResourceVersion(), got.ResourceVersion)
			require.Equal(t, len(whole.Items), len(got.Items))
			for i := range whole.Items {
				require.True(t, reflect.DeepEqual(&whole.Items[i], got.Items[i]), "item %d: %s", i, valuediff.First(&whole.Items[i], got.Items[i]))
			}
		case err == nil:
			require.True(t, len(got.Undecodable) > 0 || strings.Contains(wholeErr.Error(), "kind"),
				"the whole list fails (%v), the stream names no item", wholeErr)
		}
	}
}
