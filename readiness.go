package informers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
)

// WaitForSync waits until every syncer has synced, informers and handlers
// of any types together:
//
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
func WaitForSync(ctx context.Context, syncers ...Syncer) error {
	errs := make([]error, len(syncers))
	var wg sync.WaitGroup
	for n, s := range syncers {
		if isNil(s) {
			errs[n] = errorf("WaitForSync: syncer %d is nil", n)
			continue
		}
		if s.HasSynced() && undecodableTypeOf(s) == nil {
			continue
		}
		wg.Go(func() { errs[n] = s.WaitForSync(ctx) })
	}
	wg.Wait()
	return errors.Join(withoutRepeats(syncers, errs)...)
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

// WaitForSync waits until every started informer's cache has synced: it
// holds the server's state as of a complete list and a watch is open.
// Handlers may still be receiving that state; to wait for them too, pass
// their registrations to the package's WaitForSync. It returns nil once
// the caches have synced, and ErrNotStarted before Start. Otherwise it returns, when ctx ends or as soon as
// every informer has either synced or failed in a way that needs a fix on
// the server (403 Forbidden, a missing CRD...), an error that joins one
// *NotSyncedError per informer not synced, each with its last list or
// watch error, and the error of every request Informer could not serve.
func (f *Factory) WaitForSync(ctx context.Context) error {
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
// (mgr.AddReadyzCheck("informers", informers.ReadyCheck(pods, podsReg))):
// it returns nil once every syncer has synced, and otherwise an error that
// names each one that has not, with its last list or watch error, so that
// a 403 Forbidden reads as one. An informer most of whose objects cannot
// be decoded at the same field fails it while they cannot
// (UndecodableTypeError). A handler removed for exceeding its queue
// limit fails it for good, and so, while it lasts, does an informer whose
// cache lags the server by more than the threshold of its staleness
// monitor (StalenessOptions). It does not wait: it reports the state at
// the time of the request.
func ReadyCheck(syncers ...Syncer) func(*http.Request) error {
	return func(*http.Request) error { return notReady(syncers) }
}

// ReadyCheck returns a readiness check, as the package's ReadyCheck, over
// every informer of the factory and every handler added to them (those
// removed for exceeding their queue limit included), those requested later
// too, and the requests Informer could not serve. It fails before Start.
//
// Calling it with syncers is deprecated: it is the package-level
// ReadyCheck(syncers...), which is what it returns then.
func (f *Factory) ReadyCheck(syncers ...Syncer) func(*http.Request) error {
	if len(syncers) > 0 {
		return ReadyCheck(syncers...)
	}
	return func(*http.Request) error {
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
		return errors.Join(append(errs, notReady(all))...)
	}
}

// notReady returns why the syncers are not all ready, or nil.
func notReady(syncers []Syncer) error {
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
	case AnyInformer:
		if err := s.Err(); err != nil {
			return err
		}
		if !s.HasSynced() {
			return &NotSyncedError{Resource: s.String(), LastErr: s.LastError()}
		}
		if err := s.unhealthy(); err != nil {
			return err
		}
	case AnyRegistration:
		if err := s.Err(); err != nil {
			return err
		}
		if !s.HasSynced() {
			return errorf("%v has not been delivered the initial state", s)
		}
	default:
		if !s.HasSynced() {
			return errorf("%v has not synced", s)
		}
	}
	return nil
}
