package decoded

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// nameDecoder decodes an object's encoding as its name.
type nameDecoder struct{}

func (nameDecoder) Decode(p unsafe.Pointer, b []byte) error {
	if len(b) == 0 {
		return errors.New("empty")
	}
	(*corev1.ConfigMap)(p).Name = string(b)
	return nil
}

// Objects are decoded into what newT makes, whether T is a pointer type
// or an interface that holds one.
func TestObject(t *testing.T) {
	cm, err := Object(nameDecoder{}, []byte("a"), func() *corev1.ConfigMap { return &corev1.ConfigMap{} })
	require.NoError(t, err)
	assert.Equal(t, "a", cm.Name)

	obj, err := Object(nameDecoder{}, []byte("b"), func() runtime.Object { return &corev1.ConfigMap{} })
	require.NoError(t, err)
	assert.Equal(t, "b", obj.(*corev1.ConfigMap).Name)

	obj, err = Object(nameDecoder{}, nil, func() runtime.Object { return &corev1.ConfigMap{} })
	require.EqualError(t, err, "empty")
	assert.Nil(t, obj)
}

// Pointer is the address a pointer holds, held directly or in an
// interface.
func TestPointer(t *testing.T) {
	cm := &corev1.ConfigMap{}
	var obj runtime.Object = cm
	assert.Equal(t, unsafe.Pointer(cm), Pointer(cm))
	assert.Equal(t, unsafe.Pointer(cm), Pointer(obj))
}
