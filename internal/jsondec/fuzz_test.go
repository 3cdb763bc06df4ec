package jsondec

import (
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/decoded/decodedtest"
	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// FuzzJSONDecoder decodes arbitrary bytes into a custom resource, a pod
// and an unstructured object (against client-go's UnstructuredJSONScheme), with sharing off and on (each input decoded twice, the second time
// shared): the decoder never panics, fails exactly where
// sigs.k8s.io/json fails, and otherwise decodes what it decodes. The
// input is also an item of a list between two good ones, and a watch
// event's object: one that does not decode is named as undecodable where
// its metadata names it, and the good items decode all the same. Its
// seeds are a few crafted inputs and the corpus in testdata/fuzz.
func FuzzJSONDecoder(f *testing.F) {
	in := &Widget{}
	newFiller(1).NumElements(1, 1).MaxDepth(4).Fill(in)
	whole, err := json.Marshal(in)
	require.NoError(f, err)
	for _, seed := range []string{
		string(whole),
		string(whole[:len(whole)/2]),
		`{"spec":{"owner":"a","owner":"b"}}`,
		`{"metadata":{"labels":{"a":"1"}},"metadata":{"labels":{"b":"2"}}}`,
		`{"spec":{"labels":{"k":"v\ud800x\u00e9\"\\"},"values":{"n":-0,"f":1.5e300,"big":123456789012345678901}}}`,
		"{\"metadata\":{\"name\":\"\xff\xfe\"},\"spec\":{\"tiny\":127,\"count\":65535}}",
		`{"spec":{"tiny":128}}`,
		`{"spec":{"small":3.5e38,"ratio":-1e-400,"big":-1}}`,
		`{"spec":{"data":"aGVsbG8=","items":[{"name":"x","next":{"name":"y"}},null],"port":"http","color":7}}`,
		`{"spec":{"data":[1,2,300]}}`,
		`{"spec":null,"status":{"conditions":[{"type":"Ready","lastTransitionTime":"2024-01-02T03:04:05Z"}]}}`,
		`{"spec":{"since":"2024-13-02T03:04:05Z"}}`,
		`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}`,
		`{"spec":{"anything":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}}`,
		` {"spec" : { "zone" : "z" } } `,
		`{"kind":"WidgetList","apiVersion":"v1","items":[{"a":1},{"kind":3},null]}`,
		`{"kind":"List","items":null,"items":[{"kind":"X"}]}`,
		`null`, `{}`, `"x"`, `{"spec":{"owner":1}}`, `{"spec":{"replicas":1.0}}`,
		repeatingWidget,
		`{"metadata":{"creationTimestamp":"2024-01-02T03:04:05Z"},"spec":{"since":"2024-01-02T03:04:05Z","owner":"a","owner":"b"}}`,
		// Objects that do not fit the type, named or not.
		badWidget,
		`{"metadata":{"name":"w","uid":"u"},"spec":{"zone":"a","zone":"b","tiny":"big"}}`,
		`{"metadata":{"name":"w","labels":{"a":1}}}`,
		`{"metadata":{"name":7},"spec":{"tiny":"big"}}`,
		`{"metadata":{"namespace":"n"},"spec":{"tiny":"big"}}`,
		`{"metadata":{"name":"w"},"spec":{"values":{"n":1e999}}}`,
	} {
		f.Add([]byte(seed))
	}
	for _, deep := range []int{9999, 10000} {
		f.Add([]byte(`{"spec":{"anything":` + strings.Repeat(`[`, deep) + strings.Repeat(`]`, deep) + `}}`))
	}
	widgets := decoderPair[Widget](f)
	pods := decoderPair[corev1.Pod](f)
	plain, shared := NewUnstructured(false), NewUnstructured(true)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, widgets, b)
		checkDecode(t, pods, b)
		checkUnstructured(t, plain, b)
		checkUnstructured(t, shared, b)
		checkUnstructured(t, shared, b)
		checkUndecodable(t, widgets[1], b)
		checkStream(t, widgets[1], b)
		checkUnstructuredStream(t, shared, b)
	})
}

// checkStream decodes body as a list, whole and streamed in chunks of
// every size from one byte: the stream decodes what the whole decodes,
// and fails where it fails.
func checkStream(t *testing.T, dec *Decoder, body []byte) {
	newWidget := func() *Widget { return &Widget{} }
	want, wantErr := DecodeList(dec, body, "WidgetList", newWidget)
	stream := func(r io.Reader, put func(*Widget), bad func(*decoded.Undecodable)) (metav1.ListMeta, error) {
		return StreamList(dec, r, "WidgetList", newWidget, put, bad)
	}
	for _, max := range []int{1, 7, len(body) + 1} {
		got, err := decodedtest.Collect(stream, decodedtest.Chunked(body, uint64(len(body)*max), max))
		if wantErr != nil {
			require.Error(t, err, "the whole list fails: %v", wantErr)
			continue
		}
		require.NoError(t, err)
		decodedtest.RequireSameList(t, want, got)
	}
}

// checkUndecodable decodes b as the middle item of a list and as a watch
// event's object: what does not decode is named as undecodable, by its
// metadata, if anything names it, and fails the list otherwise; the
// list's other items decode either way.
func checkUndecodable(t *testing.T, dec *Decoder, b []byte) {
	if !json.Valid(b) {
		return
	}
	newWidget := func() *Widget { return &Widget{} }
	var want Widget
	wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &want)
	var names objectNames
	named := wantErr != nil && sigsjson.UnmarshalCaseSensitivePreserveInts(b, &names) == nil && names.Metadata.Name != ""
	body := []byte(`{"kind":"WidgetList","items":[{"metadata":{"name":"first"}},` + string(b) + `,{"metadata":{"name":"last"}}]}`)
	l, err := DecodeList(dec, body, "WidgetList", newWidget)
	_, eventErr := EventDecoder(dec, newWidget)(b, false)
	u := decodedtest.CheckContained(t, wantErr, l, err, eventErr, func(w *Widget) string { return w.Name })
	checkStream(t, dec, body)
	if !named {
		require.Nil(t, u, "named, though its metadata does not name it")
		return
	}
	require.NotNil(t, u, "its metadata names it")
	require.Equal(t, names.Metadata.Name, u.Name)
	require.Equal(t, names.Metadata.Namespace, u.Namespace)
	require.Equal(t, names.Metadata.UID, u.UID)
	require.Equal(t, names.Metadata.ResourceVersion, u.ResourceVersion)
}

// decoderPair returns a decoder of T that does not share and one that
// does.
func decoderPair[T any](f require.TestingT) [2]*Decoder {
	var out [2]*Decoder
	for i, share := range []bool{false, true} {
		dec, err := New(reflect.TypeFor[*T](), Options{Share: share})
		require.NoError(f, err)
		out[i] = dec
	}
	return out
}

// checkDecode decodes b with both decoders and sigs.k8s.io/json.
func checkDecode(t *testing.T, decs [2]*Decoder, b []byte) {
	typ := decs[0].typ
	want := reflect.New(typ)
	wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts(b, want.Interface())
	for _, dec := range []*Decoder{decs[0], decs[1], decs[1]} {
		got := reflect.New(typ)
		err := dec.Decode(got.UnsafePointer(), b)
		if wantErr != nil {
			require.Error(t, err, "sigs.k8s.io/json fails: %v", wantErr)
			continue
		}
		require.NoError(t, err)
		require.True(t, reflect.DeepEqual(want.Interface(), got.Interface()), "%s", valuediff.First(want.Interface(), got.Interface()))
	}
}
