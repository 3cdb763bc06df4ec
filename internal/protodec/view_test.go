package protodec

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// podView names pod fields of every shape a view can hold: strings,
// numbers and booleans of other named types, pointers to them, slices and
// maps of them, structs of its own for the API's structs (by value for
// values and pointers, by pointer for values and pointers), slices and
// maps of its own structs, fields reached through inline structs
// (a volume's hostPath, a config map volume's name), and the API's own
// types (times, quantities, owner references, env vars, tolerations).
type podView struct {
	Metadata struct {
		Name              string                  `json:"name"`
		Namespace         string                  `json:"namespace"`
		UID               types.UID               `json:"uid"`
		ResourceVersion   string                  `json:"resourceVersion"`
		Generation        int64                   `json:"generation"`
		CreationTimestamp metav1.Time             `json:"creationTimestamp"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
		GracePeriod       *int64                  `json:"deletionGracePeriodSeconds"`
		Labels            map[string]string       `json:"labels"`
		Annotations       map[string]string       `json:"annotations"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
		Finalizers        []string                `json:"finalizers"`
	} `json:"metadata"`
	Spec struct {
		NodeName     string            `json:"nodeName"`
		NodeSelector map[string]string `json:"nodeSelector"`
		HostNetwork  bool              `json:"hostNetwork"`
		Priority     *int32            `json:"priority"`
		Deadline     *int64            `json:"activeDeadlineSeconds"`
		Containers   []struct {
			Name  string          `json:"name"`
			Image string          `json:"image"`
			Args  []string        `json:"args"`
			Env   []corev1.EnvVar `json:"env"`
			Ports []struct {
				ContainerPort int32  `json:"containerPort"`
				Protocol      string `json:"protocol"`
			} `json:"ports"`
			Resources struct {
				Limits   map[string]resource.Quantity `json:"limits"`
				Requests corev1.ResourceList          `json:"requests"`
			} `json:"resources"`
			SecurityContext *struct {
				Privileged   *bool `json:"privileged"`
				Capabilities *struct {
					Add []corev1.Capability `json:"add"`
				} `json:"capabilities"`
			} `json:"securityContext"`
		} `json:"containers"`
		Volumes []struct {
			Name     string `json:"name"`
			HostPath *struct {
				Path string `json:"path"`
			} `json:"hostPath"`
			ConfigMap *struct {
				Name  string `json:"name"`
				Items []struct {
					Key  string `json:"key"`
					Path string `json:"path"`
				} `json:"items"`
			} `json:"configMap"`
			Secret *corev1.SecretVolumeSource `json:"secret"`
		} `json:"volumes"`
		Tolerations []corev1.Toleration `json:"tolerations"`
		Affinity    struct {
			NodeAffinity *corev1.NodeAffinity `json:"nodeAffinity"`
		} `json:"affinity"`
		Overhead map[corev1.ResourceName]resource.Quantity `json:"overhead"`
	} `json:"spec"`
	Status *struct {
		Phase      corev1.PodPhase `json:"phase"`
		Conditions []struct {
			Type               string      `json:"type"`
			Status             string      `json:"status"`
			LastTransitionTime metav1.Time `json:"lastTransitionTime"`
		} `json:"conditions"`
		PodIPs []struct {
			IP string `json:"ip"`
		} `json:"podIPs"`
		StartTime         *metav1.Time `json:"startTime"`
		ContainerStatuses []struct {
			Name         string `json:"name"`
			Ready        bool   `json:"ready"`
			RestartCount int32  `json:"restartCount"`
			State        struct {
				Running *struct {
					StartedAt metav1.Time `json:"startedAt"`
				} `json:"running"`
			} `json:"state"`
		} `json:"containerStatuses"`
		QOSClass string `json:"qosClass"`
	} `json:"status"`
}

// emptyView keeps nothing but a name.
type emptyView struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// project fills dst, a view, from src, a value of the API type it views,
// field by field by their JSON names: what the view decoder must decode.
// It is written apart from the plans, as the reference they are checked
// against.
func project(dst, src reflect.Value) {
	if dst.Type() == src.Type() {
		dst.Set(src)
		return
	}
	switch {
	case src.Kind() == reflect.Pointer:
		if !src.IsNil() {
			project(dst, src.Elem())
		}
		return
	case dst.Kind() == reflect.Pointer:
		dst.Set(reflect.New(dst.Type().Elem()))
		project(dst.Elem(), src)
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		for i := range dst.NumField() {
			name, _, _ := strings.Cut(dst.Type().Field(i).Tag.Get("json"), ",")
			if s, ok := jsonField(src, name); ok {
				project(dst.Field(i), s)
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			project(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMapWithSize(dst.Type(), src.Len()))
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(dst.Type().Elem()).Elem()
			project(v, it.Value())
			dst.SetMapIndex(it.Key().Convert(dst.Type().Key()), v)
		}
	default:
		dst.Set(src.Convert(dst.Type()))
	}
}

// jsonField returns the field of struct v named name in JSON, looking
// into its inline structs.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		n, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if n == name {
			return v.Field(i), true
		}
		if n == "" && sf.Type.Kind() == reflect.Struct {
			if f, ok := jsonField(v.Field(i), name); ok {
				return f, true
			}
		}
	}
	return reflect.Value{}, false
}

