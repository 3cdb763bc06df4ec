package intern

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/share"
)

// decodedPods returns count realistic pods decoded from enc, sharing no
// memory with each other.
func decodedPods(t testing.TB, count int, managedFields bool, enc bf.Encoding) []*corev1.Pod {
	t.Helper()
	wire, err := bf.NewWirePods(bf.NewPodList(count, bf.PodOptions{Namespaces: 5, Nodes: 20, Deployments: 10, ManagedFields: managedFields, Seed: 7}), enc, 0)
	require.NoError(t, err)
	list, err := wire.List(metav1.ListOptions{})
	require.NoError(t, err)
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods
}

func TestInternKeepsContent(t *testing.T) {
	for _, tc := range []struct {
		managedFields bool
		enc           bf.Encoding
	}{{false, bf.Protobuf}, {true, bf.Protobuf}, {true, bf.JSON}} {
		t.Run(fmt.Sprintf("managedFields=%v/%s", tc.managedFields, tc.enc), func(t *testing.T) {
			pods := decodedPods(t, 300, tc.managedFields, tc.enc)
			want := make([]*corev1.Pod, len(pods))
			for i, p := range pods {
				want[i] = p.DeepCopy()
			}
			in := New[*corev1.Pod]()
			for _, p := range pods {
				in.Intern(p)
			}
			for i := range pods {
				require.Equal(t, want[i], pods[i])
			}
		})
	}
}

func TestInternShares(t *testing.T) {
	pods := decodedPods(t, 40, true, bf.Protobuf)
	in := New[*corev1.Pod]()
	for _, p := range pods {
		in.Intern(p)
	}
	// Pods 0 and 10 come from one deployment (10 deployments) and
	// namespace (5 namespaces), but were decoded apart.
	a, b := pods[0], pods[10]
	require.Equal(t, a.Namespace, b.Namespace)
	require.Same(t, unsafe.StringData(a.Namespace), unsafe.StringData(b.Namespace), "namespace")
	require.Same(t, &a.Spec.Containers[0], &b.Spec.Containers[0], "containers")
	require.Same(t, &a.OwnerReferences[0], &b.OwnerReferences[0], "owner references")
	require.Same(t, a.ManagedFields[0].FieldsV1, b.ManagedFields[0].FieldsV1, "managed fields")
	require.Equal(t, fmt.Sprintf("%p", a.Labels), fmt.Sprintf("%p", b.Labels), "labels")
	require.NotSame(t, &a.Status.ContainerStatuses[0], &b.Status.ContainerStatuses[0], "container statuses differ by container ID")
	require.Same(t, unsafe.StringData(a.Status.ContainerStatuses[0].Image), unsafe.StringData(b.Status.ContainerStatuses[0].Image), "image")
}

func TestInternDeepCopyIsIndependent(t *testing.T) {
	pods := decodedPods(t, 20, false, bf.Protobuf)
	in := New[*corev1.Pod]()
	for _, p := range pods {
		in.Intern(p)
	}
	before := pods[10].DeepCopy()
	c := pods[0].DeepCopy()
	c.Labels["changed"] = "yes"
	c.Spec.Containers[0].Image = "changed"
	c.Spec.Containers[0].Env[0].Name = "CHANGED"
	c.OwnerReferences[0].Name = "changed"
	require.Equal(t, before, pods[10])
}

func TestInternLeavesUniqueValues(t *testing.T) {
	in := New[*corev1.Pod]()
	const count = 20 * share.Window
	for i := range count {
		in.Intern(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      fmt.Sprintf("pod-%d", i),
			Labels:    map[string]string{"app": "web", "id": fmt.Sprint(i)},
		}})
	}
	// Names and label values are unique: their places stop interning after
	// a window, keeping what they saw until then; the labels maps too.
	require.Less(t, len(in.strs), 3*share.Window)
	require.True(t, nodeAt(in.root, "ObjectMeta", "Name").hot.off)
	labels := nodeAt(in.root, "ObjectMeta", "Labels")
	require.True(t, labels.hot.off)
	require.Nil(t, labels.hot.table)
	require.False(t, labels.keyed["app"].off)
	require.True(t, labels.keyed["id"].off)
	require.False(t, nodeAt(in.root, "ObjectMeta", "Namespace").hot.off)
	// A map that is not shared keeps its keys; its values are interned.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "last", Labels: map[string]string{"app": "web", "id": "last"}}}
	want := p.DeepCopy()
	in.Intern(p)
	require.Equal(t, want, p)
}

// nodeAt returns the node of the struct field path names under n.
func nodeAt(n *node, names ...string) *node {
	for _, name := range names {
		f, ok := n.typ.FieldByName(name)
		if !ok || len(f.Index) != 1 {
			panic("no field " + name + " in " + n.typ.String())
		}
		n = n.fields[f.Index[0]].n
	}
	return n
}

