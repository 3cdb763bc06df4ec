// Package membership shares a controller's objects among its replicas:
// each replica holds a coordination.k8s.io Lease in a namespace and renews
// it; every replica watches the group's Leases and computes, from the live
// ones, the same assignment of hash ranges; and each replica re-scopes its
// sharded informers (informers.Options.Shard) to its ranges whenever the
// assignment changes.
//
//	m, err := membership.New(membership.Config{Client: cs, Namespace: "kube-system", Group: "podcount", Identity: hostname})
//	pods := informers.InformerWith(factory, informers.Options[*corev1.Pod]{Shard: &shard.Shard{}}) // no ranges until assigned
//	m.Follow(pods)
//	factory.Start(ctx)
//	go m.Run(ctx)
//
// # The rule
//
// The live members, sorted by identity, split the 64-bit hash space into
// equal consecutive ranges: member i of n owns [i·2⁶⁴/n, (i+1)·2⁶⁴/n).
// Every replica that sees the same live Leases computes the same ranges,
// and the ranges of n members always cover the space exactly once.
//
// # Liveness and the takeover bound
//
// A replica counts another as live while that replica's Lease has changed
// within the lease duration, by the replica's own clock (as leader
// election does; clocks need not agree). A replica counts itself live
// while its last successful renewal, timed from when the request was
// sent, is younger than the lease duration: a replica that cannot renew
// drops its ranges before any other replica can see its Lease expire, so
// two replicas never own one range because of a lost renewal. The ranges
// of a replica that stops renewing are owned again by the others within
// the lease duration plus the time to notice (a tenth of it) plus one
// list of the ranges gained. A replica that stops cleanly deletes its
// Lease, and the others take over at once.
//
// When the assignment changes, each replica first lists the ranges it
// gains and then drops the ones it loses (see
// informers.SharedInformer.SetShardRanges): handlers see adds for objects
// entering, and deletes with LeftShard set for objects leaving. Replicas
// apply a change independently, so for a moment a range may be held by
// its old and its new owner together, or, when the old owner is quicker,
// by neither, for no longer than the new owner's list.
package membership

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/shard"
)

// GroupLabel is the label of a group's Leases; its value is the group.
const GroupLabel = "membership.kubetyped.io/group"

// Config describes a replica and its group. Client, Namespace, Group and
// Identity are required.
type Config struct {
	// Client creates, renews, watches and deletes the Leases.
	Client kubernetes.Interface
	// Namespace holds the group's Leases.
	Namespace string
	// Group names the controller whose replicas share the objects.
	Group string
	// Identity names this replica, uniquely in the group. Its Lease is
	// named Group-Identity, which must be a valid object name.
	Identity string
	// LeaseDuration is how long a Lease not renewed counts as live; 0
	// means 15 seconds.
	LeaseDuration time.Duration
	// RenewInterval is how often the replica renews its Lease; 0 means a
	// third of LeaseDuration.
	RenewInterval time.Duration
	// OnChange, if set, is called with each new assignment once the
	// followed informers hold it, their new shards synced (or once they
	// failed to; the error says why): the signal to read a re-sharded
	// informer's cache, which needs no polling of Shard().Synced.
	OnChange func(Assignment, error)
}

// Assignment is what a replica owns.
type Assignment struct {
	// Members are the identities of the live members, sorted.
	Members []string
	// Ranges are this replica's hash ranges: none while it is not a live
	// member itself.
	Ranges []shard.Range
}

// Equal reports whether a and b are the same assignment.
func (a Assignment) Equal(b Assignment) bool {
	return slices.Equal(a.Members, b.Members) && slices.Equal(a.Ranges, b.Ranges)
}

// Assign returns the ranges of member identity among members by the
// package's rule: the members sorted, the hash space split evenly in that
// order. It returns nil if identity is not among members.
func Assign(members []string, identity string) []shard.Range {
	sorted := slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(members)))))
	i := slices.Index(sorted, identity)
	if i < 0 {
		return nil
	}
	return shard.Split(len(sorted))[i : i+1]
}

// Shardable is what a Member re-scopes: a *informers.SharedInformer[T]
// made with Options.Shard, or a *fleet.Sharded. SetShardRanges returns
// once a running informer holds the ranges given; one not started yet
// takes them as it starts, and, if it is an informers.Syncer, the Member
// waits for it to sync (informers.WaitForSync).
type Shardable interface {
	SetShardRanges(ctx context.Context, ranges ...shard.Range) error
}