// projected returns the view of type V of pod.
func projected[V any](pod *corev1.Pod) *V {
	v := new(V)
	project(reflect.ValueOf(v).Elem(), reflect.ValueOf(pod).Elem())
	return v
}

// TestViewMatchesProjection decodes random pods into views, with sharing
// off and on (every pod decoded twice, the second time shared), and
// compares each with the view projected from the pod the generated code
// decodes from the same bytes.
func TestViewMatchesProjection(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(fmt.Sprintf("share=%v", share), func(t *testing.T) {
			views, err := NewView(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), Options{Share: share})
			require.NoError(t, err)
			empty, err := NewView(reflect.TypeFor[*emptyView](), reflect.TypeFor[*corev1.Pod](), Options{Share: share})
			require.NoError(t, err)
			for i := range 2 * objectsPerType {
				in := &corev1.Pod{}
				newFiller(uint64(i % objectsPerType)).NilChance(0.1).Fill(in)
				data, err := in.Marshal()
				require.NoError(t, err)
				pod := &corev1.Pod{}
				require.NoError(t, pod.Unmarshal(data))

				got := &podView{}
				require.NoError(t, views.Decode(reflect.ValueOf(got).UnsafePointer(), data), "pod %d", i)
				want := projected[podView](pod)
				require.True(t, reflect.DeepEqual(want, got), "pod %d:\n%s", i, valuediff.First(want, got))

				gotEmpty := &emptyView{}
				require.NoError(t, empty.Decode(reflect.ValueOf(gotEmpty).UnsafePointer(), data))
				require.Equal(t, pod.Name, gotEmpty.Metadata.Name)
			}
		})
	}
}

