package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(ns, name string, labels ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"l": fmt.Sprint(labels)}}}
}

// byLabels indexes a pod under its label values.
func byLabels(p *corev1.Pod) []string {
	var vals []string
	for _, v := range p.Labels {
		vals = append(vals, v, v) // duplicates must be ignored
	}
	return vals
}

// putAt stores p in list generation gen.
func putAt(s *Store[*corev1.Pod], p *corev1.Pod, gen uint64) error {
	_, _, _, err := s.PutLocked(KeyOf(p), p, Version{UID: p.UID, ResourceVersion: p.ResourceVersion}, gen)
	return err
}

func keys(objs []*corev1.Pod) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = KeyOf(o).String()
	}
	slices.Sort(out)
	return out
}

func put(s *Store[*corev1.Pod], p *corev1.Pod) (*corev1.Pod, bool) {
	s.Lock()
	defer s.Unlock()
	old, _, existed, _ := s.PutLocked(KeyOf(p), p, Version{UID: p.UID, ResourceVersion: p.ResourceVersion}, 1)
	return old, existed
}

func del(s *Store[*corev1.Pod], ns, name string) bool {
	s.Lock()
	defer s.Unlock()
	_, ok := s.DeleteLocked(Key{Namespace: ns, Name: name})
	return ok
}

// slotsOf returns every bucket e sits in: all, its namespace, its indexes.
func slotsOf(s *Store[*corev1.Pod], e *entry[*corev1.Pod]) []slot[*corev1.Pod] {
	return append([]slot[*corev1.Pod]{{b: s.all, pos: e.allPos}, {b: e.ns, pos: e.nsPos}}, e.indexSlots()...)
}

// checkInvariants verifies that every bucket holds exactly the objects that
// belong in it, at the positions their entries record.
func checkInvariants(t *testing.T, s *Store[*corev1.Pod]) {
	t.Helper()
	s.RLock()
	defer s.RUnlock()
	require.Len(t, s.all.objs, len(s.items))
	for key, it := range s.items {
		e := it.e
		require.Same(t, e.obj, it.obj, "the map's object of %s", key)
		require.Equal(t, key, KeyOf(e.obj))
		require.Same(t, s.byNS[key.Namespace], e.ns)
		for _, sl := range slotsOf(s, e) {
			require.Same(t, e.obj, sl.b.objs[sl.pos], "slot position of %s in %q", key, sl.b.value)
		}
		for _, ix := range s.indexes {
			want := slices.Compact(slices.Sorted(slices.Values(ix.fn(e.obj))))
			var got []string
			for _, sl := range e.indexSlots() {
				if sl.b.ix == ix {
					got = append(got, sl.b.value)
				}
			}
			slices.Sort(got)
			require.Equal(t, want, got, "index %q of %s", ix.name, key)
		}
	}
	total := 0
	for ns, b := range s.byNS {
		require.NotZero(t, b.len(), "empty namespace bucket %q kept", ns)
		total += b.len()
	}
	require.Equal(t, len(s.items), total)
	slotted := 0
	for _, it := range s.items {
		slotted += len(it.e.indexSlots())
	}
	inBuckets := 0
	for _, ix := range s.indexes {
		for v, b := range ix.buckets {
			require.NotZero(t, b.len(), "empty bucket %q kept", v)
			require.Equal(t, v, b.value)
			inBuckets += b.len()
		}
	}
	require.Equal(t, slotted, inBuckets, "objects in index buckets")
}

