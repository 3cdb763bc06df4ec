package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/membership"
)

// lockTable is an in-memory fleet.Locks shared by replicas of one process.
type lockTable struct {
	mu      sync.Mutex
	holders map[string]string // cluster → replica
	freed   chan struct{}     // closed and replaced on every release
}

func newLockTable() *lockTable {
	return &lockTable{holders: map[string]string{}, freed: make(chan struct{})}
}

// replicaLocks are a lockTable's Locks as one replica holds them.
type replicaLocks struct {
	table *lockTable
	id    string
}

func (l replicaLocks) Hold(ctx context.Context, name string, engage func(context.Context)) error {
	for {
		l.table.mu.Lock()
		freed := l.table.freed
		if _, held := l.table.holders[name]; !held {
			l.table.holders[name] = l.id
			l.table.mu.Unlock()
			break
		}
		l.table.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-freed:
		}
	}
	engage(ctx)
	l.table.mu.Lock()
	delete(l.table.holders, name)
	close(l.table.freed)
	l.table.freed = make(chan struct{})
	l.table.mu.Unlock()
	return nil
}

// TestShardedHandsClustersOverExclusively runs three replicas, each a
// fleet behind a Sharded target with Locks, given the ranges membership
// assigns, applied by the replicas concurrently as separate processes
// would: while one replica leaves, joins again and stops, a sampler never
// sees a cluster engaged by two replicas, and once each assignment is
// applied every cluster is engaged by exactly one.
func TestShardedHandsClustersOverExclusively(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	var names []string
	clusters := map[string]fleet.Cluster{}
	for n := range 30 {
		name := fmt.Sprintf("cluster-%02d", n)
		names = append(names, name)
		clusters[name] = newTestCluster(t).cluster()
	}
	replicas := []string{"a", "b", "c"}
	locks := newLockTable()
	fleets := make([]*fleet.Fleet, len(replicas))
	targets := make([]*fleet.Sharded, len(replicas))
	offers := make([]context.CancelFunc, len(replicas))
	for n := range replicas {
		fleets[n] = newFleet(t)
		targets[n] = fleet.NewSharded(fleets[n], replicaLocks{locks, replicas[n]})
		var offerCtx context.Context
		offerCtx, offers[n] = context.WithCancel(ctx)
		t.Cleanup(offers[n])
		for name, c := range clusters {
			require.NoError(t, targets[n].Attach(offerCtx, name, c))
		}
	}

	sampling, stopSampling := context.WithCancel(ctx)
	var samples, noneSamples int
	var doubles []string
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampling.Err() == nil {
			twice, none := testutil.Engaged(fleets, names)
			samples++
			doubles = append(doubles, twice...)
			if len(none) > 0 {
				noneSamples++
			}
		}
	}()

	// assign applies, on every replica at once, the ranges of members.
	assign := func(members ...string) {
		t.Helper()
		var wg sync.WaitGroup
		for n, id := range replicas {
			wg.Go(func() { assert.NoError(t, targets[n].SetShardRanges(ctx, membership.Assign(members, id)...)) })
		}
		wg.Wait()
		eventually(t, func() bool {
			twice, none := testutil.Engaged(fleets, names)
			return len(twice) == 0 && len(none) == 0
		}, fmt.Sprintf("each cluster engaged once by %v", members))
		for n, id := range replicas {
			if slices.Contains(members, id) {
				assert.NotEmpty(t, fleets[n].Clusters(), "replica %s engages nothing", id)
			} else {
				assert.Empty(t, fleets[n].Clusters(), "replica %s is no member", id)
			}
		}
	}
	assert.Empty(t, fleets[0].Clusters(), "attached before any range")
	assign("a", "b", "c")
	assign("a", "b")      // c leaves
	assign("a", "b", "c") // c joins again
	offers[2]()           // c stops: its provider's context ends
	eventually(t, func() bool { return len(fleets[2].Clusters()) == 0 }, "c detaches when its provider stops")
	assign("a", "b")
	stopSampling()
	<-sampled
	t.Logf("%d samples, %d with a cluster engaged by none (hand-over under way)", samples, noneSamples)
	assert.Empty(t, doubles, "clusters engaged by two replicas at once")

	require.NoError(t, targets[0].Detach(ctx, "cluster-00"))
	require.NoError(t, targets[1].Detach(ctx, "cluster-00"))
	assert.NotContains(t, append(fleets[0].Clusters(), fleets[1].Clusters()...), "cluster-00")
}