func TestNewOnlyPointersToStructs(t *testing.T) {
	require.Nil(t, New[string]())
	require.Nil(t, New[corev1.Pod]())
	in := New[*corev1.Pod]()
	require.NotNil(t, in)
	in.Intern(nil)
}

// BenchmarkIntern reports the time to intern one decoded pod and the heap
// the pods hold before and after.
func BenchmarkIntern(b *testing.B) {
	for _, managedFields := range []bool{false, true} {
		b.Run(fmt.Sprintf("managedFields=%v", managedFields), func(b *testing.B) {
			pods := decodedPods(b, 20_000, managedFields, bf.Protobuf)
			in := New[*corev1.Pod]()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				in.Intern(pods[i%len(pods)])
				i++
			}
		})
	}
}

// BenchmarkInternFirst interns freshly decoded pods, each once, and
// reports the heap they hold per pod without interning (before-B/pod) and
// with it (after-B/pod).
func BenchmarkInternFirst(b *testing.B) {
	const count = 20_000
	for _, managedFields := range []bool{false, true} {
		b.Run(fmt.Sprintf("managedFields=%v", managedFields), func(b *testing.B) {
			var before, after float64
			for b.Loop() {
				b.StopTimer()
				base := bf.LiveHeap()
				pods := decodedPods(b, count, managedFields, bf.Protobuf)
				// decodedPods holds one list: copy each pod out, as the cache does.
				own := make([]*corev1.Pod, len(pods))
				for i, p := range pods {
					c := *p
					own[i] = &c
				}
				pods = nil
				decoded := bf.LiveHeap()
				in := New[*corev1.Pod]()
				b.StartTimer()
				for _, p := range own {
					in.Intern(p)
				}
				b.StopTimer()
				before += float64(decoded-base) / count
				after += float64(bf.LiveHeap()-base) / count
				runtimeKeepAlive(own, in)
				b.StartTimer()
			}
			b.ReportMetric(before/float64(b.N), "before-B/pod")
			b.ReportMetric(after/float64(b.N), "after-B/pod")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*count), "ns/pod")
		})
	}
}

func runtimeKeepAlive(xs ...any) { runtime.KeepAlive(xs) }

func TestInternLike(t *testing.T) {
	pods := decodedPods(t, 20, true, bf.Protobuf)
	in := New[*corev1.Pod]()
	for _, p := range pods[:10] {
		in.Intern(p)
	}
	old := pods[0]
	oldCopy := old.DeepCopy()
	// The same pod as decoded again, with a changed status and label.
	next := decodedPods(t, 20, true, bf.Protobuf)[0]
	next.ResourceVersion = "99999"
	next.Labels["changed"] = "yes"
	next.Status.Conditions[1].Reason = "Changed"
	want := next.DeepCopy()
	in.InternLike(next, old)
	require.Equal(t, want, next)
	require.Equal(t, oldCopy, old, "like is only read")
	require.Same(t, &old.Spec.Containers[0], &next.Spec.Containers[0])
	require.Same(t, unsafe.StringData(string(old.Status.Conditions[1].Type)), unsafe.StringData(string(next.Status.Conditions[1].Type)))
	require.NotSame(t, &old.Status.Conditions[0], &next.Status.Conditions[0], "a changed slice is not shared")
	require.Same(t, &old.Status.ContainerStatuses[0], &next.Status.ContainerStatuses[0])
}

// BenchmarkInternLike interns freshly decoded pods, each once, against the
// pod before it of the same deployment, as the informer does.
func BenchmarkInternLike(b *testing.B) {
	const count, deployments = 20_000, 10
	for _, managedFields := range []bool{false, true} {
		b.Run(fmt.Sprintf("managedFields=%v", managedFields), func(b *testing.B) {
			var n int
			for b.Loop() {
				b.StopTimer()
				pods := decodedPods(b, count, managedFields, bf.Protobuf)
				in := New[*corev1.Pod]()
				b.StartTimer()
				for i, p := range pods {
					if i < deployments {
						in.Intern(p)
					} else {
						in.InternLike(p, pods[i-deployments])
					}
				}
				n += count
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pod")
		})
	}
}

// maps of types without a typed walk go through reflection.
type withMaps struct {
	M map[string][]string
	N map[int32]string
}

func TestInternReflectedMaps(t *testing.T) {
	in := New[*withMaps]()
	mk := func() *withMaps {
		return &withMaps{
			M: map[string][]string{"a": {string([]byte("x")), "y"}, string([]byte("b")): nil},
			N: map[int32]string{1: string([]byte("one"))},
		}
	}
	a, b := mk(), mk()
	in.Intern(a)
	in.Intern(b)
	require.Equal(t, mk(), a)
	require.Equal(t, mk(), b)
	require.Equal(t, fmt.Sprintf("%p", a.M), fmt.Sprintf("%p", b.M))
	require.Equal(t, fmt.Sprintf("%p", a.N), fmt.Sprintf("%p", b.N))
}
