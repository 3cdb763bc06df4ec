package watchstream

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// protoObject is a generated API type.
type protoObject interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// decodePresized decodes data into a new object of obj's type as Watch
// does: presized, then unmarshaled.
func decodePresized(t testing.TB, obj protoObject, data []byte) protoObject {
	t.Helper()
	typ := reflect.TypeOf(obj).Elem()
	out := reflect.New(typ).Interface().(protoObject)
	if p := sizePlanFor(typ); p != nil {
		p.presize(reflect.ValueOf(out).UnsafePointer(), data)
	}
	require.NoError(t, out.Unmarshal(data))
	return out
}

// Presizing changes what Unmarshal allocates, never what it decodes:
// random objects of many types decode alike with and without it.
func TestPresizeDecodesAlike(t *testing.T) {
	types := []protoObject{
		&corev1.Pod{}, &corev1.Node{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{},
		&corev1.Endpoints{}, &corev1.Event{}, &corev1.Namespace{}, &corev1.PersistentVolume{},
		&corev1.PersistentVolumeClaim{}, &appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{},
		&batchv1.Job{}, &batchv1.CronJob{}, &discoveryv1.EndpointSlice{}, &networkingv1.Ingress{},
		&networkingv1.NetworkPolicy{}, &rbacv1.ClusterRole{}, &rbacv1.RoleBinding{},
	}
	for _, example := range types {
		typ := reflect.TypeOf(example).Elem()
		t.Run(typ.Name(), func(t *testing.T) {
			require.NotNil(t, sizePlanFor(typ), "a plan: every API object has metadata")
			for seed := range int64(20) {
				in := reflect.New(typ).Interface().(protoObject)
				randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 12).MaxDepth(8).Fill(in)
				data, err := in.Marshal()
				require.NoError(t, err)
				want := reflect.New(typ).Interface().(protoObject)
				require.NoError(t, want.Unmarshal(data))
				assert.Equal(t, want, decodePresized(t, example, data), "seed %d", seed)
			}
		})
	}
}

// A pod's slices, including those of its metadata, spec and status, get
// the capacity they need, no more: appended one by one, three elements
// would take a capacity of four, five of eight.
func TestPresizeCapacities(t *testing.T) {
	var pod corev1.Pod
	for i := range 5 {
		name := fmt.Sprint("x", i)
		pod.Finalizers = append(pod.Finalizers, name)
		pod.ManagedFields = append(pod.ManagedFields, metav1.ManagedFieldsEntry{Manager: name})
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name})
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: name})
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(name)})
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: name})
	}
	for _, n := range []int{2, 3, 5} {
		in := pod.DeepCopy()
		in.Finalizers, in.ManagedFields = in.Finalizers[:n], in.ManagedFields[:n]
		in.Spec.Containers, in.Spec.Volumes, in.Spec.Tolerations = in.Spec.Containers[:n], in.Spec.Volumes[:n], in.Spec.Tolerations[:n]
		in.Status.Conditions, in.Status.ContainerStatuses = in.Status.Conditions[:n], in.Status.ContainerStatuses[:n]
		data, err := in.Marshal()
		require.NoError(t, err)
		out := decodePresized(t, &corev1.Pod{}, data).(*corev1.Pod)
		for name, s := range map[string]any{
			"metadata.finalizers":      out.Finalizers,
			"metadata.managedFields":   out.ManagedFields,
			"spec.containers":          out.Spec.Containers,
			"spec.volumes":             out.Spec.Volumes,
			"spec.tolerations":         out.Spec.Tolerations,
			"status.conditions":        out.Status.Conditions,
			"status.containerStatuses": out.Status.ContainerStatuses,
		} {
			v := reflect.ValueOf(s)
			assert.Equal(t, n, v.Len(), "%s: length", name)
			assert.Equal(t, n, v.Cap(), "%s: capacity", name)
		}
	}
}

// A malformed encoding stops presizing without harm: Unmarshal reports it.
func TestPresizeMalformed(t *testing.T) {
	pods := bf.NewPodList(1, bf.PodOptions{ManagedFields: true, Seed: 1})
	data, err := pods.Pod(0).Marshal()
	require.NoError(t, err)
	plan := sizePlanFor(reflect.TypeFor[corev1.Pod]())
	for _, cut := range []int{1, 2, 3, len(data) / 3, len(data) / 2, len(data) - 1} {
		var pod corev1.Pod
		plan.presize(reflect.ValueOf(&pod).UnsafePointer(), data[:cut])
		assert.Error(t, pod.Unmarshal(data[:cut]), "cut at %d", cut)
	}
	var pod corev1.Pod
	plan.presize(reflect.ValueOf(&pod).UnsafePointer(), []byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f})
}

// BenchmarkDecodePod decodes realistic pods, as Watch does, with and
// without presizing.
func BenchmarkDecodePod(b *testing.B) {
	for _, managedFields := range []bool{false, true} {
		pods := bf.NewPodList(100, bf.PodOptions{Namespaces: 2, Nodes: 10, Deployments: 10, ManagedFields: managedFields, Seed: 2})
		encoded := make([][]byte, pods.Len())
		for i := range encoded {
			data, err := pods.Pod(i).Marshal()
			require.NoError(b, err)
			encoded[i] = data
		}
		plan := sizePlanFor(reflect.TypeFor[corev1.Pod]())
		for _, presize := range []bool{false, true} {
			b.Run(fmt.Sprintf("managedFields=%v/presize=%v", managedFields, presize), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					data := encoded[i%len(encoded)]
					pod := &corev1.Pod{}
					if presize {
						plan.presize(reflect.ValueOf(pod).UnsafePointer(), data)
					}
					if err := pod.Unmarshal(data); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
