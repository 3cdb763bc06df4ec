package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers"
)

// Locks lets one replica at a time engage a cluster: a Sharded target
// with Locks attaches a cluster only while it holds the cluster's lock,
// and releases the lock only once the cluster is detached.
type Locks interface {
	// Hold waits until this replica holds the lock called name, or until
	// ctx ends, then calls engage with a context that ends when ctx ends
	// or the lock is lost. When engage returns, Hold releases the lock
	// and returns. Its error says why the lock was not taken.
	Hold(ctx context.Context, name string, engage func(held context.Context)) error
}

// LockGroupLabel is the label of a LeaseLocks' Leases; its value is the
// group.
const LockGroupLabel = "fleet.kubetyped.io/locks"

// LeaseLocks are Locks kept as one coordination.k8s.io Lease per cluster
// in a namespace of a hub cluster, as leader election keeps its Lease: a
// replica takes a Lease that does not exist, that it holds, or that its
// holder has not renewed for LeaseDuration by this replica's clock, with
// an update that fails if another replica wrote the Lease meanwhile; it
// renews the Lease every third of LeaseDuration while it engages the
// cluster, and deletes it once it has detached the cluster.
//
// A holder that cannot renew for two thirds of LeaseDuration, timed from
// when its last successful renewal was sent, gives the cluster up, a third
// of LeaseDuration before any other replica can count the Lease expired:
// a cluster is engaged by two replicas only if detaching it takes longer
// than that third, or if the replicas' clocks run at rates further apart.
// A replica that stops cleanly deletes its Leases and the others engage
// its clusters at once; one that dies leaves them to expire: the others
// engage its clusters within LeaseDuration of its last renewal they saw.
// While Run runs, the replica watches the group's Leases and sees every
// renewal as it happens; without it, the replica first reads a Lease when
// it wants the cluster, and a dead holder's Lease counts as expired only
// LeaseDuration after that read: up to twice LeaseDuration after the
// holder's last renewal.
//
// Client, Namespace, Group and Identity are required; the fields must not
// change once Run or Hold is called.
type LeaseLocks struct {
	// Client creates, renews and deletes the Leases.
	Client kubernetes.Interface
	// Namespace holds the Leases.
	Namespace string
	// Group names the controller whose replicas share the clusters. A
	// cluster's Lease is named Group-h, where h is the cluster name's
	// Hash in hexadecimal: clusters whose names share a hash fall in the
	// same range of every assignment and share a Lease.
	Group string
	// Identity names this replica, uniquely in the group.
	Identity string
	// LeaseDuration is how long a Lease not renewed keeps its cluster
	// from the other replicas; 0 means 15 seconds.
	LeaseDuration time.Duration

	mu   sync.Mutex
	seen map[string]leaseSeen // the group's Leases as Run saw them change, by name
}

// leaseSeen is a Lease's resource version and when it was first seen.
type leaseSeen struct {
	resourceVersion string
	since           time.Time
}

// Run watches the group's Leases until ctx ends, so that a dead holder's
// Lease counts as expired LeaseDuration after its last renewal rather
// than after this replica first reads it. It fails if the Leases cannot
// be watched.
func (l *LeaseLocks) Run(ctx context.Context) error {
	if err := l.check(); err != nil {
		return err
	}
	leases, err := informers.NewInformer(
		informers.FromClient[*coordinationv1.Lease](l.Client.CoordinationV1().Leases(l.Namespace)),
		informers.Options[*coordinationv1.Lease]{LabelSelector: LockGroupLabel + "=" + l.Group})
	if err != nil {
		return fmt.Errorf("fleet: watching the Leases of group %s: %w", l.Group, err)
	}
	if _, err := leases.AddHandler(informers.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(lease *coordinationv1.Lease, _ bool) { l.observe(lease.Name, lease.ResourceVersion) },
		OnUpdate: func(_, lease *coordinationv1.Lease) { l.observe(lease.Name, lease.ResourceVersion) },
		OnDelete: func(d informers.Deleted[*coordinationv1.Lease]) { l.observe(d.Object.Name, "") },
	}); err != nil {
		return fmt.Errorf("fleet: watching the Leases of group %s: %w", l.Group, err)
	}
	if err := leases.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("fleet: watching the Leases of group %s: %w", l.Group, err)
	}
	return nil
}

// observe records that the Lease called name has resourceVersion, or,
// with "", that it was deleted.
func (l *LeaseLocks) observe(name, resourceVersion string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if resourceVersion == "" {
		delete(l.seen, name)
		return
	}
	if l.seen == nil {
		l.seen = make(map[string]leaseSeen)
	}
	if l.seen[name].resourceVersion != resourceVersion {
		l.seen[name] = leaseSeen{resourceVersion: resourceVersion, since: time.Now()}
	}
}

// seenSince returns when Run first saw the Lease called name at
// resourceVersion, or now if it did not.
func (l *LeaseLocks) seenSince(name, resourceVersion string, now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.seen[name]; ok && s.resourceVersion == resourceVersion && s.since.Before(now) {
		return s.since
	}
	return now
}

// check reports a missing required field.
func (l *LeaseLocks) check() error {
	if l.Client == nil || l.Namespace == "" || l.Group == "" || l.Identity == "" {
		return fmt.Errorf("fleet: LeaseLocks needs Client, Namespace, Group and Identity, got namespace %q, group %q and identity %q", l.Namespace, l.Group, l.Identity)
	}
	return nil
}

