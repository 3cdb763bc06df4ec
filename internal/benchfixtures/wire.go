package benchfixtures

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// Encoding is a wire format of the API server.
type Encoding string

// The wire formats.
const (
	Protobuf = Encoding(runtime.ContentTypeProtobuf)
	JSON     = Encoding(runtime.ContentTypeJSON)
)

// Encode encodes obj, a typed object of client-go's scheme, as the API
// server would send it in enc.
func Encode(obj runtime.Object, enc Encoding) ([]byte, error) {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), string(enc))
	if !ok {
		return nil, fmt.Errorf("benchfixtures: no serializer for %s", enc)
	}
	return runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
}

// Decode decodes data into a new object with client-go's codecs, as a
// client does with a response: every string is a new allocation.
func Decode(data []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	return obj, err
}

// WirePods serves a PodList the way an API server does: encoded, in pages
// of the size a list asks for, and decoded into new objects by client-go's
// codecs on every list, so that decoded objects share no memory with each
// other or with earlier lists.
type WirePods struct {
	pod func(i int) *corev1.Pod // a new copy of pod i
	n   int
	rv  string
	enc Encoding

	mu    sync.Mutex
	pages map[int64][][]byte // encoded pages by page size; 0: the whole list
}

// NewWirePods returns pods served in enc, with pages of pageSize encoded
// ahead (others are encoded on first use).
func NewWirePods(pods *PodList, enc Encoding, pageSize int64) (*WirePods, error) {
	return newWirePods(pods.Pod, pods.Len(), pods.ResourceVersion(), enc, pageSize)
}

// NewWireMinimalPods returns count MinimalPods in namespace ns, served as
// NewWirePods serves realistic ones.
func NewWireMinimalPods(count int, ns string, rng *rand.Rand, enc Encoding, pageSize int64) (*WirePods, error) {
	pods := MinimalPods(count, ns, rng)
	for i := range pods {
		pods[i].ResourceVersion = strconv.Itoa(1000 + i)
	}
	pod := func(i int) *corev1.Pod { return pods[i].DeepCopy() }
	return newWirePods(pod, count, strconv.Itoa(1000+count), enc, pageSize)
}

func newWirePods(pod func(int) *corev1.Pod, n int, rv string, enc Encoding, pageSize int64) (*WirePods, error) {
	w := &WirePods{pod: pod, n: n, rv: rv, enc: enc, pages: map[int64][][]byte{}}
	if _, err := w.encoded(pageSize); err != nil {
		return nil, err
	}
	return w, nil
}

// Len returns the number of pods.
func (w *WirePods) Len() int { return w.n }

// List returns the page opts asks for: at most opts.Limit pods (all if 0)
// from where opts.Continue points, decoded afresh, with a continue token
// if more follow. Resource versions are ignored: the list never changes.
func (w *WirePods) List(opts metav1.ListOptions) (*corev1.PodList, error) {
	data, err := w.ListBytes(opts)
	if err != nil {
		return nil, err
	}
	obj, err := Decode(data)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*corev1.PodList)
	if !ok {
		return nil, fmt.Errorf("benchfixtures: decoded %T, want *corev1.PodList", obj)
	}
	return list, nil
}

// ListBytes returns the page opts asks for as List does, encoded as the
// server sends it, with its continue token: the response a client
// decodes. The bytes are shared: they must not be changed.
func (w *WirePods) ListBytes(opts metav1.ListOptions) ([]byte, error) {
	pages, err := w.encoded(opts.Limit)
	if err != nil {
		return nil, err
	}
	page := 0
	if opts.Continue != "" {
		if page, err = strconv.Atoi(opts.Continue); err != nil || page < 0 || page >= len(pages) {
			return nil, fmt.Errorf("benchfixtures: bad continue token %q", opts.Continue)
		}
	}
	return pages[page], nil
}

// Pages returns the list encoded in pages of size, as ListBytes serves
// them.
func (w *WirePods) Pages(size int64) ([][]byte, error) { return w.encoded(size) }

// Pod returns pod i, or, if rv is not 0, the version Modified makes with
// that resource version, encoded and decoded again.
func (w *WirePods) Pod(i, rv int) (*corev1.Pod, error) {
	p := w.pod(i)
	if rv != 0 {
		p = Modified(p, rv)
	}
	data, err := Encode(p, w.enc)
	if err != nil {
		return nil, err
	}
	obj, err := Decode(data)
	if err != nil {
		return nil, err
	}
	out, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("benchfixtures: decoded %T, want *corev1.Pod", obj)
	}
	return out, nil
}

// encoded returns the list encoded in pages of size, encoding them once.
func (w *WirePods) encoded(size int64) ([][]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := size
	if pages, ok := w.pages[key]; ok {
		return pages, nil
	}
	n := int64(w.n)
	if size <= 0 || size > n {
		size = max(n, 1)
	}
	var pages [][]byte
	for start := int64(0); start < n || len(pages) == 0; start += size {
		end := min(start+size, n)
		list := &corev1.PodList{
			TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: w.rv},
			Items:    make([]corev1.Pod, 0, end-start),
		}
		if end < n {
			list.Continue = strconv.Itoa(len(pages) + 1)
		}
		for i := start; i < end; i++ {
			list.Items = append(list.Items, *w.pod(int(i)))
		}
		data, err := Encode(list, w.enc)
		if err != nil {
			return nil, err
		}
		pages = append(pages, data)
	}
	w.pages[key] = pages
	return pages, nil
}

// WatchFrame returns a frame of a protobuf watch stream as the server
// sends it: a 4-byte big-endian length, then a metav1.WatchEvent of type
// typ whose object is obj in the protobuf envelope.
func WatchFrame(typ watch.EventType, obj runtime.Object) ([]byte, error) {
	data, err := Encode(obj, Protobuf)
	if err != nil {
		return nil, err
	}
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}}
	body, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...), nil
}
