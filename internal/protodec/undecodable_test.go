package protodec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/decoded"
)

// quantityPod returns a pod named name whose container's CPU limit is
// 123m.
func quantityPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("u-" + name), ResourceVersion: "7" + name[1:], Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry/app:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("123m")}}}}},
	}
}

// marshal returns the protobuf encoding of pod, with its CPU limit spelled
// cpu (of the same length as 123m), which need not parse.
func marshal(t *testing.T, pod *corev1.Pod, cpu string) []byte {
	t.Helper()
	b, err := pod.Marshal()
	require.NoError(t, err)
	require.Equal(t, 1, bytes.Count(b, []byte("123m")))
	return bytes.Replace(b, []byte("123m"), []byte(cpu), 1)
}

// listOf returns a PodList response in the protobuf envelope whose items
// are encoded as items.
func listOf(t *testing.T, rv string, items ...[]byte) []byte {
	t.Helper()
	meta, err := (&metav1.ListMeta{ResourceVersion: rv}).Marshal()
	require.NoError(t, err)
	raw := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), meta)
	for _, it := range items {
		raw = protowire.AppendBytes(protowire.AppendTag(raw, 2, protowire.BytesType), it)
	}
	unknown, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Raw: raw}).Marshal()
	require.NoError(t, err)
	return append(append([]byte{}, magic...), unknown...)
}

// A quantity that does not parse (as a server of a later version might
// spell one) leaves its object out of the list, named with the field
// where it failed; the others decode, now and in the next lists, which
// share what the first one decoded. An object that cannot be named fails
// the list.
func TestDecodeListUndecodable(t *testing.T) {
	newPod := func() *corev1.Pod { return new(corev1.Pod) }
	for _, share := range []bool{false, true} {
		dec, err := New(reflect.TypeFor[*corev1.Pod](), Options{Share: share})
		require.NoError(t, err)
		a, b, c := quantityPod("a1"), quantityPod("b2"), quantityPod("c3")
		for range 2 {
			l, err := DecodeList(dec, listOf(t, "90", marshal(t, a, "123m"), marshal(t, b, "12xm"), marshal(t, c, "123m")), "PodList", newPod)
			require.NoError(t, err)
			assert.Equal(t, "90", l.ResourceVersion)
			require.Len(t, l.Items, 2)
			assert.Equal(t, a, l.Items[0])
			assert.Equal(t, c, l.Items[1])
			require.Len(t, l.Undecodable, 1)
			u := l.Undecodable[0]
			assert.Equal(t, decoded.Undecodable{Namespace: "shop", Name: "b2", UID: "u-b2", ResourceVersion: "72",
				Path: "spec.containers[0].resources.limits.cpu", Err: u.Err}, *u)
			assert.ErrorContains(t, u, "object shop/b2 (uid u-b2, resourceVersion 72) does not decode at spec.containers[0].resources.limits.cpu: decoding protobuf of *v1.Pod at spec.containers[0].resources.limits.cpu: quantities must match")
		}
		nameless := quantityPod("b2")
		nameless.Name = ""
		_, err = DecodeList(dec, listOf(t, "90", marshal(t, a, "123m"), marshal(t, nameless, "12xm")), "PodList", newPod)
		require.ErrorContains(t, err, "decoding PodList: item 1: decoding protobuf of *v1.Pod at spec.containers[0].resources.limits.cpu")
		// Metadata whose bytes do not parse: a name field that runs past
		// its end.
		broken := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0x0a, 0x7f, 'b'})
		_, err = DecodeList(dec, listOf(t, "90", marshal(t, a, "123m"), broken), "PodList", newPod)
		require.ErrorContains(t, err, "item 1: decoding protobuf of *v1.Pod at metadata")
	}
}

// The decoder of watch events names an object that does not decode, a
// bookmark's too, and fails as before where it cannot; metadata-only
// objects are named as well.
func TestEventDecoderUndecodable(t *testing.T) {
	dec, err := New(reflect.TypeFor[*corev1.Pod](), Options{Share: true})
	require.NoError(t, err)
	decode := EventDecoder(dec, func() runtime.Object { return new(corev1.Pod) })
	good := quantityPod("a1")
	obj, err := decode(marshal(t, good, "123m"), false)
	require.NoError(t, err)
	assert.Equal(t, good, obj)
	for _, bookmark := range []bool{false, true} {
		_, err = decode(marshal(t, quantityPod("b2"), "12xm"), bookmark)
		u, ok := errors.AsType[*decoded.Undecodable](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, "b2", u.Name)
		assert.Equal(t, "spec.containers[0].resources.limits.cpu", u.Path)
	}
	nameless := quantityPod("b2")
	nameless.Name = ""
	_, err = decode(marshal(t, nameless, "12xm"), false)
	require.ErrorContains(t, err, "quantities must match")
	_, ok := errors.AsType[*decoded.Undecodable](err)
	assert.False(t, ok)

	meta, err := New(reflect.TypeFor[*metav1.PartialObjectMetadata](), Options{Share: true})
	require.NoError(t, err)
	// A creation timestamp whose seconds come as bytes, not a varint.
	badTime := protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("x")))
	metadata := append(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "m1"), badTime...)
	object := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), metadata)
	_, err = EventDecoder(meta, func() *metav1.PartialObjectMetadata { return new(metav1.PartialObjectMetadata) })(object, false)
	u, ok := errors.AsType[*decoded.Undecodable](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "m1", u.Name)
	assert.Equal(t, "metadata.creationTimestamp", u.Path)
}

// A view's decoder names an object that does not decode into the view,
// by the metadata of the API type whose bytes it reads, as the decoder of
// the full type does, so that a watch, or a watch-list's initial events,
// goes on past it.
func TestViewUndecodable(t *testing.T) {
	dec, err := NewView(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), Options{Share: true})
	require.NoError(t, err)
	decode := EventDecoder(dec, func() *podView { return new(podView) })
	v, err := decode(marshal(t, quantityPod("a1"), "123m"), false)
	require.NoError(t, err)
	assert.Equal(t, "a1", v.Metadata.Name)
	_, err = decode(marshal(t, quantityPod("b2"), "12xm"), false)
	u, ok := errors.AsType[*decoded.Undecodable](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, decoded.Undecodable{Namespace: "shop", Name: "b2", UID: "u-b2", ResourceVersion: "72",
		Path: "spec.containers[0].resources.limits.cpu", Err: u.Err}, *u)

}
