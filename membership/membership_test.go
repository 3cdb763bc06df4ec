package membership_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/membership"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestAssign(t *testing.T) {
	thirds := informers.SplitHashSpace(3)
	tests := []struct {
		members  []string
		identity string
		want     []informers.HashRange
	}{
		{[]string{"b", "a", "c"}, "a", thirds[0:1]},
		{[]string{"c", "b", "a"}, "b", thirds[1:2]},
		{[]string{"a", "b", "c", "b"}, "c", thirds[2:3]},
		{[]string{"a"}, "a", []informers.HashRange{{}}},
		{[]string{"a", "b"}, "z", nil},
		{nil, "a", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, membership.Assign(tt.members, tt.identity), "%s among %v", tt.identity, tt.members)
	}
}

func TestNewRejects(t *testing.T) {
	_, err := membership.New(membership.Config{})
	assert.ErrorContains(t, err, "Client")
	_, err = membership.New(membership.Config{Client: &kubernetes.Clientset{}, Namespace: "ns", Group: "g"})
	assert.ErrorContains(t, err, "Identity")
	_, err = membership.New(membership.Config{Client: &kubernetes.Clientset{}, Namespace: "ns", Group: "g", Identity: "a",
		LeaseDuration: time.Second, RenewInterval: time.Second})
	assert.ErrorContains(t, err, "shorter")
}

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

// owned is a handler that keeps what its replica was told it owns.
type owned struct {
	mu   sync.Mutex
	objs map[types.UID]string
	left int
}

func (o *owned) HandleAdd(cm *corev1.ConfigMap, _ bool) { o.put(cm) }
func (o *owned) HandleUpdate(_, cm *corev1.ConfigMap)   { o.put(cm) }
func (o *owned) HandleDelete(d informers.Deleted[*corev1.ConfigMap]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.objs, d.Object.UID)
	if d.LeftShard {
		o.left++
	}
}

func (o *owned) put(cm *corev1.ConfigMap) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.objs[cm.UID] = cm.ResourceVersion
}

func (o *owned) snapshot() map[types.UID]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.objs)
}

type replica struct {
	name   string
	cut    *leaseCut
	member *membership.Member
	inf    *informers.SharedInformer[*corev1.ConfigMap]
	owned  *owned
}

// Three replicas split the config maps of a namespace. One stops renewing
// its Lease: within the lease duration plus one sync, the two others own
// its objects, each object has exactly one owner, and no handler missed an
// object created or deleted meanwhile. It renews again, and the three
// share the objects again.
func TestTakeover(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, before,
			goleak.IgnoreAnyFunction("github.com/kubetyped/informers/internal/testenv.(*process).run"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
	})
	env := testenv.New(t, testenv.Options{FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
	cs, err := kubernetes.NewForConfig(env.Config())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := "takeover"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, createConfigMaps(ctx, cs, ns, "cm", 600))

	const leaseDuration = 3 * time.Second
	var replicas []*replica
	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		stop()
		wg.Wait()
	})
	for i := range 3 {
		r := &replica{name: fmt.Sprintf("replica-%d", i), cut: &leaseCut{}, owned: &owned{objs: map[types.UID]string{}}}
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
			informers.Options[*corev1.ConfigMap]{Shard: &informers.Shard{}})
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

func createConfigMaps(ctx context.Context, cs kubernetes.Interface, ns, prefix string, n int) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)}}, metav1.CreateOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pollUntil polls check until it holds or d has passed, and returns its
// last result.
func pollUntil(d time.Duration, check func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(d)
	for {
		ok, msg := check()
		if ok || time.Now().After(deadline) {
			return ok, msg
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}
