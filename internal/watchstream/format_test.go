package watchstream_test

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers/internal/watchstream"
)

// A response's Content-Type names its format; "" leaves it to the first
// bytes; a media type that is none of the server's is an error naming it.
func TestFormatOf(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		want        watchstream.Format
		wantErr     string
	}{
		{"", watchstream.Sniffed, ""},
		{"application/json", watchstream.JSON, ""},
		{"application/json;charset=utf-8", watchstream.JSON, ""},
		{"application/vnd.kubernetes.protobuf", watchstream.Protobuf, ""},
		{"application/vnd.kubernetes.protobuf;stream=watch", watchstream.Protobuf, ""},
		{"application/cbor", watchstream.CBOR, ""},
		{"application/cbor-seq", watchstream.CBOR, ""},
		{"text/html; charset=utf-8", watchstream.Sniffed, `"text/html; charset=utf-8" is none the library decodes`},
		{"application/yaml", watchstream.Sniffed, `"application/yaml" is none the library decodes`},
		{";;", watchstream.Sniffed, "does not parse"},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			got, err := watchstream.FormatOf(tc.contentType)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The first bytes of the server's encodings tell them apart.
func TestSniff(t *testing.T) {
	assert.Equal(t, watchstream.JSON, watchstream.Sniff([]byte(`{"type":"ADDED"}`)))
	assert.Equal(t, watchstream.CBOR, watchstream.Sniff([]byte{0xd9, 0xd9, 0xf7, 0xa2}))
	assert.Equal(t, watchstream.Protobuf, watchstream.Sniff([]byte("k8s\x00")))
	assert.Equal(t, watchstream.Protobuf, watchstream.Sniff([]byte{0, 0, 1, 2}))
}

// A watch stream in a format without a decoder is watched again through
// Again, whose events come through; without Again it ends with an Error
// event naming the format; an unknown content type fails at once.
func TestFromResponseFormats(t *testing.T) {
	again := func() (watch.Interface, error) {
		w := watch.NewFakeWithChanSize(1, false)
		w.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "again"}})
		w.Stop()
		return w, nil
	}
	body := func() io.ReadCloser { return io.NopCloser(strings.NewReader("\xd9\xd9\xf7\xa0")) }

	w, err := watchstream.FromResponse(t.Context(), body(), "application/cbor-seq", "Pod", watchstream.Decoders[*corev1.Pod]{Again: again})
	require.NoError(t, err)
	got := collect(t, w)
	require.Len(t, got, 1)
	assert.Equal(t, "again", got[0].Object.(*corev1.Pod).Name)

	w, err = watchstream.FromResponse(t.Context(), body(), "", "Pod", watchstream.Decoders[*corev1.Pod]{})
	require.NoError(t, err)
	got = collect(t, w)
	require.Len(t, got, 1)
	require.Equal(t, watch.Error, got[0].Type)
	assert.Contains(t, got[0].Object.(*metav1.Status).Message, "a watch stream of Pod in CBOR")

	_, err = watchstream.FromResponse(t.Context(), body(), "text/plain", "Pod", watchstream.Decoders[*corev1.Pod]{Again: again})
	require.ErrorContains(t, err, `"text/plain"`)
}