// Member is one replica of a group. The zero value is not usable; call New.
type Member struct {
	cfg       Config
	leaseName string

	mu        sync.Mutex
	followed  []Shardable
	lastRenew time.Time            // when the last successful renewal was sent
	seen      map[string]leaseSeen // other members' Leases, by Lease name
	current   Assignment           // as last computed
	applied   *Assignment          // as last applied to the followed informers; nil if none
	blind     func() bool          // whether the Lease watch is failing
	wake      chan struct{}        // cap 1: something changed; recompute
	apply     chan struct{}        // cap 1: current differs from applied
}

// leaseSeen is what a replica knows of another's Lease.
type leaseSeen struct {
	holder          string
	resourceVersion string
	changed         time.Time // when this replica saw it change
}

// New checks cfg and returns a Member; Run makes it join.
func New(cfg Config) (*Member, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("membership: Config.Client is required")
	case cfg.Namespace == "" || cfg.Group == "" || cfg.Identity == "":
		return nil, fmt.Errorf("membership: Config needs Namespace, Group and Identity, got %q, %q and %q", cfg.Namespace, cfg.Group, cfg.Identity)
	}
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, 15*time.Second)
	cfg.RenewInterval = cmp.Or(cfg.RenewInterval, cfg.LeaseDuration/3)
	if cfg.RenewInterval >= cfg.LeaseDuration {
		return nil, fmt.Errorf("membership: RenewInterval %v must be shorter than LeaseDuration %v", cfg.RenewInterval, cfg.LeaseDuration)
	}
	return &Member{
		cfg:       cfg,
		leaseName: cfg.Group + "-" + cfg.Identity,
		seen:      map[string]leaseSeen{},
		wake:      make(chan struct{}, 1),
		apply:     make(chan struct{}, 1),
	}, nil
}

// Follow adds informers to re-scope to the replica's ranges. Informers
// followed after the first assignment get it at once.
func (m *Member) Follow(infs ...Shardable) {
	m.mu.Lock()
	m.followed = append(m.followed, infs...)
	m.applied = nil // apply the current assignment to all again
	m.mu.Unlock()
	signal(m.apply)
}

// Assignment returns the replica's assignment as last computed.
func (m *Member) Assignment() Assignment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneAssignment(m.current)
}

// Run joins the group and keeps the replica's Lease renewed and its
// informers scoped until ctx ends; then it deletes the Lease, so that the
// others take over at once, and returns. It fails if the group's Leases
// cannot be watched.
func (m *Member) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("group", m.cfg.Group, "identity", m.cfg.Identity)
	ctx = klog.NewContext(ctx, log)
	leases, err := informers.NewInformer(
		informers.FromClient[*coordinationv1.Lease](m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)),
		informers.Options[*coordinationv1.Lease]{LabelSelector: GroupLabel + "=" + m.cfg.Group})
	if err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	if _, err := leases.AddHandler(informers.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(l *coordinationv1.Lease, _ bool) { m.observe(l, false) },
		OnUpdate: func(_, l *coordinationv1.Lease) { m.observe(l, false) },
		OnDelete: func(d informers.Deleted[*coordinationv1.Lease]) { m.observe(d.Object, true) },
	}); err != nil {
		return fmt.Errorf("membership: %w", err)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() { _ = leases.Run(runCtx) })
	m.mu.Lock()
	m.blind = func() bool { return leases.LastError() != nil }
	m.mu.Unlock()
	if err := informers.WaitForSync(ctx, leases); err != nil {
		return fmt.Errorf("membership: watching the Leases of group %s: %w", m.cfg.Group, err)
	}
	wg.Go(func() { m.renewLoop(runCtx) })
	wg.Go(func() { m.applyLoop(runCtx) })
	m.computeLoop(runCtx)
	stop()
	wg.Wait()
	m.leave(ctx, log)
	return nil
}

// observe records a change of a Lease of the group.
func (m *Member) observe(l *coordinationv1.Lease, deleted bool) {
	if l.Name == m.leaseName {
		return // this replica's liveness is its own renewals
	}
	m.mu.Lock()
	if deleted || l.DeletionTimestamp != nil {
		delete(m.seen, l.Name)
	} else if prev, ok := m.seen[l.Name]; !ok || prev.resourceVersion != l.ResourceVersion {
		m.seen[l.Name] = leaseSeen{holder: ptr.Deref(l.Spec.HolderIdentity, ""), resourceVersion: l.ResourceVersion, changed: time.Now()}
	}
	m.mu.Unlock()
	signal(m.wake)
}

// computeLoop recomputes the assignment on every change and every tenth
// of the lease duration, when Leases may have expired.
func (m *Member) computeLoop(ctx context.Context) {
	tick := time.NewTicker(max(m.cfg.LeaseDuration/10, 10*time.Millisecond))
	defer tick.Stop()
	for {
		m.compute(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-m.wake:
		}
	}
}

