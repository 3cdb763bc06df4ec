package informers_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/jsondec"
	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/testutil/valuediff"
	"github.com/kubetyped/informers/shard"
)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// fullPodView names pod fields of every shape a view can hold: its own
// structs for the API's (by value and by pointer), slices and maps of
// them, named types of the same kinds, fields reached through inline
// structs (a volume's hostPath, a config map volume's name), and the
// API's own types held whole (times, quantities, owner references,
// environment variables, tolerations, probes with their IntOrString).
type fullPodView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName       string            `json:"nodeName"`
		NodeSelector   map[string]string `json:"nodeSelector"`
		HostNetwork    bool              `json:"hostNetwork"`
		Priority       *int32            `json:"priority"`
		Deadline       *int64            `json:"activeDeadlineSeconds"`
		ServiceAccount string            `json:"serviceAccountName"`
		Containers     []struct {
			Name           string          `json:"name"`
			Image          string          `json:"image"`
			Command        []string        `json:"command"`
			Env            []corev1.EnvVar `json:"env"`
			ReadinessProbe *corev1.Probe   `json:"readinessProbe"`
			Ports          []struct {
				Name          string          `json:"name"`
				ContainerPort int32           `json:"containerPort"`
				Protocol      corev1.Protocol `json:"protocol"`
			} `json:"ports"`
			Resources struct {
				Limits   map[string]resource.Quantity `json:"limits"`
				Requests corev1.ResourceList          `json:"requests"`
			} `json:"resources"`
			SecurityContext *struct {
				Privileged   *bool  `json:"privileged"`
				RunAsUser    *int64 `json:"runAsUser"`
				Capabilities *struct {
					Add []string `json:"add"`
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
		Overhead corev1.ResourceList `json:"overhead"`
	} `json:"spec"`
	Status *struct {
		Phase      corev1.PodPhase `json:"phase"`
		Conditions []struct {
			Type               corev1.PodConditionType `json:"type"`
			Status             corev1.ConditionStatus  `json:"status"`
			LastTransitionTime metav1.Time             `json:"lastTransitionTime"`
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
		QOSClass corev1.PodQOSClass `json:"qosClass"`
	} `json:"status"`
}

func (p *fullPodView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// podView is the view of the documentation: what a scheduler-like
// controller reads.
type podView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase      corev1.PodPhase `json:"phase"`
		Conditions []struct {
			Type   corev1.PodConditionType `json:"type"`
			Status corev1.ConditionStatus  `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (p *podView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// nodeView is another view of pods, with the whole metadata.
type nodeView struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

func (p *nodeView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// newViewFiller returns a filler of random pods whose every field a JSON
// round trip keeps: times in seconds, none zero, and raw extensions and
// managed fields left empty.
func newViewFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).MaxDepth(8).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			// Never zero: JSON encodes a pointer to a zero time as null.
			*t = metav1.Unix(1+c.Int63n(1<<34), 0)
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(1<<34), 0))
		},
		func(q *resource.Quantity, c randfill.Continue) {
			forms := []string{"%d", "%dm", "%dMi", "%dGi", "%dk"}
			*q = resource.MustParse(fmt.Sprintf(forms[c.Intn(len(forms))], c.Int63n(1<<40)))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {},
		func(f *metav1.FieldsV1, c randfill.Continue) {},
	)
}

// projectJSON returns the view of type V of full, projected as encoding/json
// would: full encoded, and decoded into the view.
func projectJSON[V any](t *testing.T, full any) *V {
	b, err := json.Marshal(full)
	require.NoError(t, err)
	v := new(V)
	require.NoError(t, json.Unmarshal(b, v))
	return v
}

// canonical rewrites every resource.Quantity under v in its canonical
// form, which JSON encodes: a quantity decoded from "1000m" and one from
// "1" are equal, but not to reflect.DeepEqual.
func canonical(v reflect.Value) {
	if v.Type() == reflect.TypeFor[resource.Quantity]() {
		q := v.Addr().Interface().(*resource.Quantity)
		*q = resource.MustParse(q.String())
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			canonical(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				canonical(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			canonical(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			canonical(e)
			v.SetMapIndex(it.Key(), e)
		}
	}
}

// requireSameView checks that got, decoded as a view, is want, projected.
func requireSameView[V any](t *testing.T, want, got *V, msg string) {
	t.Helper()
	canonical(reflect.ValueOf(want))
	canonical(reflect.ValueOf(got))
	require.True(t, reflect.DeepEqual(want, got), "%s:\n%s", msg, valuediff.First(want, got))
}

// TestViewMatchesFullObject decodes random pods, encoded to protobuf and
// to JSON, straight into views that name many of their fields (and into a
// view of metadata only), and compares each with the view projected from
// the pod decoded whole: encoded to JSON and decoded into the view by
// encoding/json. Every decoder shares as informers' do, and decodes each
// pod twice, the second time sharing the first's parts.
func TestViewMatchesFullObject(t *testing.T) {
	const pods = 60
	t.Run("protobuf", func(t *testing.T) {
		full, err := protodec.New(reflect.TypeFor[*corev1.Pod](), protodec.Options{Share: true})
		require.NoError(t, err)
		views, err := protodec.NewView(reflect.TypeFor[*fullPodView](), reflect.TypeFor[*corev1.Pod](), protodec.Options{Share: true})
		require.NoError(t, err)
		metas, err := protodec.NewView(reflect.TypeFor[*metaView](), reflect.TypeFor[*corev1.Pod](), protodec.Options{Share: true})
		require.NoError(t, err)
		for i := range 2 * pods {
			in := &corev1.Pod{}
			newViewFiller(int64(i % pods)).Fill(in)
			data, err := in.Marshal()
			require.NoError(t, err)
			pod := &corev1.Pod{}
			require.NoError(t, full.Decode(unsafe.Pointer(pod), data))

			got := &fullPodView{}
			require.NoError(t, views.Decode(unsafe.Pointer(got), data))
			requireSameView(t, projectJSON[fullPodView](t, pod), got, fmt.Sprintf("pod %d", i))
			gotMeta := &metaView{}
			require.NoError(t, metas.Decode(unsafe.Pointer(gotMeta), data))
			requireSameView(t, projectJSON[metaView](t, pod), gotMeta, fmt.Sprintf("pod %d metadata", i))
		}
	})
	t.Run("json", func(t *testing.T) {
		full, err := jsondec.New(reflect.TypeFor[*corev1.Pod](), jsondec.Options{Share: true})
		require.NoError(t, err)
		views, err := jsondec.New(reflect.TypeFor[*fullPodView](), jsondec.Options{Share: true})
		require.NoError(t, err)
		metas, err := jsondec.New(reflect.TypeFor[*metaView](), jsondec.Options{Share: true})
		require.NoError(t, err)
		for i := range 2 * pods {
			in := &corev1.Pod{}
			newViewFiller(int64(i % pods)).Fill(in)
			data, err := json.Marshal(in)
			require.NoError(t, err)
			pod := &corev1.Pod{}
			require.NoError(t, full.Decode(unsafe.Pointer(pod), data))

			got := &fullPodView{}
			require.NoError(t, views.Decode(unsafe.Pointer(got), data))
			requireSameView(t, projectJSON[fullPodView](t, pod), got, fmt.Sprintf("pod %d", i))
			gotMeta := &metaView{}
			require.NoError(t, metas.Decode(unsafe.Pointer(gotMeta), data))
			requireSameView(t, projectJSON[metaView](t, pod), gotMeta, fmt.Sprintf("pod %d metadata", i))
		}
	})
}

// metaView keeps metadata only: the least a view costs.
type metaView struct {
	informers.ViewMeta `json:"metadata"`
}

func (p *metaView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// copyable holds what DeepCopyView copies besides what views hold:
// arrays, interfaces (a runtime.Object, and another value), maps of
// pointers, and itself.
type copyable struct {
	Array [2]*string
	Obj   runtime.Object
	Any   any
	Refs  map[string]*corev1.Pod
	Q     resource.Quantity
	Next  *copyable
	Kids  []copyable
	small int
	ptr   *int
}

// TestDeepCopyView copies random views, which must equal the originals and
// share no memory a caller could change with them.
func TestDeepCopyView(t *testing.T) {
	for i := range 20 {
		v := &fullPodView{}
		newViewFiller(int64(i)).NilChance(0).NumElements(1, 2).Fill(v)
		c := v.DeepCopyObject().(*fullPodView)
		require.True(t, reflect.DeepEqual(v, c), valuediff.First(v, c))
		assert.Empty(t, sharedMemory(reflect.ValueOf(v), reflect.ValueOf(c), "view"))
	}
	s, n := "s", 3
	v := &copyable{
		Array: [2]*string{&s, nil},
		Obj:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}}},
		Any:   map[string][]int{"x": {1}},
		Refs:  map[string]*corev1.Pod{"p": {Spec: corev1.PodSpec{NodeName: "n"}}},
		Q:     resource.MustParse("1500m"),
		Next:  &copyable{Kids: []copyable{{Any: []string{"k"}}}},
		small: 7,
		ptr:   &n,
	}
	c := informers.DeepCopyView(v)
	require.True(t, reflect.DeepEqual(v, c), valuediff.First(v, c))
	assert.Empty(t, sharedMemory(reflect.ValueOf(v), reflect.ValueOf(c), "copyable"))
	assert.NotSame(t, v.ptr, c.ptr, "unexported pointers are copied too")
	assert.Nil(t, informers.DeepCopyView[copyable](nil))
}

// sharedMemory returns the first path under which a and b, equal values,
// hold the same pointer, slice array or map, "" if none; it does not enter
// unexported fields, whose types (time.Time, resource.Quantity) may share
// what they never change.
func sharedMemory(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer, reflect.Map:
		if a.IsNil() {
			return ""
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return path
		}
		if a.Kind() == reflect.Pointer {
			return sharedMemory(a.Elem(), b.Elem(), path)
		}
		for it := a.MapRange(); it.Next(); {
			if p := sharedMemory(it.Value(), b.MapIndex(it.Key()), fmt.Sprintf("%s[%v]", path, it.Key())); p != "" {
				return p
			}
		}
	case reflect.Slice:
		if a.Len() > 0 && a.UnsafePointer() == b.UnsafePointer() {
			return path
		}
		for i := range a.Len() {
			if p := sharedMemory(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Array:
		for i := range a.Len() {
			if p := sharedMemory(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Interface:
		if !a.IsNil() {
			return sharedMemory(a.Elem(), b.Elem(), path)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				if p := sharedMemory(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// TestViewMeta checks ViewMeta as a metav1.Object: what it keeps, what it
// drops, and its copies.
func TestViewMeta(t *testing.T) {
	now := metav1.Unix(1_700_000_000, 0)
	full := &metav1.ObjectMeta{
		Name: "web-0", Namespace: "shop", UID: "u1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: now, DeletionTimestamp: &now, Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{"a": "1"}, Finalizers: []string{"f"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "o1"}},
		GenerateName:    "web-", DeletionGracePeriodSeconds: new(int64),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
	}
	m := informers.ViewMetaOf(full)
	var obj metav1.Object = &m
	assert.Equal(t, "web-0", obj.GetName())
	assert.Equal(t, "shop", obj.GetNamespace())
	assert.Equal(t, types.UID("u1"), obj.GetUID())
	assert.Equal(t, "42", obj.GetResourceVersion())
	assert.Equal(t, int64(3), obj.GetGeneration())
	assert.Equal(t, now, obj.GetCreationTimestamp())
	assert.Equal(t, &now, obj.GetDeletionTimestamp())
	assert.Equal(t, full.Labels, obj.GetLabels())
	assert.Equal(t, full.Annotations, obj.GetAnnotations())
	assert.Equal(t, full.Finalizers, obj.GetFinalizers())
	assert.Equal(t, full.OwnerReferences, obj.GetOwnerReferences())
	// What it does not keep reads as zero, and cannot be set.
	obj.SetGenerateName("x-")
	obj.SetSelfLink("/x")
	obj.SetDeletionGracePeriodSeconds(new(int64))
	obj.SetManagedFields(full.ManagedFields)
	assert.Empty(t, obj.GetGenerateName())
	assert.Empty(t, obj.GetSelfLink())
	assert.Nil(t, obj.GetDeletionGracePeriodSeconds())
	assert.Nil(t, obj.GetManagedFields())
	// Setters of what it keeps set.
	obj.SetName("web-1")
	obj.SetLabels(map[string]string{"app": "db"})
	obj.SetResourceVersion("43")
	assert.Equal(t, "web-1", m.Name)
	assert.Equal(t, "db", m.Labels["app"])
	assert.Equal(t, "43", m.ResourceVersion)
	assert.True(t, m.GetObjectKind().GroupVersionKind().Empty())

	c := m.DeepCopy()
	require.Equal(t, &m, c)
	assert.Empty(t, sharedMemory(reflect.ValueOf(&m), reflect.ValueOf(c), "meta"))
	assert.Nil(t, (*informers.ViewMeta)(nil).DeepCopy())
	// A view of metadata only is an informers.Object.
	var _ informers.Object = &metaView{}
}

// TestViewInformer serves views of pods from client-go's fake clientset,
// beside the informer of the full type: each its own informer, whose
// listers, indexes and handlers see the same pods.
func TestViewInformer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	web := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "big"}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "web:1", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, Message: "long"}}},
		}
	}
	cs := fake.NewClientset(web("web-0", "n1"), web("web-1", "n2"))
	f := informers.NewFactory(cs)
	defer f.Shutdown(ctx)
	byNode := func(p *podView) []string { return []string{p.Spec.NodeName} }
	views := informers.InformerWith(f, informers.Options[*podView]{Resource: podsResource, Indexers: map[string]informers.IndexFunc[*podView]{"node": byNode}})
	full := informers.Informer[*corev1.Pod](f)
	nodes := informers.InformerWith(f, informers.Options[*nodeView]{Resource: podsResource})
	require.NoError(t, views.LastError())
	require.NoError(t, full.LastError())
	require.NoError(t, nodes.LastError())
	assert.Same(t, views, informers.InformerWith(f, informers.Options[*podView]{Resource: podsResource}), "the same view is the same informer")

	deleted := make(chan informers.Deleted[*podView], 1)
	updated := make(chan *podView, 1)
	_, err := views.AddHandler(informers.HandlerFuncs[*podView]{
		OnUpdate: func(_, p *podView) { updated <- p },
		OnDelete: func(d informers.Deleted[*podView]) { deleted <- d },
	})
	require.NoError(t, err)
	f.Start(ctx)
	require.NoError(t, informers.WaitForSync(ctx, f))

	p, err := views.Lister().Namespace("shop").Get("web-0")
	require.NoError(t, err)
	assert.Equal(t, "n1", p.Spec.NodeName)
	assert.Equal(t, "web:1", p.Spec.Containers[0].Image)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Equal(t, corev1.ConditionTrue, p.Status.Conditions[0].Status)
	assert.Equal(t, "web", p.Labels["app"])
	assert.Equal(t, 2, views.Lister().Len())
	assert.Equal(t, 2, full.Lister().Len())
	assert.Equal(t, 2, nodes.Lister().Len())
	got, err := views.Lister().ByIndex("node", "n2")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "web-1", got[0].Name)
	n, err := nodes.Lister().Namespace("shop").Get("web-1")
	require.NoError(t, err)
	assert.Equal(t, "n2", n.Spec.NodeName)
	assert.Equal(t, "big", n.Annotations["note"])

	moved := web("web-0", "n3")
	_, err = cs.CoreV1().Pods("shop").Update(ctx, moved, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case p := <-updated:
		assert.Equal(t, "n3", p.Spec.NodeName)
	case <-ctx.Done():
		t.Fatal("no update")
	}
	require.NoError(t, cs.CoreV1().Pods("shop").Delete(ctx, "web-1", metav1.DeleteOptions{}))
	select {
	case d := <-deleted:
		assert.Equal(t, "web-1", d.Object.Name)
		assert.Equal(t, "n2", d.Object.Spec.NodeName)
	case <-ctx.Done():
		t.Fatal("no delete")
	}
}

// TestViewInformerErrors checks the requests for views a factory cannot
// serve: each informer names what is wrong.
func TestViewInformerErrors(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset())
	err := informers.InformerWith(f, informers.Options[*metaView]{}).LastError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "for a view, set Options.Resource")

	err = informers.InformerWith(f, informers.Options[*badPlacement]{Resource: podsResource}).LastError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `pods.v1: view *informers_test.badPlacement of *v1.Pod: badPlacement.Spec.Node: v1.PodSpec has no field "node"`)

	err = informers.InformerWith(f, informers.Options[*metaView]{Resource: podsResource, Tuning: informers.Tuning{DisableDecoder: informers.Set(true)}}).LastError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DisableDecoder cannot be set")

	err = informers.InformerWith(f, informers.Options[*podView]{Resource: podsResource, SkipFields: []string{"spec.volumes"}}).LastError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `has no field "volumes"`)
}

// keysAndVersions returns the objects of objs by key, with their versions.
func keysAndVersions[T informers.Object](objs []T) map[types.NamespacedName]string {
	m := map[types.NamespacedName]string{}
	for _, o := range objs {
		m[informers.KeyOf(o)] = o.GetResourceVersion()
	}
	return m
}

// TestViewInformerScopes runs informers of views and of the full type side
// by side with the same selectors, namespace selection and shards, over a
// Server: each pair holds the same pods, as namespaces enter and leave the
// selection. A Tracker of views sees the controller's own writes.
func TestViewInformerScopes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newNamespaceCluster()
	c.label(t, "a", "a")
	c.label(t, "b", "b")
	for i := range 20 {
		p := pod([]string{"a", "b"}[i%2], fmt.Sprintf("p%d", i), map[string]string{"app": []string{"web", "db"}[i%3%2]})
		p.UID = types.UID(fmt.Sprintf("%x", sha256.Sum256([]byte{byte(i)}))[:36])
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%4)
		p.Annotations = map[string]string{"note": "x"}
		mustAdd(t, c.pods, p)
	}
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: c.cluster, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	defer f.Shutdown(ctx)
	half := shard.Of(shard.ByUID, 0, 2)
	type pair struct {
		name  string
		views *informers.SharedInformer[*podView]
		full  *informers.SharedInformer[*corev1.Pod]
	}
	var pairs []pair
	for _, tc := range []struct {
		name string
		opts informers.Options[*corev1.Pod]
	}{
		{"all", informers.Options[*corev1.Pod]{}},
		{"annotations skipped", informers.Options[*corev1.Pod]{LabelSelector: "app in (web, db)", SkipFields: []string{"metadata.annotations"}}},
		{"labels", informers.Options[*corev1.Pod]{LabelSelector: "app=web"}},
		{"namespaces", informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}}},
		{"shard", informers.Options[*corev1.Pod]{Shard: &half}},
		{"namespaces and shard", informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}, Shard: &half}},
	} {
		o := tc.opts
		views := informers.InformerWith(f, informers.Options[*podView]{Resource: podsResource,
			LabelSelector: o.LabelSelector, Tuning: informers.Tuning{NamespaceSelector: o.NamespaceSelector}, Shard: o.Shard, SkipFields: o.SkipFields})
		require.NoError(t, views.LastError(), tc.name)
		full := informers.InformerWith(f, o)
		require.NoError(t, full.LastError(), tc.name)
		pairs = append(pairs, pair{tc.name, views, full})
	}
	f.Start(ctx)
	require.NoError(t, informers.WaitForSync(ctx, f))
	same := func() bool {
		for _, p := range pairs {
			if !assert.ObjectsAreEqual(keysAndVersions(p.full.Lister().List(labels.Everything())), keysAndVersions(p.views.Lister().List(labels.Everything()))) {
				return false
			}
		}
		return true
	}
	for _, p := range pairs {
		assert.Equal(t, keysAndVersions(p.full.Lister().List(labels.Everything())), keysAndVersions(p.views.Lister().List(labels.Everything())), p.name)
		assert.NotEmpty(t, p.views.Lister().List(labels.Everything()), p.name)
	}
	for p := range pairs[1].views.Lister().All() {
		assert.Nil(t, p.Annotations, "skipped")
	}
	for p := range pairs[0].views.Lister().All() {
		assert.Equal(t, "x", p.Annotations["note"])
	}
	selected := func(n int) func() bool {
		return func() bool { return same() && pairs[3].views.Lister().Len() == n }
	}
	c.label(t, "b", "a") // b enters the selection
	require.Eventually(t, selected(20), 20*time.Second, 5*time.Millisecond)
	c.label(t, "a", "") // a leaves it
	require.Eventually(t, selected(10), 20*time.Second, 5*time.Millisecond)

	tracker := informers.NewTracker(pairs[0].views, 0)
	created := pod("a", "new", nil)
	created.Spec.NodeName = "node-9"
	rv, err := c.pods.Add(created)
	require.NoError(t, err)
	created.ResourceVersion = rv
	key := types.NamespacedName{Namespace: "a", Name: "new"}
	require.NoError(t, tracker.Wrote(key, &podView{ViewMeta: informers.ViewMetaOf(created)}))
	got, err := tracker.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "node-9", got.Spec.NodeName)
	assert.Equal(t, rv, got.ResourceVersion)
}
