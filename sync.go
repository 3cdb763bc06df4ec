package informers

import (
	"context"
	"errors"
	"sync"
)

// Syncer is what WaitForSync waits for: an informer (AnyInformer, or
// *SharedInformer[T]), whose cache has synced once it holds the server's
// state as of a complete list and its watch is open; or a registration
// (AnyRegistration, or *Registration[T]), whose handler has synced once it
// has been delivered that state.
type Syncer interface {
	HasSynced() bool
	WaitForSync(ctx context.Context) error
}

// WaitForSync waits until every syncer has synced, informers and handlers
// of any types together:
//
//	err := informers.WaitForSync(ctx, pods, podsReg, deployments, deploymentsReg)
//
// It returns nil once they have, or the errors of those that have not,
// joined, when ctx ends or as soon as each has either synced or failed in a
// way that needs a fix on the server (see NotSyncedError).
func WaitForSync(ctx context.Context, syncers ...Syncer) error {
	errs := make([]error, len(syncers))
	var wg sync.WaitGroup
	for n, s := range syncers {
		if isNil(s) {
			errs[n] = errorf("WaitForSync: syncer %d is nil", n)
			continue
		}
		if s.HasSynced() {
			continue
		}
		wg.Go(func() { errs[n] = s.WaitForSync(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
