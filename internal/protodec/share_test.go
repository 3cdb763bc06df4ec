package protodec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/share"

	"github.com/kubetyped/informers/internal/testutil/valuediff"
)

// decodePods encodes n realistic pods and decodes them with dec.
func decodePods(t testing.TB, dec *Decoder, n int, managedFields bool) []*corev1.Pod {
	t.Helper()
	pods := bf.NewPodList(n, bf.PodOptions{Namespaces: 5, Nodes: 10, Deployments: 10, ManagedFields: managedFields, Seed: 4})
	out := make([]*corev1.Pod, n)
	for i := range out {
		data, err := pods.Pod(i).Marshal()
		require.NoError(t, err)
		out[i], err = decoded.Object(dec, data, func() *corev1.Pod { return new(corev1.Pod) })
		require.NoError(t, err)
	}
	return out
}

// Pods of one deployment share their equal parts once decoded, and not
// the parts that differ.
func TestDecoderShares(t *testing.T) {
	dec, err := New(reflect.TypeFor[*corev1.Pod](), Options{Share: true})
	require.NoError(t, err)
	pods := decodePods(t, dec, 400, true)
	// The last 100 pods, 10 of each deployment, decoded apart. Tables are
	// bounded and set-associative, and the hashes that place a value are
	// seeded at random. A table starts with 8 slots and doubles once it
	// has missed more values than it has slots: while more of the 10
	// deployments' values fall in one set of 4 than it holds, they evict
	// each other at every pod until the table grows, which can take a
	// few hundred pods when it happens twice. Past that, now and then a
	// value still keeps being evicted by others that hash alike. So most
	// of a deployment's pods share, not necessarily all, and most
	// deployments, not necessarily every one.
	deployments := make([][]*corev1.Pod, 10)
	for i := 300; i < len(pods); i++ {
		deployments[i%10] = append(deployments[i%10], pods[i])
	}
	deployment0 := deployments[0]
	for part, addr := range map[string]func(*corev1.Pod) any{
		"namespace":        func(p *corev1.Pod) any { return unsafe.StringData(p.Namespace) },
		"containers":       func(p *corev1.Pod) any { return &p.Spec.Containers[0] },
		"volumes":          func(p *corev1.Pod) any { return &p.Spec.Volumes[0] },
		"owner references": func(p *corev1.Pod) any { return &p.OwnerReferences[0] },
		"managed fields":   func(p *corev1.Pod) any { return p.ManagedFields[0].FieldsV1 },
		"labels":           func(p *corev1.Pod) any { return fmt.Sprintf("%p", p.Labels) },
		"image":            func(p *corev1.Pod) any { return unsafe.StringData(p.Status.ContainerStatuses[0].Image) },
	} {
		shared := 0
		for _, pods := range deployments {
			if mostCommon(pods, addr) >= 8 {
				shared++
			}
		}
		require.GreaterOrEqual(t, shared, 9, "%s shared by most of the 10 pods of most deployments", part)
	}
	for part, addr := range map[string]func(*corev1.Pod) any{
		"names":              func(p *corev1.Pod) any { return unsafe.StringData(p.Name) },
		"container statuses": func(p *corev1.Pod) any { return &p.Status.ContainerStatuses[0] },
	} {
		require.Equal(t, 1, mostCommon(deployment0, addr), "%s differ", part)
	}

	plain, err := New(reflect.TypeFor[*corev1.Pod](), Options{})
	require.NoError(t, err)
	pods = decodePods(t, plain, 200, true)
	require.NotSame(t, &pods[100].Spec.Containers[0], &pods[150].Spec.Containers[0], "nothing shared without Share")
}

// mostCommon returns how many of pods have the most common value of addr.
func mostCommon(pods []*corev1.Pod, addr func(*corev1.Pod) any) int {
	counts := map[any]int{}
	for _, p := range pods {
		counts[addr(p)]++
	}
	return slices.Max(slices.Collect(maps.Values(counts)))
}

// The objects of every type of the scheme that share their parts, once
// copied deeply, are independent: changing every field of the copy
// changes nothing in the object it shares with.
func TestDeepCopyIsIndependent(t *testing.T) {
	for _, typ := range messageTypes() {
		if _, ok := reflect.PointerTo(typ).MethodByName("DeepCopy"); !ok {
			continue
		}
		t.Run(typeName(typ), func(t *testing.T) {
			t.Parallel()
			plan := planFor(typ)
			for seed := range uint64(5) {
				in := reflect.New(typ).Interface().(protoMessage)
				newFiller(seed).Fill(in)
				data, err := in.Marshal()
				require.NoError(t, err)
				d := newDecoder(true)
				root := &share.Place{}
				first, second := reflect.New(typ), reflect.New(typ)
				require.NoError(t, d.message(plan, root, first.UnsafePointer(), data))
				require.NoError(t, d.message(plan, root, second.UnsafePointer(), data))
				before := first.MethodByName("DeepCopy").Call(nil)[0]
				c := second.MethodByName("DeepCopy").Call(nil)[0]
				mutate(c.Elem())
				require.True(t, reflect.DeepEqual(before.Interface(), first.Interface()), "seed %d:\n%s", seed, valuediff.First(before.Interface(), first.Interface()))
			}
		})
	}
}

