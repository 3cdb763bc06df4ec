package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/syncwait"
)

// SyncError names clusters, each with its cause. What it names depends on
// who returns it:
//
//   - informers.WaitForSync (of the fleet, a fleet informer or a
//     registration)
//     names the clusters whose caches, or whose handler's initial state,
//     did not sync: the cause is a *informers.NotSyncedError with the last
//     list or watch error (403 Forbidden, a connection refused, a missing
//     resource) or the context's error, or why the cluster could not
//     create the informer or add the handler. A cluster whose caches
//     synced is not named, even if its server went away since.
//   - informers.ReadyCheck names the clusters not ready at the time of
//     the check: those whose factory it fails (not synced, a handler
//     removed for its queue limit, too stale), and those whose caches
//     synced but whose last request failed, such as a cluster whose
//     server went away.
type SyncError struct {
	// Clusters maps each cluster named to why.
	Clusters map[string]error
}

func (e *SyncError) Error() string {
	var b strings.Builder
	b.WriteString("fleet: ")
	for n, name := range slices.Sorted(maps.Keys(e.Clusters)) {
		if n > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "cluster %q: %v", name, e.Clusters[name])
	}
	return b.String()
}

// Unwrap returns the causes, for errors.Is and errors.As.
func (e *SyncError) Unwrap() []error {
	errs := make([]error, 0, len(e.Clusters))
	for _, name := range slices.Sorted(maps.Keys(e.Clusters)) {
		errs = append(errs, e.Clusters[name])
	}
	return errs
}

// hook is what the root package's WaitForSync and ReadyCheck call on a
// fleet, a fleet informer and a registration: unexported methods, which
// show in no API.
type hook = syncwait.Hook

// Synced is closed once every informer of the fleet has synced on every
// cluster attached at the time of the call; it stays open if one of them
// stops first. It makes the fleet an informers.Syncer:
// informers.WaitForSync(ctx, fl) and informers.ReadyCheck(fl) are the
// fleet's wait and readiness check. Calls while the fleet's clusters and
// informers stay the same share one channel, and one goroutine waits for
// it.
func (fl *Fleet) Synced() <-chan struct{} {
	var infs []informers.AnyInformer
	for _, m := range fl.members() {
		infs = append(infs, m.all()...)
	}
	return fl.synced.Get(infs, allSynced)
}

// allSynced returns a channel closed once every one of infs has synced,
// and left open if one stops first.
func allSynced(infs []informers.AnyInformer) <-chan struct{} {
	return syncwait.All(infs, informers.AnyInformer.Synced, informers.AnyInformer.Stopped)
}

// allDelivered returns a channel closed once every one of regs has been
// delivered its initial state, and left open if one is removed first.
func allDelivered(regs []informers.AnyRegistration) <-chan struct{} {
	return syncwait.All(regs, informers.AnyRegistration.Synced, informers.AnyRegistration.Done)
}

// waitForSync waits until every informer of the fleet has synced on every
// attached cluster, and returns nil once they have. It stops waiting for
// a cluster at its first failed list or watch, or when ctx ends, so that a
// cluster that is down or refuses the informer (403 Forbidden, a missing
// CRD) holds up no other: its error, a *SyncError, names each cluster not
// synced, with its cause. Clusters that failed keep retrying; ReadyCheck
// tells when they recover.
//
// It waits for a sync, as informers.WaitForSync does, and says nothing of
// a cluster's health since: it returns nil for a cluster whose caches
// synced and whose server then went away, which keeps serving its last
// state. ReadyCheck tells the health of each cluster now.
func (fl *Fleet) waitForSync(ctx context.Context) error {
	return waitClusters(ctx, fl.members(), func(ctx context.Context, m *member) error {
		return waitMember(ctx, m, m.all(), func(ctx context.Context) error { return informers.WaitForSync(ctx, m.factory) })
	})
}

// waitClusters runs wait for every member at once and collects their
// errors into a *SyncError, or returns nil.
func waitClusters(ctx context.Context, members []*member, wait func(context.Context, *member) error) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for n, m := range members {
		wg.Go(func() { errs[n] = wait(ctx, m) })
	}
	wg.Wait()
	return syncError(members, errs)
}

// syncError returns a *SyncError of the members whose error is not nil,
// or nil.
func syncError(members []*member, errs []error) error {
	failed := make(map[string]error)
	for n, err := range errs {
		if err != nil {
			failed[members[n].name] = err
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &SyncError{Clusters: failed}
}

// waitMember runs wait, which waits for infs of m to sync, until it
// returns, ctx ends or one of infs not synced has a failed request.
func waitMember(ctx context.Context, m *member, infs []informers.AnyInformer, wait func(context.Context) error) error {
	for {
		changed := m.health.watch()
		if err := m.health.failing(infs); err != nil {
			return err
		}
		waitCtx, cancel := context.WithCancel(ctx)
		var failed atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			select {
			case <-changed:
				failed.Store(true)
				cancel()
			case <-waitCtx.Done():
			}
		}()
		err := wait(waitCtx)
		cancel()
		<-done
		if err == nil || ctx.Err() != nil {
			return err
		}
		if failed.Load() {
			continue // a request failed: look at it
		}
		return err
	}
}

// notReady is the fleet's readiness check: nil once every cluster is
// ready, and otherwise a *SyncError that names each cluster that is not,
// with why: what informers.ReadyCheck says of the cluster's factory, or
// the last failed request of an informer that has synced before but now
// fails, such as one whose API server went away. A cluster recovers on
// its own; the check reports the state at the time of the request.
func (fl *Fleet) notReady() error {
	members := fl.members()
	errs := make([]error, len(members))
	for n, m := range members {
		errs[n] = notReadyOn(m.factory, m.all()...)
	}
	return syncError(members, errs)
}

// notReadyOn returns why s, of a cluster whose informers are infs, is not
// ready: what informers.ReadyCheck says, or the last failed request of one
// of infs; nil if it is ready.
func notReadyOn(s informers.Syncer, infs ...informers.AnyInformer) error {
	if err := informers.ReadyCheck(s)(nil); err != nil {
		return err
	}
	var errs []error
	for _, inf := range infs {
		if err := inf.LastError(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
