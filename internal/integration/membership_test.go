package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/membership"
	"github.com/kubetyped/informers/shard"
)

// leaseCut fails a replica's writes of Leases when cut: its renewals stop,
// everything else goes through.
type leaseCut struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (c *leaseCut) wrap(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c }

func (c *leaseCut) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.cut.Load() && req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/leases") {
		return nil, fmt.Errorf("lease writes cut")
	}
	return c.next.RoundTrip(req)
}

type replica struct {
	name   string
	cut    *leaseCut
	member *membership.Member
	inf    *informers.SharedInformer[*corev1.ConfigMap]
	owned  *ownedSet
}

// Three replicas split the config maps of a namespace. One stops renewing
// its Lease: within the lease duration plus one sync, the two others own
// its objects, each object has exactly one owner, and no handler missed an
// object created or deleted meanwhile. It renews again, and the three
// share the objects again.
func TestMembershipTakeover(t *testing.T) {
	env, cs, ns, ctx := newServer(t, withShardGate, 5*time.Minute)
	require.NoError(t, parallel(600, 16, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{})
		return err
	}))

	const leaseDuration = 3 * time.Second
	var replicas []*replica
	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		stop()
		wg.Wait()
	})
	for i := range 3 {
		r := &replica{name: fmt.Sprintf("replica-%d", i), cut: &leaseCut{}, owned: newOwnedSet()}
		cfg := env.Config()
		cfg.WrapTransport = r.cut.wrap
		rcs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		r.member, err = membership.New(membership.Config{
			Client: rcs, Namespace: ns, Group: "takeover", Identity: r.name,
			LeaseDuration: leaseDuration, RenewInterval: leaseDuration / 3,
		})
		require.NoError(t, err)
		r.inf, err = informers.NewInformer(informers.FromClient[*corev1.ConfigMap](rcs.CoreV1().ConfigMaps(ns)),
			informers.Options[*corev1.ConfigMap]{Shard: &shard.Shard{}})
		require.NoError(t, err)
		_, err = r.inf.AddHandler(r.owned)
		require.NoError(t, err)
		r.member.Follow(r.inf)
		wg.Go(func() { assert.NoError(t, r.inf.Run(runCtx)) })
		wg.Go(func() { assert.NoError(t, r.member.Run(runCtx)) })
		replicas = append(replicas, r)
	}

	// check reports whether the live replicas' handlers own the server's
	// objects, each exactly once, and the others own nothing.
	check := func(live ...*replica) (bool, string) {
		server, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		owner := map[types.UID]string{}
		for _, r := range replicas {
			mine := r.owned.snapshot()
			if len(mine) == 0 {
				for _, l := range live {
					if l == r {
						return false, r.name + " owns nothing"
					}
				}
			}
			for uid := range mine {
				if o, dup := owner[uid]; dup {
					return false, fmt.Sprintf("%s owned by %s and %s", uid, o, r.name)
				}
				owner[uid] = r.name
			}
		}
		for _, cm := range server.Items {
			if _, ok := owner[cm.UID]; !ok {
				return false, fmt.Sprintf("%s/%s has no owner", ns, cm.Name)
			}
		}
		if len(owner) != len(server.Items) {
			return false, fmt.Sprintf("%d objects owned, %d on the server", len(owner), len(server.Items))
		}
		for _, r := range replicas {
			if a := r.member.Assignment(); len(a.Members) != len(live) {
				return false, fmt.Sprintf("%s sees members %v", r.name, a.Members)
			}
		}
		return true, ""
	}
	waitFor := func(d time.Duration, what string, live ...*replica) time.Duration {
		t.Helper()
		start := time.Now()
		ok, msg := pollUntil(d, func() (bool, string) { return check(live...) })
		require.True(t, ok, "%s: %s", what, msg)
		return time.Since(start)
	}
	waitFor(time.Minute, "three replicas share the objects", replicas...)

	// Replica 2 stops renewing; objects come and go meanwhile.
	replicas[2].cut.cut.Store(true)
	churnDone := make(chan error, 1)
	go func() { churnDone <- churn(ctx, cs, ns, leaseDuration+time.Second) }()
	took := waitFor(leaseDuration+20*time.Second, "the two others own everything", replicas[:2]...)
	require.NoError(t, <-churnDone)
	// The bound: the lease duration, plus a tenth to notice, plus a list
	// of a third of 600 objects; the renewal before the cut was up to a
	// renew interval earlier, which only shortens it.
	t.Logf("takeover complete %v after the renewals stopped (lease duration %v)", took.Round(time.Millisecond), leaseDuration)
	assert.Less(t, took, leaseDuration+leaseDuration/10+5*time.Second, "the takeover bound")
	waitFor(10*time.Second, "after the churn", replicas[:2]...)
	assert.NotZero(t, replicas[2].owned.left, "replica 2's objects left its shard")

	// It renews again: the three share the objects again.
	replicas[2].cut.cut.Store(false)
	waitFor(time.Minute, "rebalanced over three replicas", replicas...)
	for _, r := range replicas {
		a := r.member.Assignment()
		assert.Equal(t, []string{"replica-0", "replica-1", "replica-2"}, a.Members)
		assert.Equal(t, membership.Assign(a.Members, r.name), a.Ranges)
		// The server filters with its gate on; a server without it
		// ignores the selector and the replica filters.
		assert.Equal(t, shardFilterOn(env), r.inf.Shard().Filter, r.name)
	}
}

// churn creates and deletes config maps until d has passed.
func churn(ctx context.Context, cs kubernetes.Interface, ns string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		cms := cs.CoreV1().ConfigMaps(ns)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d", i)}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := cms.Delete(ctx, fmt.Sprintf("cm-%d", i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
