package jsondec

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informers/internal/decoded"
)

// EventDecoder returns the function that decodes the object of a JSON
// watch event with dec into a new object made by newT, which must make
// objects of the decoder's type. The stream validated each event whole
// (Event). As client-go's decoder does, it leaves the objects' apiVersion
// and kind empty. An object that does not decode fails with its
// *decoded.Undecodable, if its metadata names it. A bookmark keeps its
// annotations whatever fields dec skips: the one that ends a watch-list's
// initial events is read there.
func EventDecoder[T runtime.Object](dec *Decoder, newT func() T) decoded.EventFunc[T] {
	return func(data []byte, bookmark bool) (T, error) {
		obj := newT()
		if err := dec.DecodeValid(decoded.Pointer(obj), data); err != nil {
			var zero T
			return zero, orUndecodable(data, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if bookmark {
			keepAnnotations(obj, data)
		}
		return obj, nil
	}
}

// keepAnnotations sets on obj, a bookmark decoded from data, the
// annotations of data's metadata, if the decoding skipped them.
func keepAnnotations(obj runtime.Object, data []byte) {
	m, ok := obj.(metav1.Object)
	if !ok || len(m.GetAnnotations()) > 0 {
		return
	}
	var bookmark struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &bookmark) == nil && len(bookmark.Metadata.Annotations) > 0 {
		m.SetAnnotations(bookmark.Metadata.Annotations)
	}
}

// UnstructuredEventDecoder returns the function that decodes the object
// of a JSON watch event with u into an unstructured object, which must be
// a T (T is *unstructured.Unstructured or an interface it implements).
// The stream validated each event whole (Event). An object that does not
// decode fails with its *decoded.Undecodable, if its metadata names it.
func UnstructuredEventDecoder[T runtime.Object](u *Unstructured) decoded.EventFunc[T] {
	return func(data []byte, _ bool) (T, error) {
		var zero T
		obj, err := u.DecodeValid(data)
		if err != nil {
			return zero, orUndecodable(data, err)
		}
		t, ok := obj.(T)
		if !ok {
			return zero, fmt.Errorf("watch event object is a %T", obj)
		}
		return t, nil
	}
}
