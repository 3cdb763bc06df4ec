package apiclient

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decoders share one decoder per type and skipped fields between the
// clients that have them (a fleet's), and between the list-watches made
// with one Decoding.Shared (an informer's namespaces), typed and
// unstructured alike.
func TestDecodersShareOneDecoderPerTypeAndSkip(t *testing.T) {
	shared := &Decoders{}
	a, b := &Client{decoders: shared}, &Client{decoders: shared}
	alone := &Client{}
	perInformer := &Decoders{} // Decoding.Shared of one informer's namespaces

	tests := []struct {
		name      string
		x, y      func() (any, error)
		wantSame  bool
		wantNoDec bool
	}{
		{"same type, same clients' Decoders", dec[*corev1.Pod](a, Decoding{}), dec[*corev1.Pod](b, Decoding{}), true, false},
		{"other skipped fields", dec[*corev1.Pod](a, Decoding{}), dec[*corev1.Pod](b, Decoding{Skip: []string{"metadata.managedFields"}}), false, false},
		{"other type", dec[*corev1.Pod](a, Decoding{}), dec[*corev1.ConfigMap](b, Decoding{}), false, false},
		{"no Decoders", dec[*corev1.Pod](alone, Decoding{}), dec[*corev1.Pod](alone, Decoding{}), false, false},
		{"decoder off", dec[*corev1.Pod](a, Decoding{Disabled: true}), dec[*corev1.Pod](b, Decoding{Disabled: true}), true, true},
		{"Decoding.Shared", dec[*corev1.Pod](alone, Decoding{Shared: perInformer}), dec[*corev1.Pod](alone, Decoding{Shared: perInformer}), true, false},
		{"unstructured, same clients' Decoders", unstructuredDec(a, Decoding{}), unstructuredDec(b, Decoding{}), true, false},
		{"unstructured, Decoding.Shared", unstructuredDec(alone, Decoding{Shared: perInformer}), unstructuredDec(alone, Decoding{Shared: perInformer}), true, false},
		{"unstructured, another informer", unstructuredDec(alone, Decoding{Shared: perInformer}), unstructuredDec(alone, Decoding{Shared: &Decoders{}}), false, false},
		{"unstructured, no Decoders", unstructuredDec(alone, Decoding{}), unstructuredDec(alone, Decoding{}), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := tt.x()
			require.NoError(t, err)
			y, err := tt.y()
			require.NoError(t, err)
			assert.Equal(t, tt.wantNoDec, x == nil)
			if tt.wantSame {
				assert.Equal(t, x, y)
			} else {
				assert.NotSame(t, x, y)
			}
		})
	}
}

func dec[T Object](a *Client, o Decoding) func() (any, error) {
	return func() (any, error) {
		d, err := decoderOf[T](a, o)
		if d == nil {
			return nil, err
		}
		return d, err
	}
}

func unstructuredDec(a *Client, o Decoding) func() (any, error) {
	return func() (any, error) { return unstructuredDecoderOf(a, o) }
}

// NewClearer clears built-in types by their protobuf plans and other
// structs by their JSON plans, refuses the fields an informer needs, and
// names a type whose fields cannot be skipped.
func TestNewClearer(t *testing.T) {
	type resource struct {
		metav1.ObjectMeta `json:"metadata"`
		Spec              map[string]string `json:"spec"`
	}
	tests := []struct {
		name    string
		obj     any
		paths   []string
		want    any
		wantErr string
	}{
		{"built-in type", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "y"}}}, []string{"metadata.labels"},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, ""},
		{"custom resource", &resource{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: map[string]string{"x": "y"}}, []string{"spec"},
			&resource{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, ""},
		{"a field the informer needs", &corev1.ConfigMap{}, []string{"metadata.name"}, nil, "the informer needs it"},
		{"no plan", &map[string]any{}, nil, nil, "its fields cannot be skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClearer(reflect.TypeOf(tt.obj), tt.paths)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, c)
				return
			}
			require.NoError(t, err)
			c.Clear(reflect.ValueOf(tt.obj).UnsafePointer())
			assert.Equal(t, tt.want, tt.obj)
		})
	}
}
