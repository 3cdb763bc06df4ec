package informers

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// ReadyCheck returns a readiness check, in the shape of net/http handlers
// and of controller-runtime's healthz.Checker
// (mgr.AddReadyzCheck("informers", informers.ReadyCheck(pods, podsReg))):
// it returns nil once every syncer has synced, and otherwise an error that
// names each one that has not, with its last list or watch error, so that
// a 403 Forbidden reads as one. A handler removed for exceeding its queue
// limit fails it for good, and so, while it lasts, does an informer whose
// cache lags the server by more than the threshold of its staleness
// monitor (StalenessOptions). It does not wait: it reports the state at
// the time of the request.
func ReadyCheck(syncers ...Syncer) func(*http.Request) error {
	return func(*http.Request) error { return notReady(syncers) }
}

// ReadyCheck returns a readiness check, as the package's ReadyCheck, over
// the given syncers or, with none, over every informer of the factory and
// every handler added to them (those removed for exceeding their queue
// limit included), those requested later too, and the requests Informer
// could not serve. It fails before Start.
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
		if err := s.staleErr(); err != nil {
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
