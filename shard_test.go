package informers_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

// HashOf is the hash of apimachinery's shard selectors, which the API
// server evaluates: FNV-1a 64 over the field's bytes.
func TestHashOfMatchesAPIMachinery(t *testing.T) {
	for _, v := range []string{"", "a", "default", "0a6c4e5e-1f0b-4c1e-9c53-3f1c1c7a1b2d", "ünïcödé", strings.Repeat("x", 300)} {
		obj := &metav1.ObjectMeta{UID: types.UID(v), Namespace: v}
		want := fnv.New64a()
		want.Write([]byte(v))
		for _, field := range []informers.ShardField{informers.ShardByUID, informers.ShardByNamespace} {
			got := informers.HashOf(field, obj)
			assert.Equal(t, want.Sum64(), got, "%s of %q", field, v)
			assert.Equal(t, apisharding.HashField(v), fmt.Sprintf("%016x", got), "%s of %q", field, v)
		}
	}
}

func TestSplitHashSpace(t *testing.T) {
	for n := 1; n <= 7; n++ {
		rs := informers.SplitHashSpace(n)
		require.Len(t, rs, n)
		assert.Zero(t, rs[0].Start, "n=%d starts at 0", n)
		assert.Zero(t, rs[n-1].End, "n=%d ends at 2^64", n)
		for i := 1; i < n; i++ {
			assert.Equal(t, rs[i-1].End, rs[i].Start, "n=%d: ranges adjoin", n)
			// Each range is within one of 2^64/n.
			size := rs[i].Start - rs[i-1].Start
			assert.InDelta(t, math.Exp2(64)/float64(n), float64(size), 2, "n=%d", n)
		}
	}
	assert.Nil(t, informers.SplitHashSpace(0))
	assert.Equal(t, []informers.HashRange{{}}, informers.SplitHashSpace(1), "one range: the whole space")
}

func TestShardSelector(t *testing.T) {
	const half, quarter = 1 << 63, 1 << 62
	tests := []struct {
		name  string
		shard informers.Shard
		want  string
	}{
		{"whole space", informers.Shard{Ranges: []informers.HashRange{{}}},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"lower half", informers.ShardOf(informers.ShardByUID, 0, 2),
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{"upper half by namespace", informers.ShardOf(informers.ShardByNamespace, 1, 2),
			"shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"},
		{"adjacent ranges merge", informers.Shard{Ranges: []informers.HashRange{{Start: quarter, End: half}, {Start: 0, End: quarter}}},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{"overlapping ranges merge, others sorted", informers.Shard{Ranges: []informers.HashRange{
			{Start: half + quarter, End: 0}, {Start: 0, End: half}, {Start: 1, End: 2}}},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || " +
				"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"},
		{"no ranges", informers.Shard{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.shard.Selector())
			if tt.want == "" {
				return
			}
			parsed, err := informers.ParseShardSelector(tt.want)
			require.NoError(t, err)
			assert.Equal(t, tt.want, parsed.Selector(), "round trip")
		})
	}
}

func TestParseShardSelectorRejects(t *testing.T) {
	for _, sel := range []string{
		"",
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", // the server wants 16 digits
		"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
	} {
		_, err := informers.ParseShardSelector(sel)
		assert.Error(t, err, "%q", sel)
	}
}

func TestShardOptionErrors(t *testing.T) {
	lw := newPodSource().ListWatch("")
	_, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Shard: &informers.Shard{Field: "metadata.name"}})
	assert.ErrorContains(t, err, "shard field")
	_, err = informers.NewInformer(lw, informers.Options[*corev1.Pod]{Shard: &informers.Shard{Ranges: []informers.HashRange{{Start: 5, End: 5}}}})
	assert.ErrorContains(t, err, "empty")

	plain, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	assert.Equal(t, informers.ShardFilterNone, plain.ShardStatus().Filter)
	assert.ErrorContains(t, plain.SetShardRanges(context.Background()), "without Options.Shard")
}

// shardPods adds n pods with distinct UIDs to src and returns them.
func shardPods(t *testing.T, src *podSource, n int) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod("ns", fmt.Sprintf("p%03d", i), nil)
		out[i].UID = uuid.NewUUID() // spread as a server's are
		mustAdd(t, src, out[i])
	}
	return src.Objects()
}

