package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/membership"
)

// Three replicas, each a fleet behind a fleet.Sharded target with
// fleet.LeaseLocks, followed by a membership.Member, split nine clusters
// (names for one real control plane, which also holds the Leases). A
// sampler checks, all along, that no cluster is engaged by two replicas at
// once: while a fourth replica joins and leaves cleanly, clusters move
// between live replicas; then one replica stops renewing its Leases and
// the others engage its clusters within the lease duration plus 5
// seconds. Once each change has settled, each cluster is engaged by
// exactly one replica.
func TestFleetShardingTakeover(t *testing.T) {
	env, _, ns, ctx := sharedServer(t, 5*time.Minute)
	clusters := fleet.Static{}
	for n := range 9 {
		clusters[fmt.Sprintf("cluster-%d", n)] = fleet.Cluster{RESTConfig: env.Config()}
	}

	const leaseDuration = 3 * time.Second
	type replica struct {
		cut  *leaseCut
		fl   *fleet.Fleet
		stop context.CancelFunc
		done sync.WaitGroup
	}
	var replicas []*replica
	t.Cleanup(func() {
		for _, r := range replicas {
			r.stop()
			r.done.Wait()
			require.NoError(t, r.fl.Shutdown(context.Background()))
		}
	})
	start := func(i int) *replica {
		r := &replica{cut: &leaseCut{}, fl: fleet.New(fleet.Options{Factory: informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}}})}
		replicas = append(replicas, r)
		fleet.Informer[*corev1.ConfigMap](r.fl)
		cfg := env.Config()
		cfg.WrapTransport = r.cut.wrap
		rcs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		id := fmt.Sprintf("replica-%d", i)
		member, err := membership.New(membership.Config{
			Client: rcs, Namespace: ns, Group: "fleet", Identity: id,
			LeaseDuration: leaseDuration, RenewInterval: leaseDuration / 3,
		})
		require.NoError(t, err)
		locks := &fleet.LeaseLocks{Client: rcs, Namespace: ns, Group: "fleet-clusters", Identity: id, LeaseDuration: leaseDuration}
		sharded := fleet.NewSharded(r.fl, locks)
		member.Follow(sharded)
		var runCtx context.Context
		runCtx, r.stop = context.WithCancel(context.Background())
		r.done.Go(func() { assert.NoError(t, locks.Run(runCtx)) })
		r.done.Go(func() { assert.NoError(t, member.Run(runCtx)) })
		r.done.Go(func() { assert.NoError(t, clusters.Run(runCtx, sharded)) })
		return r
	}

	// engaged samples which of the live replicas engage each cluster.
	names := slices.Sorted(maps.Keys(clusters))
	engaged := func(live []*replica) (twice []string, none []string) {
		fleets := make([]*fleet.Fleet, len(live))
		for n, r := range live {
			fleets[n] = r.fl
		}
		return testutil.Engaged(fleets, names)
	}
	exactlyOnce := func(live ...*replica) func() (bool, string) {
		return func() (bool, string) {
			twice, none := engaged(live)
			return len(twice) == 0 && len(none) == 0, fmt.Sprintf("engaged twice %v, by none %v", twice, none)
		}
	}
	for i := range 3 {
		start(i)
	}
	ok, msg := pollUntil(time.Minute, exactlyOnce(replicas...))
	require.True(t, ok, "three replicas: %s", msg)
	for i, r := range replicas {
		t.Logf("replica-%d engages %v", i, r.fl.Clusters())
	}

	// Sample all along, every replica that ever ran.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var samples, noneSamples int
	var doubles []string
	sampled := make(chan struct{})
	fourth := start(3) // joins while sampled
	all := slices.Clone(replicas)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			samples++
			twice, none := engaged(all)
			doubles = append(doubles, twice...)
			if len(none) > 0 {
				noneSamples++
			}
		}
	}()

	ok, msg = pollUntil(time.Minute, func() (bool, string) {
		ok, msg := exactlyOnce(replicas...)()
		return ok && len(fourth.fl.Clusters()) > 0, msg
	})
	require.True(t, ok, "a fourth replica joined: %s", msg)
	fourth.stop() // it leaves cleanly, deleting its Leases
	fourth.done.Wait()
	ok, msg = pollUntil(time.Minute, exactlyOnce(replicas[:3]...))
	require.True(t, ok, "the fourth replica left: %s", msg)
	assert.Empty(t, fourth.fl.Clusters(), "the replica that left keeps clusters")

	replicas[2].cut.cut.Store(true) // replica-2 stops renewing its Leases
	cut := time.Now()
	ok, msg = pollUntil(leaseDuration+20*time.Second, exactlyOnce(replicas[:2]...))
	took := time.Since(cut)
	stopSampling()
	<-sampled
	require.True(t, ok, "two replicas: %s", msg)
	t.Logf("takeover %v after replica-2 stopped renewing (lease duration %v); %d samples 5 ms apart, %d with a cluster engaged by none (a hand-over under way)",
		took.Round(time.Millisecond), leaseDuration, samples, noneSamples)
	assert.Empty(t, doubles, "clusters engaged by two replicas at once")
	assert.Less(t, took, leaseDuration+5*time.Second, "the takeover bound")
	assert.Empty(t, replicas[2].fl.Clusters(), "the replica that cannot renew keeps clusters")
}