func TestStoreOperations(t *testing.T) {
	tests := []struct {
		name    string
		ops     func(s *Store[*corev1.Pod])
		all     []string
		nsA     []string
		indexed map[string][]string
	}{
		{
			name:    "adds",
			ops:     func(s *Store[*corev1.Pod]) { put(s, pod("a", "x", "red")); put(s, pod("b", "y", "blue")) },
			all:     []string{"a/x", "b/y"},
			nsA:     []string{"a/x"},
			indexed: map[string][]string{"[red]": {"a/x"}, "[blue]": {"b/y"}},
		},
		{
			name: "update keeps index value",
			ops: func(s *Store[*corev1.Pod]) {
				put(s, pod("a", "x", "red"))
				put(s, pod("a", "x", "red"))
			},
			all:     []string{"a/x"},
			nsA:     []string{"a/x"},
			indexed: map[string][]string{"[red]": {"a/x"}},
		},
		{
			name: "update moves between index values",
			ops: func(s *Store[*corev1.Pod]) {
				put(s, pod("a", "x", "red"))
				put(s, pod("a", "y", "red"))
				put(s, pod("a", "x", "blue"))
			},
			all:     []string{"a/x", "a/y"},
			nsA:     []string{"a/x", "a/y"},
			indexed: map[string][]string{"[red]": {"a/y"}, "[blue]": {"a/x"}},
		},
		{
			name: "delete from the middle",
			ops: func(s *Store[*corev1.Pod]) {
				for _, n := range []string{"p", "q", "r", "s"} {
					put(s, pod("a", n, "red"))
				}
				del(s, "a", "q")
			},
			all:     []string{"a/p", "a/r", "a/s"},
			nsA:     []string{"a/p", "a/r", "a/s"},
			indexed: map[string][]string{"[red]": {"a/p", "a/r", "a/s"}},
		},
		{
			name: "delete everything",
			ops: func(s *Store[*corev1.Pod]) {
				put(s, pod("a", "x", "red"))
				put(s, pod("b", "x", "red"))
				del(s, "a", "x")
				del(s, "b", "x")
				assert.False(t, del(s, "b", "x"), "second delete")
			},
			all:     []string{},
			nsA:     []string{},
			indexed: map[string][]string{"[red]": {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New[*corev1.Pod]()
			require.NoError(t, s.AddIndex("color", byLabels))
			tt.ops(s)
			checkInvariants(t, s)
			assert.Equal(t, tt.all, keys(s.AppendAll(nil)))
			assert.Equal(t, tt.nsA, keys(s.AppendNamespace(nil, "a")))
			for v, want := range tt.indexed {
				got, ok := s.AppendIndex(nil, "color", v)
				require.True(t, ok)
				assert.Equal(t, want, keys(got), "value %s", v)
			}
		})
	}
}

func TestStoreStaleSweep(t *testing.T) {
	s := New[*corev1.Pod]()
	s.Lock()
	require.NoError(t, putAt(s, pod("a", "x"), 1))
	require.NoError(t, putAt(s, pod("a", "y"), 1))
	require.NoError(t, putAt(s, pod("a", "z"), 1))
	// List generation 2 sees x (changed) and z (unchanged).
	require.NoError(t, putAt(s, pod("a", "x"), 2))
	assert.True(t, s.TouchLocked(Key{Namespace: "a", Name: "z"}, 2))
	assert.False(t, s.TouchLocked(Key{Namespace: "a", Name: "nope"}, 2))
	stale := s.AppendStaleLocked(nil, 2)
	s.Unlock()
	assert.Equal(t, []Key{{Namespace: "a", Name: "y"}}, stale)
}

// Stale keys come in the order of namespace and name, whatever the order
// of the objects in the store, after what dst held.
func TestStoreStaleKeysInOrder(t *testing.T) {
	s := New[*corev1.Pod]()
	s.Lock()
	defer s.Unlock()
	for _, p := range []*corev1.Pod{pod("b", "w"), pod("a", "z"), pod("a", "x"), pod("b", "a"), pod("a", "y")} {
		require.NoError(t, putAt(s, p, 1))
	}
	s.DeleteLocked(Key{Namespace: "a", Name: "z"}) // moves the last object of each bucket
	first := Key{Namespace: "z", Name: "first"}
	assert.Equal(t, []Key{first, {Namespace: "a", Name: "x"}, {Namespace: "a", Name: "y"}, {Namespace: "b", Name: "a"}, {Namespace: "b", Name: "w"}}, s.AppendStaleLocked([]Key{first}, 2))
	assert.Equal(t, []Key{first, {Namespace: "b", Name: "a"}, {Namespace: "b", Name: "w"}}, s.AppendStaleInNamespaceLocked([]Key{first}, "b", 2))
}

// A namespace's sweep sees only that namespace: the objects of another,
// listed in another generation, are not stale to it.
func TestStoreStaleSweepInNamespace(t *testing.T) {
	s := New[*corev1.Pod]()
	s.Lock()
	require.NoError(t, putAt(s, pod("a", "x"), 1))
	require.NoError(t, putAt(s, pod("a", "y"), 1))
	require.NoError(t, putAt(s, pod("b", "x"), 2))
	// Namespace a's list, generation 3, sees x only.
	assert.True(t, s.TouchLocked(Key{Namespace: "a", Name: "x"}, 3))
	assert.Equal(t, []Key{{Namespace: "a", Name: "y"}}, s.AppendStaleInNamespaceLocked(nil, "a", 3))
	assert.Empty(t, s.AppendStaleInNamespaceLocked(nil, "b", 2))
	assert.Empty(t, s.AppendStaleInNamespaceLocked(nil, "none", 3))
	s.Unlock()
}

func TestStoreAddIndexErrors(t *testing.T) {
	s := New[*corev1.Pod]()
	require.Error(t, s.AddIndex(NamespaceIndex, byLabels))
	require.Error(t, s.AddIndex("x", nil))
	require.NoError(t, s.AddIndex("x", byLabels))
	require.Error(t, s.AddIndex("x", byLabels))
	assert.True(t, s.HasIndex("x"))
	assert.True(t, s.HasIndex(NamespaceIndex))
	assert.False(t, s.HasIndex("y"))
	_, ok := s.AppendIndex(nil, "y", "v")
	assert.False(t, ok)
	_, ok = s.IndexValues("y")
	assert.False(t, ok)
}

func TestStorePanickingIndexFunc(t *testing.T) {
	s := New[*corev1.Pod]()
	require.NoError(t, s.AddIndex("bad", func(p *corev1.Pod) []string {
		if p.Name == "boom" {
			panic("no")
		}
		return []string{"v"}
	}))
	s.Lock()
	err := putAt(s, pod("a", "boom"), 1)
	err2 := putAt(s, pod("a", "ok"), 1)
	s.Unlock()
	var ixErr *IndexFuncError
	require.ErrorAs(t, err, &ixErr)
	assert.Equal(t, "bad", ixErr.Index)
	require.NoError(t, err2)
	checkInvariantsSkipping(t, s)
	got, _ := s.AppendIndex(nil, "bad", "v")
	assert.Equal(t, []string{"a/ok"}, keys(got))
	assert.Equal(t, 2, s.Len())
}

// checkInvariantsSkipping checks bucket positions only; index contents of a
// panicking index cannot be recomputed.
func checkInvariantsSkipping(t *testing.T, s *Store[*corev1.Pod]) {
	t.Helper()
	s.RLock()
	defer s.RUnlock()
	for _, it := range s.items {
		for _, sl := range slotsOf(s, it.e) {
			require.Same(t, it.obj, sl.b.objs[sl.pos])
		}
	}
}

// Random operations, with an index added half way, keep every invariant.
func TestStoreRandomOperations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := New[*corev1.Pod]()
	colors := []string{"red", "green", "blue"}
	model := map[Key]*corev1.Pod{}
	for i := range 5000 {
		if i == 2500 {
			require.NoError(t, s.AddIndex("color", byLabels))
		}
		ns, name := fmt.Sprint("ns", r.IntN(4)), fmt.Sprint("p", r.IntN(60))
		k := Key{Namespace: ns, Name: name}
		if r.IntN(3) == 0 {
			_, had := model[k]
			assert.Equal(t, had, del(s, ns, name))
			delete(model, k)
			continue
		}
		var ls []string
		for range r.IntN(3) {
			ls = append(ls, colors[r.IntN(len(colors))])
		}
		p := pod(ns, name, ls...)
		old, existed := put(s, p)
		if prev, ok := model[k]; ok {
			require.True(t, existed)
			require.Same(t, prev, old)
		} else {
			require.False(t, existed)
		}
		model[k] = p
		if i%250 == 0 {
			checkInvariants(t, s)
		}
	}
	checkInvariants(t, s)
	require.Equal(t, len(model), s.Len())
	for k, p := range model {
		got, ok := s.Get(k)
		require.True(t, ok)
		require.Same(t, p, got)
	}
}