// Three shards hold disjoint sets whose union is the source's, whether the
// server filters (Dropped 0) or the client does.
func TestShardsPartitionObjects(t *testing.T) {
	for _, serverFilters := range []bool{true, false} {
		t.Run(fmt.Sprintf("server filters=%v", serverFilters), func(t *testing.T) {
			src := newPodSource()
			src.IgnoreShardSelectors(!serverFilters)
			all := shardPods(t, src, 300)
			owner := map[string]int{}
			for i := range 3 {
				shard := informers.ShardOf(informers.ShardByUID, i, 3)
				inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Shard: &shard, Backoff: fastBackoff})
				require.NoError(t, err)
				testutil.Run(t, inf)
				waitSynced(t, inf)
				for p := range inf.Lister().All() {
					prev, dup := owner[string(p.UID)]
					assert.False(t, dup, "%s in shards %d and %d", key(p), prev, i)
					owner[string(p.UID)] = i
					assert.True(t, shard.Contains(p))
				}
				st := inf.ShardStatus()
				assert.True(t, st.Synced)
				if serverFilters {
					assert.Equal(t, informers.ShardFilterServer, st.Filter)
					assert.Zero(t, st.Dropped)
					assert.Equal(t, uint64(inf.Lister().Len()), st.Received)
				} else {
					assert.Equal(t, informers.ShardFilterClient, st.Filter)
					assert.Equal(t, uint64(len(all)), st.Received)
					assert.Equal(t, uint64(len(all)-inf.Lister().Len()), st.Dropped)
				}
			}
			assert.Len(t, owner, len(all), "every object has an owner")
		})
	}
}

// Re-scoping adds what enters the shard before deleting, as LeftShard,
// what leaves it; what stays is not notified.
func TestSetShardRanges(t *testing.T) {
	for _, serverFilters := range []bool{true, false} {
		t.Run(fmt.Sprintf("server filters=%v", serverFilters), func(t *testing.T) {
			src := newPodSource()
			src.IgnoreShardSelectors(!serverFilters)
			all := shardPods(t, src, 200)
			quarters := informers.SplitHashSpace(4)
			shard := informers.Shard{Ranges: quarters[0:2]}
			inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Shard: &shard, Backoff: fastBackoff})
			before := len(rec.List())

			next := informers.Shard{Ranges: quarters[1:3]}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, inf.SetShardRanges(ctx, quarters[1:3]...))

			var want []string
			var entering, leaving int
			for _, p := range all {
				switch in, was := next.Contains(p), shard.Contains(p); {
				case in && !was:
					entering++
					want = append(want, "add "+key(p))
				case was && !in:
					leaving++
					want = append(want, "delete "+key(p)+" left")
				}
			}
			require.NotZero(t, entering)
			require.NotZero(t, leaving)
			testutil.Eventually(t, func() bool { return len(rec.List()) == before+len(want) }, "the handler sees the change")
			got := rec.List()[before:]
			assert.ElementsMatch(t, want, got)
			lastAdd := slices.IndexFunc(got, func(e string) bool { return strings.HasPrefix(e, "delete") })
			assert.False(t, slices.ContainsFunc(got[lastAdd:], func(e string) bool { return strings.HasPrefix(e, "add") }),
				"every add comes before the first delete: %v", got)
			assert.Equal(t, names(filter(all, next.Contains)), names(inf.Lister().List(nil)))
			assert.Equal(t, next.Selector(), inf.ShardStatus().Shard.Selector())

			// Changes after the re-scope are followed in the new shard only.
			var in, out *corev1.Pod
			for i := 0; in == nil || out == nil; i++ {
				p := pod("ns", fmt.Sprintf("late%03d", i), nil)
				p.UID = uuid.NewUUID()
				if next.Contains(p) && in == nil {
					in = p
				} else if !next.Contains(p) && out == nil {
					out = p
				} else {
					continue
				}
				mustAdd(t, src, p)
			}
			testutil.Eventually(t, func() bool { return rec.Has("add " + key(in)) }, "the new shard's new object is seen")
			_, err := inf.Lister().Namespace("ns").Get(out.Name)
			assert.Error(t, err, "an object outside the shard is not cached")

			// No ranges: everything leaves; the whole space: everything enters.
			require.NoError(t, inf.SetShardRanges(ctx))
			assert.Zero(t, inf.Lister().Len())
			assert.True(t, inf.ShardStatus().Synced)
			require.NoError(t, inf.SetShardRanges(ctx, informers.HashRange{}))
			assert.Equal(t, len(all)+2, inf.Lister().Len())
		})
	}
}

func filter(pods []*corev1.Pod, keep func(metav1.Object) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// The shard is part of what tells a Factory's informers apart.
func TestFactoryShardKey(t *testing.T) {
	cluster := informerstest.NewCluster()
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), newPodSource())
	f := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster})
	a, b := informers.ShardOf(informers.ShardByUID, 0, 2), informers.ShardOf(informers.ShardByUID, 1, 2)
	sa := informers.InformerWith(f, informers.Options[*corev1.Pod]{Shard: &a})
	sb := informers.InformerWith(f, informers.Options[*corev1.Pod]{Shard: &b})
	same := informers.InformerWith(f, informers.Options[*corev1.Pod]{Shard: &informers.Shard{Ranges: slices.Clone(a.Ranges)}})
	plain := informers.Informer[*corev1.Pod](f)
	assert.NotSame(t, sa, sb)
	assert.Same(t, sa, same)
	assert.NotSame(t, sa, plain)
	require.NoError(t, f.Shutdown(context.Background()))
}