// mutate changes every exported field that v holds, in place.
func mutate(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint8:
		v.SetUint(v.Uint() + 1)
	case reflect.Pointer:
		if !v.IsNil() {
			mutate(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mutate(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			mutate(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			mutate(e)
			v.SetMapIndex(k, e)
		}
		if v.Type().Key().Kind() == reflect.String && !v.IsNil() {
			v.SetMapIndex(reflect.ValueOf("added").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
		}
	}
}

// Values of high cardinality keep tables bounded: a place whose values
// never repeat turns itself off and drops its table, and no table grows
// past its bound.
func TestTablesStayBounded(t *testing.T) {
	dec, err := New(reflect.TypeFor[*corev1.ConfigMap](), Options{Share: true})
	require.NoError(t, err)
	const n = 20 * share.Window
	for i := range n {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: "default", Labels: map[string]string{"app": "web", "id": fmt.Sprint(i)}},
			Data:       map[string]string{"unique": fmt.Sprint("value-", i), "same": "value"},
		}
		data, err := cm.Marshal()
		require.NoError(t, err)
		got, err := decoded.Object(dec, data, func() *corev1.ConfigMap { return new(corev1.ConfigMap) })
		require.NoError(t, err)
		require.Equal(t, cm, got)
	}
	meta := dec.root.Child(1, 0, false)
	name := meta.Child(1, 0, false)
	require.False(t, name.Table().Live(), "names never repeat: the place is off")
	require.True(t, name.Table().Paused())
	require.True(t, meta.Child(3, 0, false).Table().Live(), "the namespace repeats: the place is on")
	total := 0
	for pl := range dec.root.All() {
		require.LessOrEqual(t, pl.Table().Size(), share.MaxSlots)
		total += pl.Table().Size()
	}
	require.Less(t, total, 8*share.MaxSlots, "slots in all the tables")
}

// Skipped fields are never decoded and read as zero; their neighbours are
// decoded as usual. The informer's keys cannot be skipped, nor can what
// does not exist.
func TestSkip(t *testing.T) {
	pods := bf.NewPodList(3, bf.PodOptions{ManagedFields: true, Seed: 5})
	skip := []string{"metadata.managedFields", "status.conditions", "spec.containers.env", "spec.volumes.projected"}
	for _, share := range []bool{false, true} {
		dec, err := New(reflect.TypeFor[*corev1.Pod](), Options{Share: share, Skip: skip})
		require.NoError(t, err)
		clearer, err := New(reflect.TypeFor[*corev1.Pod](), Options{Skip: skip})
		require.NoError(t, err)
		for i := range pods.Len() {
			data, err := pods.Pod(i).Marshal()
			require.NoError(t, err)
			want := &corev1.Pod{}
			require.NoError(t, want.Unmarshal(data))
			require.NotEmpty(t, want.ManagedFields)
			require.NotEmpty(t, want.Spec.Containers[0].Env)
			clearer.Clear(unsafe.Pointer(want))
			require.Empty(t, want.ManagedFields)
			require.Empty(t, want.Status.Conditions)
			require.Empty(t, want.Spec.Containers[0].Env)
			require.Nil(t, want.Spec.Volumes[1].Projected)
			require.NotNil(t, want.Spec.Volumes[0].ConfigMap, "inline VolumeSource: the neighbour stays")
			got, err := decoded.Object(dec, data, func() *corev1.Pod { return new(corev1.Pod) })
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
	}
	for _, bad := range []string{"metadata.name", "metadata", "spec.nothing", "spec.nodeName.x", "metadata.uid"} {
		_, err := New(reflect.TypeFor[*corev1.Pod](), Options{Skip: []string{bad}})
		require.Error(t, err, bad)
	}
}

// A list response decodes into items of their own and the list's metadata.
func TestDecodeList(t *testing.T) {
	wire, err := bf.NewWirePods(bf.NewPodList(20, bf.PodOptions{Seed: 6}), bf.Protobuf, 8)
	require.NoError(t, err)
	pages, err := wire.Pages(8)
	require.NoError(t, err)
	dec, err := New(reflect.TypeFor[*corev1.Pod](), Options{Share: true})
	require.NoError(t, err)
	var total int
	for i, page := range pages {
		l, err := DecodeList(dec, page, "PodList", func() *corev1.Pod { return new(corev1.Pod) })
		require.NoError(t, err)
		want, err := wire.List(metav1.ListOptions{Limit: 8, Continue: continueToken(i)})
		require.NoError(t, err)
		require.Len(t, l.Items, len(want.Items))
		for j := range want.Items {
			require.Equal(t, &want.Items[j], l.Items[j])
		}
		require.Equal(t, want.ResourceVersion, l.ResourceVersion)
		total += len(l.Items)
	}
	require.Equal(t, 20, total)
	_, err = DecodeList(dec, pages[0], "ConfigMapList", func() *corev1.Pod { return new(corev1.Pod) })
	require.ErrorContains(t, err, "PodList")
}

func continueToken(page int) string {
	if page == 0 {
		return ""
	}
	return fmt.Sprint(page)
}
