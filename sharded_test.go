package informers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/shard"
)

func TestShardOptionErrors(t *testing.T) {
	lw := newPodSource().ListWatch("")
	_, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{Shard: &shard.Shard{Field: "metadata.name"}})
	assert.ErrorContains(t, err, "shard field")
	_, err = informers.NewInformer(lw, informers.Options[*corev1.Pod]{Shard: &shard.Shard{Ranges: []shard.Range{{Start: 5, End: 5}}}})
	assert.ErrorContains(t, err, "empty")

	plain, err := informers.NewInformer(lw, informers.Options[*corev1.Pod]{})
	require.NoError(t, err)
	assert.Equal(t, shard.FilterNone, plain.Shard().Filter)
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
				mine := shard.Of(shard.ByUID, i, 3)
				inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Shard: &mine, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
				require.NoError(t, err)
				testutil.Run(t, inf)
				waitSynced(t, inf)
				for p := range inf.Lister().All() {
					prev, dup := owner[string(p.UID)]
					assert.False(t, dup, "%s in shards %d and %d", key(p), prev, i)
					owner[string(p.UID)] = i
					assert.True(t, mine.Contains(p))
				}
				st := inf.Shard()
				assert.True(t, st.Synced)
				if serverFilters {
					assert.Equal(t, shard.FilterServer, st.Filter)
					assert.Zero(t, st.Dropped)
					assert.Equal(t, uint64(inf.Lister().Len()), st.Received)
				} else {
					assert.Equal(t, shard.FilterClient, st.Filter)
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
			quarters := shard.Split(4)
			prev := shard.Shard{Ranges: quarters[0:2]}
			inf, rec := startRecording(t, src.ListWatch(""), informers.Options[*corev1.Pod]{Shard: &prev, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
			before := len(rec.List())

			next := shard.Shard{Ranges: quarters[1:3]}
			ctx := testutil.Context(t, 10*time.Second)
			require.NoError(t, inf.SetShardRanges(ctx, quarters[1:3]...))

			var want []string
			var entering, leaving int
			for _, p := range all {
				switch in, was := next.Contains(p), prev.Contains(p); {
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
			assert.Equal(t, next.Selector(), inf.Shard().Shard.Selector())

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
			assert.True(t, inf.Shard().Synced)
			require.NoError(t, inf.SetShardRanges(ctx, shard.Range{}))
			assert.Equal(t, len(all)+2, inf.Lister().Len())
		})
	}
}

// WaitForSync waits for the shard an informer was last given: given
// before Run, it is the shard the informer syncs; given while it runs,
// SetShardRanges returns once the informer holds it.
func TestWaitForSyncWaitsForTheShard(t *testing.T) {
	src := newPodSource()
	all := shardPods(t, src, 50)
	quarters := shard.Split(4)
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{Shard: &shard.Shard{Ranges: quarters[:1]}, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	require.NoError(t, err)
	require.NoError(t, inf.SetShardRanges(context.Background(), quarters[1:2]...), "before Run: at once")
	testutil.Run(t, inf)
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, informers.WaitForSync(ctx, inf), "the shard given before Run syncs")
	assert.True(t, inf.Shard().Synced)
	assert.Equal(t, len(filter(all, shard.Shard{Ranges: quarters[1:2]}.Contains)), inf.Lister().Len())

	require.NoError(t, inf.SetShardRanges(ctx, quarters[2:]...), "the re-shard syncs")
	assert.True(t, inf.Shard().Synced)
	require.NoError(t, informers.WaitForSync(ctx, inf))
	assert.Equal(t, len(filter(all, shard.Shard{Ranges: quarters[2:]}.Contains)), inf.Lister().Len())
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
	a, b := shard.Of(shard.ByUID, 0, 2), shard.Of(shard.ByUID, 1, 2)
	sa := informers.InformerWith(f, informers.Options[*corev1.Pod]{Shard: &a})
	sb := informers.InformerWith(f, informers.Options[*corev1.Pod]{Shard: &b})
	same := informers.InformerWith(f, informers.Options[*corev1.Pod]{Shard: &shard.Shard{Ranges: slices.Clone(a.Ranges)}})
	plain := informers.Informer[*corev1.Pod](f)
	assert.NotSame(t, sa, sb)
	assert.Same(t, sa, same)
	assert.NotSame(t, sa, plain)
	require.NoError(t, f.Shutdown(context.Background()))
}
