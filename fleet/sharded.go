package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/shard"
)

// Sharded is a Target that attaches to its fleet only this replica's
// share of the clusters a Provider offers: those whose name hashes
// (Hash) into the replica's ranges. With the package
// membership, replicas of one controller split the clusters between them,
// as they split objects; when a replica goes, the others attach its
// clusters. With Locks, a replica attaches a cluster only while it holds
// the cluster's lock, and releases it only once the cluster is detached,
// so that each cluster is engaged by at most one replica at any time,
// even while replicas apply a new assignment:
//
//	locks := &fleet.LeaseLocks{Client: hub, Namespace: "kube-system", Group: "fleet-controller-clusters", Identity: hostname}
//	go locks.Run(ctx)
//	sharded := fleet.NewSharded(fl, locks)
//	m, err := membership.New(membership.Config{Client: hub, Namespace: "kube-system", Group: "fleet-controller", Identity: hostname})
//	m.Follow(sharded)
//	go m.Run(ctx)
//	go provider.Run(ctx, sharded)
//
// It holds no cluster until its ranges are set. A cluster it owns is
// attached in the background, once its lock is taken; Attach and
// SetShardRanges do not wait for that, and Detach and SetShardRanges wait
// for the clusters they take away to be detached and their locks
// released. Without Locks, replicas apply a change of ranges
// independently: for a moment a cluster may be attached by its old and
// its new replica together, or by neither (see package membership).
type Sharded struct {
	fl    *Fleet
	locks Locks

	mu      sync.Mutex
	ranges  []shard.Range
	offered map[string]*offer // every cluster the provider attached, by name
}

// offer is a cluster a Provider attached, with the context of its Attach.
type offer struct {
	ctx     context.Context
	cluster Cluster
	engaged *engagement // while the replica owns the cluster
}

// engagement attaches a cluster owned by the replica whenever it holds
// the cluster's lock, until stop.
type engagement struct {
	stop context.CancelFunc
	done chan struct{} // closed once the cluster is detached and its lock released
}

// NewSharded returns a Sharded target over fl that owns no range yet.
// locks, if not nil, make hand-over exclusive (see LeaseLocks).
func NewSharded(fl *Fleet, locks Locks) *Sharded {
	if locks == nil {
		locks = unlocked{}
	}
	return &Sharded{fl: fl, locks: locks, offered: make(map[string]*offer)}
}

// unlocked are Locks that every replica holds at once.
type unlocked struct{}

func (unlocked) Hold(ctx context.Context, _ string, engage func(context.Context)) error {
	engage(ctx)
	return nil
}

// owns reports whether the ranges hold the hash of the cluster name.
func owns(ranges []shard.Range, name string) bool {
	h := Hash(name)
	return slices.ContainsFunc(ranges, func(r shard.Range) bool { return r.Contains(h) })
}

// Hash returns where the cluster called name falls in the hash space that
// replicas split: the 64-bit FNV-1a hash of the name, as the shard
// package hashes, finished with MurmurHash3's fmix64, so that names that
// differ in their last characters only (cluster-01, cluster-02) spread
// over the whole space instead of falling in one range.
func Hash(name string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(name))
	h := f.Sum64()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Attach records the cluster and, if this replica owns it, starts
// engaging it.
func (s *Sharded) Attach(ctx context.Context, name string, c Cluster) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.offered[name]; ok {
		return fmt.Errorf("%w: %q", ErrAttached, name)
	}
	o := &offer{ctx: ctx, cluster: c}
	s.offered[name] = o
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.offered[name] == o {
			delete(s.offered, name)
		}
	})
	if owns(s.ranges, name) {
		s.engage(name, o)
	}
	return nil
}

// Detach forgets the cluster and, if this replica engages it, detaches it
// and releases its lock, or gives up waiting for that when ctx ends.
func (s *Sharded) Detach(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.offered[name]
	delete(s.offered, name)
	if o == nil {
		return nil
	}
	return disengage(ctx, o)
}

// SetShardRanges makes the replica own ranges: it detaches the clusters
// it loses and releases their locks, then starts engaging those it gains.
// It implements membership.Shardable.
func (s *Sharded) SetShardRanges(ctx context.Context, ranges ...shard.Range) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ranges = slices.Clone(ranges)
	var lost []*offer
	for name, o := range s.offered {
		if o.engaged != nil && !owns(ranges, name) {
			o.engaged.stop()
			lost = append(lost, o)
		}
	}
	var errs []error
	for _, o := range lost {
		errs = append(errs, disengage(ctx, o))
	}
	for _, name := range slices.Sorted(maps.Keys(s.offered)) {
		if o := s.offered[name]; o.engaged == nil && owns(ranges, name) && o.ctx.Err() == nil {
			s.engage(name, o)
		}
	}
	return errors.Join(errs...)
}

// engage starts engaging the cluster o under name; s.mu is held.
func (s *Sharded) engage(name string, o *offer) {
	ctx, stop := context.WithCancel(o.ctx)
	e := &engagement{stop: stop, done: make(chan struct{})}
	o.engaged = e
	go func() {
		defer close(e.done)
		log := klog.FromContext(ctx).WithValues("cluster", name)
		for ctx.Err() == nil {
			var attachErr error
			err := s.locks.Hold(ctx, name, func(held context.Context) {
				var m *member
				if m, attachErr = s.fl.attach(context.WithoutCancel(held), name, o.cluster); attachErr != nil {
					return
				}
				<-held.Done()
				if err := s.fl.detachWait(context.WithoutCancel(held), m); err != nil {
					log.Error(err, "Detaching a cluster the replica gives up")
				}
			})
			if err = cmp.Or(err, attachErr); err != nil {
				if ctx.Err() == nil {
					log.Error(err, "Engaging a cluster the replica owns failed")
				}
				return
			}
		}
	}()
}

// disengage stops engaging o and waits until its cluster is detached and
// its lock released, or until ctx ends; s.mu is held.
func disengage(ctx context.Context, o *offer) error {
	e := o.engaged
	if e == nil {
		return nil
	}
	o.engaged = nil
	e.stop()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fleet: giving a cluster up: %w", ctx.Err())
	}
}