func TestBucketShrinks(t *testing.T) {
	s := New[*corev1.Pod]()
	for i := range 1000 {
		put(s, pod("a", fmt.Sprint(i)))
	}
	for i := range 990 {
		del(s, "a", fmt.Sprint(i))
	}
	checkInvariants(t, s)
	assert.Less(t, cap(s.all.objs), 200, "capacity given back")
}

// An entry of a store without custom indexes fits the 80-byte size class:
// its size is most of what the store adds to each cached object.
func TestEntrySize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are given for 64-bit platforms")
	}
	assert.EqualValues(t, 80, unsafe.Sizeof(entry[*corev1.Pod]{}))
}

// A caller that renames a cached object, which it must not do, leaves the
// store working: deletions that move the renamed object, and the sweeps
// after a list, find its entry, and it stays under the key it was stored
// under.
func TestStoreSurvivesARenamedCachedObject(t *testing.T) {
	s := New[*corev1.Pod]()
	require.NoError(t, s.AddIndex("color", byLabels))
	s.Lock()
	defer s.Unlock()
	renamed := pod("a", "z", "red")
	for _, p := range []*corev1.Pod{pod("a", "x", "red"), pod("a", "y", "red"), renamed, pod("b", "w", "red")} {
		require.NoError(t, putAt(s, p, 1))
	}
	renamed.Name, renamed.Namespace = "elsewhere", "c"

	// Deleting x moves the renamed object, last in its namespace's bucket.
	_, ok := s.DeleteLocked(Key{Namespace: "a", Name: "x"})
	require.True(t, ok)
	assert.Equal(t, []Key{{Namespace: "a", Name: "y"}, {Namespace: "a", Name: "z"}}, s.AppendStaleInNamespaceLocked(nil, "a", 2))
	assert.Equal(t, []Key{{Namespace: "a", Name: "y"}, {Namespace: "a", Name: "z"}, {Namespace: "b", Name: "w"}}, s.AppendStaleLocked(nil, 2))
	got, ok := s.GetLocked(Key{Namespace: "a", Name: "z"})
	require.True(t, ok)
	assert.Same(t, renamed, got)
	for _, key := range []Key{{Namespace: "a", Name: "y"}, {Namespace: "a", Name: "z"}, {Namespace: "b", Name: "w"}} {
		_, ok := s.DeleteLocked(key)
		require.True(t, ok, "%s", key)
	}
	assert.Empty(t, s.AppendAllLocked(nil))
	assert.Empty(t, s.byNS)
	assert.Empty(t, s.indexes[0].buckets)
}

// BenchmarkStoreDeleteAdd deletes a random pod of a store of 100k in 50
// namespaces and adds it back: one op is one deletion and one addition,
// each moving the last object of every bucket the pod leaves.
func BenchmarkStoreDeleteAdd(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		b.Run(fmt.Sprintf("indexed=%t", indexed), func(b *testing.B) {
			s := New[*corev1.Pod]()
			if indexed {
				require.NoError(b, s.AddIndex("color", byLabels))
			}
			const count = 100_000
			pods := make([]*corev1.Pod, count)
			s.Lock()
			defer s.Unlock()
			for i := range pods {
				pods[i] = pod(fmt.Sprint("ns-", i%50), fmt.Sprint("pod-", i), fmt.Sprint("color-", i%500))
				require.NoError(b, putAt(s, pods[i], 1))
			}
			r := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				p := pods[r.IntN(count)]
				s.DeleteLocked(KeyOf(p))
				_, _, _, _ = s.PutLocked(KeyOf(p), p, Version{}, 1)
			}
		})
	}
}
