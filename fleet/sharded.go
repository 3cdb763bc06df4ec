package fleet

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"

	"github.com/kubetyped/informers/shard"
)

// Sharded is a Target that attaches to its fleet only this replica's
// share of the clusters a Provider offers: those whose name hashes
// (Hash) into the replica's ranges. With the package
// membership, replicas of one controller split the clusters between them,
// as they split objects, each cluster engaged by one replica; when a
// replica goes, the others attach its clusters within the lease duration:
//
//	sharded := fleet.NewSharded(fl)
//	m, err := membership.New(membership.Config{Client: hub, Namespace: "kube-system", Group: "fleet-controller", Identity: hostname})
//	m.Follow(sharded)
//	go m.Run(ctx)
//	go provider.Run(ctx, sharded)
//
// It holds no cluster until its ranges are set. Replicas apply a change of
// ranges independently: for a moment a cluster may be attached by its old
// and its new replica together, or by neither (see package membership).
type Sharded struct {
	fl *Fleet

	mu      sync.Mutex
	ranges  []shard.Range
	offered map[string]offer // every cluster the provider attached, by name
}

// offer is a cluster a Provider attached, with the context of its Attach.
type offer struct {
	ctx     context.Context
	cluster Cluster
}

// NewSharded returns a Sharded target over fl that owns no range yet.
func NewSharded(fl *Fleet) *Sharded {
	return &Sharded{fl: fl, offered: make(map[string]offer)}
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

// Attach records the cluster and attaches it to the fleet if this
// replica owns it.
func (s *Sharded) Attach(ctx context.Context, name string, c Cluster) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.offered[name]; ok {
		return fmt.Errorf("%w: %q", ErrAttached, name)
	}
	s.offered[name] = offer{ctx, c}
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if o, ok := s.offered[name]; ok && o.ctx == ctx {
			delete(s.offered, name)
		}
	})
	if owns(s.ranges, name) {
		return s.fl.Attach(ctx, name, c)
	}
	return nil
}

// Detach forgets the cluster and detaches it from the fleet if this
// replica has it.
func (s *Sharded) Detach(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.offered, name)
	if s.fl.Factory(name) == nil {
		return nil
	}
	return s.fl.Detach(ctx, name)
}

// SetShardRanges makes the replica own ranges: it attaches the clusters
// it gains, then detaches those it loses. It implements
// membership.Shardable.
func (s *Sharded) SetShardRanges(ctx context.Context, ranges ...shard.Range) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ranges = slices.Clone(ranges)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.offered)) {
		o := s.offered[name]
		if owns(ranges, name) && s.fl.Factory(name) == nil && o.ctx.Err() == nil {
			errs = append(errs, s.fl.Attach(o.ctx, name, o.cluster))
		}
	}
	for _, name := range s.fl.Clusters() {
		if _, ok := s.offered[name]; ok && !owns(ranges, name) {
			errs = append(errs, s.fl.Detach(ctx, name))
		}
	}
	return errors.Join(errs...)
}
