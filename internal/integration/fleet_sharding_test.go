package integration

import (
	"context"
	"fmt"
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
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
	"github.com/kubetyped/informers/membership"
)

// Three replicas, each a fleet behind a fleet.Sharded target followed by
// a membership.Member, split nine clusters (names for one real control
// plane, which also holds the Leases): each cluster is engaged by exactly
// one replica, and when one replica stops renewing its Lease, the two
// others engage its clusters within the lease duration plus 5 seconds.
// Meanwhile, as package membership says of ranges, a cluster moving
// between two live replicas may be engaged by both for a moment: the test
// logs how long.
func TestFleetShardingTakeover(t *testing.T) {
	testutil.NoLeaks(t)
	env := testenv.Shared(t)
	cs := clientset(t, env.Config())
	ctx := testutil.Context(t, 5*time.Minute)
	ns := testutil.Namespace(t, cs)
	clusters := fleet.Static{}
	for n := range 9 {
		clusters[fmt.Sprintf("cluster-%d", n)] = fleet.Cluster{RESTConfig: env.Config()}
	}

	const leaseDuration = 3 * time.Second
	type replica struct {
		cut    *leaseCut
		fl     *fleet.Fleet
		member *membership.Member
	}
	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	replicas := make([]*replica, 3)
	t.Cleanup(func() {
		stop()
		wg.Wait()
		for _, r := range replicas {
			require.NoError(t, r.fl.Shutdown(context.Background()))
		}
	})
	for i := range replicas {
		r := &replica{cut: &leaseCut{}, fl: fleet.New(fleet.Options{Factory: informers.FactoryOptions{Namespace: ns, Backoff: fastBackoff}})}
		fleet.Informer[*corev1.ConfigMap](r.fl)
		cfg := env.Config()
		cfg.WrapTransport = r.cut.wrap
		rcs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		r.member, err = membership.New(membership.Config{
			Client: rcs, Namespace: ns, Group: "fleet", Identity: fmt.Sprintf("replica-%d", i),
			LeaseDuration: leaseDuration, RenewInterval: leaseDuration / 3,
		})
		require.NoError(t, err)
		sharded := fleet.NewSharded(r.fl)
		r.member.Follow(sharded)
		wg.Go(func() { assert.NoError(t, r.member.Run(runCtx)) })
		wg.Go(func() { assert.NoError(t, clusters.Run(runCtx, sharded)) })
		replicas[i] = r
	}

	// engaged counts each cluster's replicas.
	engaged := func(live []*replica) (twice []string, none []string) {
		count := map[string]int{}
		for _, r := range live {
			for _, c := range r.fl.Clusters() {
				count[c]++
			}
		}
		for c := range clusters {
			switch count[c] {
			case 0:
				none = append(none, c)
			case 1:
			default:
				twice = append(twice, c)
			}
		}
		slices.Sort(twice)
		slices.Sort(none)
		return twice, none
	}
	exactlyOnce := func(live ...*replica) func() (bool, string) {
		return func() (bool, string) {
			twice, none := engaged(live)
			return len(twice) == 0 && len(none) == 0, fmt.Sprintf("engaged twice %v, by none %v", twice, none)
		}
	}
	ok, msg := pollUntil(time.Minute, exactlyOnce(replicas...))
	require.True(t, ok, "three replicas: %s", msg)
	for i, r := range replicas {
		t.Logf("replica-%d engages %v", i, r.fl.Clusters())
	}

	// Sample all along: how long a cluster is engaged twice.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var samples, doubleSamples int
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			samples++
			if twice, _ := engaged(replicas); len(twice) > 0 {
				doubleSamples++
			}
		}
	}()
	replicas[2].cut.cut.Store(true) // replica-2 stops renewing
	cut := time.Now()
	ok, msg = pollUntil(leaseDuration+20*time.Second, exactlyOnce(replicas[:2]...))
	took := time.Since(cut)
	stopSampling()
	<-sampled
	require.True(t, ok, "two replicas: %s", msg)
	t.Logf("takeover %v after replica-2 stopped renewing (lease duration %v); a cluster engaged twice in %d of %d samples 20 ms apart",
		took.Round(time.Millisecond), leaseDuration, doubleSamples, samples)
	assert.Less(t, took, leaseDuration+5*time.Second, "the takeover bound")
	assert.Empty(t, replicas[2].fl.Clusters(), "the replica that cannot renew keeps clusters")
}