// Hold implements Locks.
func (l *LeaseLocks) Hold(ctx context.Context, name string, engage func(held context.Context)) error {
	if err := l.check(); err != nil {
		return err
	}
	leaseName := fmt.Sprintf("%s-%016x", l.Group, Hash(name))
	log := klog.FromContext(ctx).WithValues("cluster", name, "lease", leaseName)
	lease, sent, err := l.acquire(ctx, log, leaseName)
	if err != nil {
		return fmt.Errorf("fleet: taking the Lease %s of cluster %q: %w", leaseName, name, err)
	}
	held, lose := context.WithCancel(ctx)
	defer lose()
	kept := make(chan *coordinationv1.Lease, 1)
	go func() { kept <- l.keep(held, lose, log, lease, sent) }()
	engage(held)
	lose()
	l.release(context.WithoutCancel(ctx), log, <-kept)
	return nil
}

// duration returns LeaseDuration or its default.
func (l *LeaseLocks) duration() time.Duration { return cmp.Or(l.LeaseDuration, 15*time.Second) }

// acquire takes the Lease called leaseName, trying again every tenth of
// the lease duration until it does or ctx ends. It returns the Lease as
// stored and when the request that took it was sent.
func (l *LeaseLocks) acquire(ctx context.Context, log klog.Logger, leaseName string) (*coordinationv1.Lease, time.Time, error) {
	d := l.duration()
	tick := time.NewTicker(max(d/10, 10*time.Millisecond))
	defer tick.Stop()
	var seenVersion string // the holder's Lease as last seen, and since when
	var seenSince time.Time
	for {
		sent := time.Now()
		lease, err := l.take(ctx, leaseName, sent, func(cur *coordinationv1.Lease) bool {
			holder := ptr.Deref(cur.Spec.HolderIdentity, "")
			if holder == "" || holder == l.Identity {
				return true
			}
			if cur.ResourceVersion != seenVersion {
				seenVersion, seenSince = cur.ResourceVersion, l.seenSince(leaseName, cur.ResourceVersion, sent)
			}
			return sent.Sub(seenSince) >= d
		})
		switch {
		case err == nil && lease != nil:
			log.V(2).Info("Took the cluster's Lease")
			return lease, sent, nil
		case err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err):
			log.Error(err, "Taking the cluster's Lease failed; trying again")
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// take reads the Lease and writes this replica into it if it does not
// exist or free says it may be taken; it returns nil without error if the
// Lease is another's.
func (l *LeaseLocks) take(ctx context.Context, leaseName string, now time.Time, free func(*coordinationv1.Lease) bool) (*coordinationv1.Lease, error) {
	leases := l.Client.CoordinationV1().Leases(l.Namespace)
	ctx, cancel := context.WithTimeout(ctx, l.duration()/3)
	defer cancel()
	cur, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return leases.Create(ctx, l.stamp(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName, Namespace: l.Namespace}}, now, true), metav1.CreateOptions{})
	case err != nil:
		return nil, err
	case !free(cur):
		return nil, nil
	}
	return leases.Update(ctx, l.stamp(cur.DeepCopy(), now, true), metav1.UpdateOptions{})
}

// stamp writes this replica into lease as holder, renewed at now.
func (l *LeaseLocks) stamp(lease *coordinationv1.Lease, now time.Time, acquired bool) *coordinationv1.Lease {
	t := metav1.NewMicroTime(now)
	lease.Labels = map[string]string{LockGroupLabel: l.Group}
	lease.Spec.HolderIdentity = ptr.To(l.Identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32((l.duration() + time.Second - 1) / time.Second))
	lease.Spec.RenewTime = &t
	if acquired {
		lease.Spec.AcquireTime = &t
	}
	return lease
}

// keep renews lease every third of the lease duration until held ends,
// and calls lose once two thirds of it have passed since the last
// successful renewal was sent. It returns the Lease as last stored, or nil
// if another replica wrote it.
func (l *LeaseLocks) keep(held context.Context, lose context.CancelFunc, log klog.Logger, lease *coordinationv1.Lease, renewed time.Time) *coordinationv1.Lease {
	leases := l.Client.CoordinationV1().Leases(l.Namespace)
	d := l.duration()
	tick := time.NewTicker(d / 3)
	defer tick.Stop()
	for {
		deadline := renewed.Add(2 * d / 3)
		if !time.Now().Before(deadline) {
			log.Info("Giving the cluster up: its Lease could not be renewed", "since", renewed)
			lose()
			return lease
		}
		select {
		case <-held.Done():
			return lease
		case <-time.After(time.Until(deadline)):
			log.Info("Giving the cluster up: its Lease could not be renewed", "since", renewed)
			lose()
			return lease
		case <-tick.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithDeadline(held, deadline)
		next, err := leases.Update(ctx, l.stamp(lease.DeepCopy(), sent, false), metav1.UpdateOptions{})
		cancel()
		switch {
		case err == nil:
			lease, renewed = next, sent
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			log.Info("Giving the cluster up: its Lease was taken", "err", err)
			lose()
			return nil
		case held.Err() == nil && !errors.Is(err, context.DeadlineExceeded):
			log.Error(err, "Renewing the cluster's Lease failed")
		}
	}
}

// release deletes lease, unless another replica wrote it since.
func (l *LeaseLocks) release(ctx context.Context, log klog.Logger, lease *coordinationv1.Lease) {
	if lease == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, l.duration()/3)
	defer cancel()
	err := l.Client.CoordinationV1().Leases(l.Namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		log.Error(err, "Releasing the cluster's Lease failed; the others engage it once it expires")
	}
}
