package informers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/kubetyped/informers/internal/syncwait"
)

// waiter is a Syncer of this package: it says why it has not synced and
// why it is not ready.
type waiter interface {
	Syncer
	waitForSync(ctx context.Context) error
	notReady() error
}

// WaitForSync waits until every syncer has synced, a factory, informers
// and handlers of any types together:
//
//	err := informers.WaitForSync(ctx, factory)
//	err := informers.WaitForSync(ctx, pods, podsReg, deployments, deploymentsReg)
//
// It returns nil once they have, or the errors of those that have not,
// and of informers whose Go type does not fit their resource
// (UndecodableTypeError), joined, when ctx ends or as soon as each has
// either synced or failed in a way that needs a fix on the server (see
// NotSyncedError). Each cause is
// said once: a registration waits for its informer first, and when that
// informer fails, the registration's error is the informer's; it is left
// out when the informer, or another of its registrations, already says it.
//
// What it waits for, per syncer:
//   - a *Factory: every informer it holds at the call, the caches only
//     (pass the registrations to wait for their handlers too); it returns
//     ErrNotStarted before Start, and the error of every request Informer
//     could not serve;
//   - an informer: its cache; without waiting further, a *NotSyncedError
//     if the last list or watch failed in a way that retrying alone will
//     not fix (403 Forbidden, 401, 404 for a resource the server does not
//     serve...); with Options.WaitForResource, a 404 is waited out. The
//     informer keeps retrying in the background either way. A sharded
//     informer has synced once it holds the shard it was last given, by
//     Options.Shard or SetShardRanges;
//   - a registration: its informer, then the delivery of the initial
//     state; once the handler is removed or has overflowed it returns at
//     once, ErrStopped or a *HandlerOverflowError.
func WaitForSync(ctx context.Context, syncers ...Syncer) error {
	errs := make([]error, len(syncers))
	var wg sync.WaitGroup
	for n, s := range syncers {
		if isNil(s) {
			errs[n] = errorf("WaitForSync: syncer %d is nil", n)
			continue
		}
		if h, ok := s.(interface{ HasSynced() bool }); ok && h.HasSynced() && undecodableTypeOf(s) == nil {
			continue
		}
		wg.Go(func() { errs[n] = waitOne(ctx, s) })
	}
	wg.Wait()
	return errors.Join(withoutRepeats(syncers, errs)...)
}

// waitOne waits for s to sync.
func waitOne(ctx context.Context, s Syncer) error {
	switch s := s.(type) {
	case waiter:
		return s.waitForSync(ctx)
	case syncwait.Waiter:
		return syncwait.Wait(ctx, s)
	}
	select {
	case <-s.Synced():
		return nil
	case <-ctx.Done():
		return errorf("%v has not synced: %w", s, ctx.Err())
	}
}

// withoutRepeats drops errs[n] when an earlier error of the same informer,
// that of the informer itself or of one of its registrations, says the
// same: the registrations of a failed informer fail with its error. That
// the informer has not synced is said once, whichever of its errors each
// wait saw last (a list's 403 or the watch-list's before it); other
// errors count as the same when their messages are. Errors of different
// informers are all kept, even when they read alike.
func withoutRepeats(syncers []Syncer, errs []error) []error {
	said := make(map[any][]string) // by informer: a *SharedInformer[T]
	for n, err := range errs {
		if err == nil || isNil(syncers[n]) {
			continue
		}
		var inf any
		switch s := syncers[n].(type) {
		case AnyInformer:
			inf = s
		case interface{ informer() any }:
			inf = s.informer()
		default:
			continue
		}
		what := err.Error()
		if ns := (*NotSyncedError)(nil); errors.As(err, &ns) {
			what = "not synced" // the informer's own, in a registration's wait too
		}
		if slices.Contains(said[inf], what) {
			errs[n] = nil
			continue
		}
		said[inf] = append(said[inf], what)
	}
	return errs
}

// undecodableTypeOf returns the *UndecodableTypeError of s, an informer or
// a registration of one, or nil.
func undecodableTypeOf(s Syncer) error {
	if r, ok := s.(interface{ informer() any }); ok {
		s, _ = r.informer().(Syncer)
	}
	if inf, ok := s.(AnyInformer); ok {
		return inf.undecodableType()
	}
	return nil
}

