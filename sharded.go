package informers

import (
	"context"

	"github.com/kubetyped/informers/shard"
)

// Shard reports the informer's shard and where it is filtered; the zero
// shard.Status (shard.FilterNone) if the informer is not sharded.
func (i *SharedInformer[T]) Shard() shard.Status { return i.scope.report().shard }

// SetShardRanges re-scopes a sharded informer to ranges of the same field.
// The informer lists the new shard from the version it is at, and watches
// it: handlers see objects entering the shard as adds, and objects
// leaving it as deletes with Deleted.LeftShard set, once the new shard's
// list is complete, so that what is gained is cached before what is lost
// is dropped. The cache stays synced throughout.
//
// It returns once the informer holds the new shard, or at once if the
// informer has not started (it will start with the new shard). It fails
// if the informer was made without Options.Shard, has stopped, or ctx
// ends first; the informer keeps going to the new shard all the same.
func (i *SharedInformer[T]) SetShardRanges(ctx context.Context, ranges ...shard.Range) error {
	if i.failed != nil {
		return i.failed
	}
	st := shardsOf(i.scope)
	if st == nil {
		return errorf("%s: SetShardRanges on an informer made without Options.Shard", i.cfg.desc)
	}
	cur, _ := st.current()
	next := shard.Shard{Field: cur.Field, Ranges: ranges}
	if err := next.Validate(); err != nil {
		return errorf("%s: SetShardRanges: %w", i.cfg.desc, err)
	}
	next = next.Canonical()
	i.mu.Lock()
	state := i.state
	i.mu.Unlock()
	if state == stopped {
		return errorf("%s: SetShardRanges: %w", i.cfg.desc, ErrStopped)
	}
	synced := st.set(next)
	if state == notStarted {
		return nil
	}
	select {
	case <-synced:
		return nil
	case <-i.stopped:
		return errorf("%s: SetShardRanges: %w", i.cfg.desc, ErrStopped)
	case <-ctx.Done():
		return errorf("%s: shard %s not synced: %w", i.cfg.desc, next, ctx.Err())
	}
}