// compute sets the current assignment from the live members.
func (m *Member) compute(ctx context.Context) {
	now := time.Now()
	m.mu.Lock()
	var members []string
	if !m.lastRenew.IsZero() && now.Sub(m.lastRenew) < m.cfg.LeaseDuration {
		members = append(members, m.cfg.Identity)
	}
	// While the watch of Leases fails, their renewals cannot be seen:
	// the others keep their ranges rather than all being taken for gone.
	blind := m.blind != nil && m.blind()
	for _, s := range m.seen {
		if s.holder != "" && s.holder != m.cfg.Identity && (blind || now.Sub(s.changed) < m.cfg.LeaseDuration) {
			members = append(members, s.holder)
		}
	}
	slices.Sort(members)
	members = slices.Compact(members)
	next := Assignment{Members: members, Ranges: Assign(members, m.cfg.Identity)}
	changed := !next.Equal(m.current)
	if changed {
		m.current = next
	}
	m.mu.Unlock()
	if changed {
		klog.FromContext(ctx).Info("Membership changed", "members", next.Members, "ranges", fmt.Sprint(next.Ranges))
		signal(m.apply)
	}
}

// applyLoop re-scopes the followed informers to the current assignment,
// one assignment at a time; a change during one is applied after it.
func (m *Member) applyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.apply:
		}
		m.mu.Lock()
		next, followed := cloneAssignment(m.current), slices.Clone(m.followed)
		done := m.applied != nil && next.Equal(*m.applied)
		m.mu.Unlock()
		if done {
			continue
		}
		errs := make([]error, len(followed))
		var wg sync.WaitGroup
		for i, inf := range followed {
			wg.Go(func() { errs[i] = hold(ctx, inf, next.Ranges) })
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		err := errors.Join(errs...)
		m.mu.Lock()
		m.applied = &next
		m.mu.Unlock()
		if m.cfg.OnChange != nil {
			m.cfg.OnChange(next, err)
		}
	}
}

// hold re-scopes inf to ranges and returns once it holds them: also when
// inf had not started, for which SetShardRanges returns at once and the
// wait for the informer's sync, which is the shard's, follows.
func hold(ctx context.Context, inf Shardable, ranges []shard.Range) error {
	if err := inf.SetShardRanges(ctx, ranges...); err != nil {
		return err
	}
	if s, ok := inf.(informers.Syncer); ok {
		return informers.WaitForSync(ctx, s)
	}
	return nil
}

// renewLoop creates or renews the replica's Lease every RenewInterval.
func (m *Member) renewLoop(ctx context.Context) {
	tick := time.NewTicker(m.cfg.RenewInterval)
	defer tick.Stop()
	var lease *coordinationv1.Lease
	for {
		sent := time.Now()
		var err error
		lease, err = m.renew(ctx, lease)
		switch {
		case err == nil:
			m.mu.Lock()
			m.lastRenew = sent
			m.mu.Unlock()
			signal(m.wake)
		case ctx.Err() == nil:
			klog.FromContext(ctx).Error(err, "Renewing the membership Lease failed", "lease", m.leaseName)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renew creates the Lease, or updates lease, the last known state of it,
// with a new renew time. It returns the Lease as stored, or, on failure,
// nil, so that the next attempt reads it again.
func (m *Member) renew(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RenewInterval)
	defer cancel()
	now := metav1.NowMicro()
	if lease == nil {
		var err error
		lease, err = leases.Get(ctx, m.leaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.leaseName, Namespace: m.cfg.Namespace}}
		} else if err != nil {
			return nil, err
		}
		lease.Spec.AcquireTime = &now
	}
	lease = lease.DeepCopy()
	lease.Labels = map[string]string{GroupLabel: m.cfg.Group}
	lease.Spec.HolderIdentity = &m.cfg.Identity
	lease.Spec.LeaseDurationSeconds = ptr.To(int32((m.cfg.LeaseDuration + time.Second - 1) / time.Second))
	lease.Spec.RenewTime = &now
	var err error
	if lease.ResourceVersion == "" {
		lease, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else {
		lease, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// leave deletes the replica's Lease, so that the others take over at once.
func (m *Member) leave(ctx context.Context, log klog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.RenewInterval)
	defer cancel()
	err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, m.leaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Error(err, "Deleting the membership Lease failed; the others take over once it expires", "lease", m.leaseName)
	}
}

func cloneAssignment(a Assignment) Assignment {
	return Assignment{Members: slices.Clone(a.Members), Ranges: slices.Clone(a.Ranges)}
}

// signal wakes the receiver of ch, a channel of capacity 1, if it is not
// woken already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