// Without Locks, a Sharded target still splits the clusters: each is
// attached by exactly one replica once the assignment is applied.
func TestShardedSplitsClustersAmongReplicas(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	var names []string
	fleets := make([]*fleet.Fleet, 2)
	targets := make([]*fleet.Sharded, 2)
	for n := range fleets {
		fleets[n] = newFleet(t)
		targets[n] = fleet.NewSharded(fleets[n], nil)
	}
	for n := range 10 {
		name := fmt.Sprintf("cluster-%02d", n)
		names = append(names, name)
		c := newTestCluster(t).cluster()
		for _, s := range targets {
			require.NoError(t, s.Attach(ctx, name, c))
		}
	}
	for n, id := range []string{"a", "b"} {
		require.NoError(t, targets[n].SetShardRanges(ctx, membership.Assign([]string{"a", "b"}, id)...))
	}
	eventually(t, func() bool {
		twice, none := testutil.Engaged(fleets, names)
		return len(twice) == 0 && len(none) == 0
	}, "each cluster attached once")
	require.NoError(t, targets[1].SetShardRanges(ctx))
	require.NoError(t, targets[0].SetShardRanges(ctx, membership.Assign([]string{"a"}, "a")...))
	eventually(t, func() bool { return len(fleets[0].Clusters()) == len(names) }, "a attaches all")
	assert.Empty(t, fleets[1].Clusters())
}

// LeaseLocks hold a Lease named after the group and the cluster's hash
// while the cluster is engaged and delete it after; without a required
// field, Hold and Run fail before any request.
func TestLeaseLocks(t *testing.T) {
	ctx := waitCtx(t)
	cs := fake.NewClientset()
	locks := &fleet.LeaseLocks{Client: cs, Namespace: "ns", Group: "g", Identity: "a", LeaseDuration: 3 * time.Second}
	name := fmt.Sprintf("g-%016x", fleet.Hash("east"))
	engaged := false
	require.NoError(t, locks.Hold(ctx, "east", func(held context.Context) {
		engaged = true
		l, err := cs.CoordinationV1().Leases("ns").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "a", ptr.Deref(l.Spec.HolderIdentity, ""))
		assert.Equal(t, "g", l.Labels[fleet.LockGroupLabel])
		assert.NoError(t, held.Err(), "the lock is held")
	}))
	assert.True(t, engaged)
	_, err := cs.CoordinationV1().Leases("ns").Get(ctx, name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Lease is deleted once released: %v", err)

	for _, tc := range []struct {
		name  string
		locks *fleet.LeaseLocks
	}{
		{"no client", &fleet.LeaseLocks{Namespace: "ns", Group: "g", Identity: "a"}},
		{"no namespace", &fleet.LeaseLocks{Client: cs, Group: "g", Identity: "a"}},
		{"no group", &fleet.LeaseLocks{Client: cs, Namespace: "ns", Identity: "a"}},
		{"no identity", &fleet.LeaseLocks{Client: cs, Namespace: "ns", Group: "g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.locks.Hold(ctx, "east", func(context.Context) { t.Error("engaged without a lock") })
			assert.ErrorContains(t, err, "LeaseLocks needs")
			assert.ErrorContains(t, tc.locks.Run(ctx), "LeaseLocks needs")
		})
	}
}