// informer returns the informer the handler is added to, a
// *SharedInformer[T].
func (r *Registration[T]) informer() any { return r.inf }

// Synced is closed once every informer the factory holds at the time of
// the call has synced. It stays open while one of them has not, and for
// good if one is released or stopped first; WaitForSync(ctx, f) says why.
// Calls between two changes of the factory's informers share one channel,
// and one goroutine waits for it.
func (f *Factory) Synced() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.synced != nil && f.syncedAt == f.version {
		return f.synced
	}
	infs := make([]AnyInformer, 0, len(f.entries))
	for _, e := range f.entries {
		infs = append(infs, e.inf)
	}
	f.synced, f.syncedAt = syncwait.All(infs, AnyInformer.Synced, AnyInformer.Stopped), f.version
	return f.synced
}

// waitForSync waits until every informer the factory holds has synced; see
// WaitForSync.
func (f *Factory) waitForSync(ctx context.Context) error {
	infs, started, errs := f.snapshot()
	if !started && len(infs) > 0 {
		return ErrNotStarted
	}
	return errors.Join(append(errs, WaitForSync(ctx, infs...))...)
}

// snapshot returns the factory's informers, whether it was started, and
// the errors of the requests Informer could not serve.
func (f *Factory) snapshot() (infs []Syncer, started bool, failed []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	infs = make([]Syncer, 0, len(f.entries))
	for _, e := range f.entries {
		infs = append(infs, e.inf)
	}
	return infs, f.ctx != nil, slices.Clone(f.failed)
}

// ReadyCheck returns a readiness check, in the shape of net/http handlers
// and of controller-runtime's healthz.Checker
// (mgr.AddReadyzCheck("informers", informers.ReadyCheck(factory))): it
// returns nil once every syncer has synced, and otherwise an error that
// names each one that has not, with its last list or watch error, so that
// a 403 Forbidden reads as one. An informer most of whose objects cannot
// be decoded at the same field fails it while they cannot
// (UndecodableTypeError). A handler removed for exceeding its queue
// limit fails it for good, and so, while it lasts, does an informer whose
// cache lags the server by more than the threshold of its staleness
// monitor (StalenessOptions). It does not wait: it reports the state at
// the time of the request.
//
// A *Factory stands for every informer it holds and every handler added to
// them (those removed for exceeding their queue limit included), those
// requested after ReadyCheck too, and the requests Informer could not
// serve; it fails before Start.
func ReadyCheck(syncers ...Syncer) func(*http.Request) error {
	return func(*http.Request) error { return notReadyAll(syncers) }
}

// notReady returns why the factory is not ready; see ReadyCheck.
func (f *Factory) notReady() error {
	infs, started, errs := f.snapshot()
	if !started {
		return ErrNotStarted
	}
	all := infs
	for _, s := range infs {
		if inf, ok := s.(AnyInformer); ok {
			all = append(all, inf.registrations()...)
		}
	}
	slices.SortFunc(all, func(a, b Syncer) int { return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return errors.Join(append(errs, notReadyAll(all))...)
}

// notReadyAll returns why the syncers are not all ready, or nil.
func notReadyAll(syncers []Syncer) error {
	var errs []error
	for n, s := range syncers {
		if isNil(s) {
			errs = append(errs, errorf("ReadyCheck: syncer %d is nil", n))
			continue
		}
		if err := notReadyOne(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// notReadyOne returns why s is not ready, or nil.
func notReadyOne(s Syncer) error {
	switch s := s.(type) {
	case waiter:
		return s.notReady()
	case syncwait.Waiter:
		return syncwait.NotReady(s)
	}
	select {
	case <-s.Synced():
		return nil
	default:
		return errorf("%v has not synced", s)
	}
}

// notReady returns why the informer is not ready; see ReadyCheck.
func (i *SharedInformer[T]) notReady() error {
	if i.failed != nil {
		return i.failed
	}
	if !i.HasSynced() {
		return &NotSyncedError{Resource: i.String(), LastErr: i.LastError()}
	}
	return i.unhealthy()
}

// notReady returns why the handler is not ready; see ReadyCheck.
func (r *Registration[T]) notReady() error {
	if err := r.Err(); err != nil {
		return err
	}
	if !r.HasSynced() {
		return errorf("%v has not been delivered the initial state", r)
	}
	return nil
}