// TestViewSkips checks that a view's fields can be skipped by their JSON
// paths, and that the informer's keys cannot.
func TestViewSkips(t *testing.T) {
	in := &corev1.Pod{}
	newFiller(3).NilChance(0).NumElements(1, 3).Fill(in)
	data, err := in.Marshal()
	require.NoError(t, err)
	dec, err := NewView(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](),
		Options{Share: true, Skip: []string{"metadata.labels", "spec.containers.image", "spec.volumes.configMap.name"}})
	require.NoError(t, err)
	got := &podView{}
	require.NoError(t, dec.Decode(reflect.ValueOf(got).UnsafePointer(), data))
	assert.Nil(t, got.Metadata.Labels)
	assert.Equal(t, in.Name, got.Metadata.Name)
	require.NotEmpty(t, got.Spec.Containers)
	assert.Empty(t, got.Spec.Containers[0].Image)
	assert.Equal(t, in.Spec.Containers[0].Name, got.Spec.Containers[0].Name)
	for i, v := range got.Spec.Volumes {
		if v.ConfigMap != nil {
			assert.Empty(t, v.ConfigMap.Name)
			assert.Equal(t, len(in.Spec.Volumes[i].ConfigMap.Items), len(v.ConfigMap.Items))
		}
	}

	_, err = NewView(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), Options{Skip: []string{"metadata.name", "spec.nope"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metadata.name cannot be skipped")
	assert.Contains(t, err.Error(), `has no field "nope"`)
}

// The views CheckView refuses.
type (
	unknownField struct {
		Spec struct {
			NodeNam string `json:"nodeNam"`
		} `json:"spec"`
	}
	wrongCase struct {
		Spec struct {
			NodeName string
		} `json:"spec"`
	}
	wrongKind struct {
		Spec struct {
			Priority *string `json:"priority"`
		} `json:"spec"`
	}
	intForInt32 struct {
		Spec struct {
			Containers []struct {
				Ports []struct {
					ContainerPort int `json:"containerPort"`
				} `json:"ports"`
			} `json:"containers"`
		} `json:"spec"`
	}
	ownJSONAsStruct struct {
		Spec struct {
			Containers []struct {
				LivenessProbe *struct {
					HTTPGet *struct {
						Port struct {
							IntVal int32 `json:"intVal"`
						} `json:"port"`
					} `json:"httpGet"`
				} `json:"livenessProbe"`
			} `json:"containers"`
		} `json:"spec"`
	}
	timeAsString struct {
		Metadata struct {
			CreationTimestamp string `json:"creationTimestamp"`
		} `json:"metadata"`
	}
	sliceForStruct struct {
		Spec []string `json:"spec"`
	}
	containersAsInt struct {
		Spec struct {
			Containers int `json:"containers"`
		} `json:"spec"`
	}
	nameA     struct{ Name string }
	nameB     struct{ Name string }
	bothNamed struct {
		Metadata struct {
			nameA
			nameB
		} `json:"metadata"`
	}
	embedsPointer struct {
		*corev1.PodSpec
	}
)

// TestCheckView checks that views name their faulty field, and that
// views of every shape are accepted.
func TestCheckView(t *testing.T) {
	pod := reflect.TypeFor[*corev1.Pod]()
	for _, tc := range []struct {
		view reflect.Type
		want string // "" if the view is valid
	}{
		{reflect.TypeFor[*podView](), ""},
		{reflect.TypeFor[*emptyView](), ""},
		{reflect.TypeFor[*corev1.Pod](), ""},
		{reflect.TypeFor[*unknownField](), `unknownField.Spec.NodeNam: v1.PodSpec has no field "nodeNam"`},
		{reflect.TypeFor[*wrongCase](), `did you mean "nodeName"?`},
		{reflect.TypeFor[*wrongKind](), "wrongKind.Spec.Priority is a *string, which cannot hold priority's *int32"},
		{reflect.TypeFor[*intForInt32](), "intForInt32.Spec.Containers[].Ports[].ContainerPort is an int, which cannot hold containerPort's int32"},
		{reflect.TypeFor[*ownJSONAsStruct](), "must hold port's intstr.IntOrString, whose JSON is its own"},
		{reflect.TypeFor[*timeAsString](), "must hold creationTimestamp's v1.Time"},
		{reflect.TypeFor[*sliceForStruct](), "sliceForStruct.Spec is a []string, which cannot hold spec's v1.PodSpec"},
		{reflect.TypeFor[*containersAsInt](), "containersAsInt.Spec.Containers is an int, which cannot hold containers' []v1.Container"},
		{reflect.TypeFor[*bothNamed](), `are both named "Name"`},
		{reflect.TypeFor[*embedsPointer](), "cannot embed a pointer"},
		{reflect.TypeFor[podView](), "not a pointer to a struct"},
	} {
		t.Run(tc.view.String(), func(t *testing.T) {
			err := CheckView(tc.view, pod)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	require.Error(t, CheckView(reflect.TypeFor[*podView](), reflect.TypeFor[*struct{}]()))
}

// FuzzViewDecoder decodes arbitrary bytes into a pod view, with sharing
// on or off, and checks that it never panics, fails only where the
// generated code fails, and where the generated code decodes a pod,
// decodes the view projected from it. Its seeds are random pods, whole,
// cut short and with a byte changed, and the crafted encodings of pods;
// `go test` runs them.
func FuzzViewDecoder(f *testing.F) {
	for n := range 8 {
		in := &corev1.Pod{}
		newFiller(uint64(n)).Fill(in)
		data, err := in.Marshal()
		require.NoError(f, err)
		for _, b := range [][]byte{data, data[:len(data)/2], flip(data, len(data)/3)} {
			f.Add(b, n%2 == 0)
		}
	}
	for _, c := range craftedSeeds() {
		if c.typ == reflect.TypeFor[corev1.Pod]() {
			f.Add(c.data, true)
		}
	}
	f.Add(binary.AppendUvarint([]byte{0x12}, 3), false) // a spec whose length runs past the end
	var decs [2]*Decoder
	for i, share := range []bool{false, true} {
		dec, err := NewView(reflect.TypeFor[*podView](), reflect.TypeFor[*corev1.Pod](), Options{Share: share})
		require.NoError(f, err)
		decs[i] = dec
	}
	f.Fuzz(func(t *testing.T, data []byte, sharing bool) {
		pod := &corev1.Pod{}
		wantErr := unmarshalRecovering(pod, data)
		dec := decs[0]
		if sharing {
			dec = decs[1]
		}
		for range 2 {
			got := &podView{}
			err := dec.Decode(reflect.ValueOf(got).UnsafePointer(), data)
			if err != nil && wantErr == nil {
				t.Fatalf("view decoder error %v where the generated code decodes", err)
			}
			if wantErr != nil {
				continue // the view may skip the fault
			}
			want := projected[podView](pod)
			if got.Status == nil && want.Status != nil && reflect.ValueOf(*want.Status).IsZero() {
				// A view's pointer to what the API holds by value is nil
				// if the wire has no such field, which the generated
				// code's zero value cannot tell. Marshal always sends it.
				want.Status = nil
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("decoded differently:\n%s", valuediff.First(want, got))
			}
		}
	})
}
