package informers

import (
	"context"
)

// WaitForVersion waits until the cache has applied every event of its
// resource up to resource version rv, as returned by a write: a lister
// read after it sees that write, or a later state. Versions are those of
// one resource; they compare as KEP-5504 says. Bookmarks count, so an
// informer whose selectors exclude the object written gets there too, at
// the latest with the bookmark the API server sends every minute; a
// Tracker decides from the informer's selectors not to wait for those.
//
// An informer that watches each selected namespace on its own
// (NamespaceModePerNamespace) has reached rv once every watched namespace
// has, which a quiet one does only at its next bookmark: a Tracker waits
// for the namespace of a write alone.
//
// It waits for the cache to sync first. It returns a *VersionError at once
// if rv, or the cache's version, cannot be compared, a *ConsistencyError if
// ctx ends or the informer stops first, and the error of WaitForSync if
// the cache does not sync.
func (i *SharedInformer[T]) WaitForVersion(ctx context.Context, rv string) error {
	if i.failed != nil {
		return i.failed
	}
	if _, err := compareVersions(rv, rv); err != nil {
		return &VersionError{Resource: i.cfg.desc, Version: rv, Err: err}
	}
	if err := i.waitForSync(ctx); err != nil {
		return err
	}
	for {
		changed := i.scope.moved()
		have := i.scope.progress("")
		reached, err := i.reached(have, rv)
		if err != nil || reached {
			return err
		}
		select {
		case <-changed:
		case <-i.stopped:
			return &ConsistencyError{Resource: i.cfg.desc, Written: rv, Cached: have, Err: ErrStopped}
		case <-ctx.Done():
			return &ConsistencyError{Resource: i.cfg.desc, Written: rv, Cached: have, Err: ctx.Err()}
		}
	}
}

// reached reports whether have, the cache's version, is rv or later.
func (i *SharedInformer[T]) reached(have, rv string) (bool, error) {
	if beforeAll(have) {
		have = rv // compared with itself: checks rv alone
		if _, err := compareVersions(rv, rv); err == nil {
			return false, nil
		}
	}
	c, err := compareVersions(have, rv)
	if err != nil {
		if _, bad := compareVersions(rv, rv); bad != nil {
			return false, &VersionError{Resource: i.cfg.desc, Version: rv, Err: err}
		}
		return false, &VersionError{Resource: i.cfg.desc, Version: have, Cached: true, Err: err}
	}
	return c >= 0, nil
}

// WaitForVersion waits until the handler has been delivered every event
// of the informer's resource up to resource version rv: its informer's
// cache has reached rv (see SharedInformer.WaitForVersion), and the handler
// has returned from every event queued for it by then. A handler whose
// queue merges events (MergeByKey) may have been given a later state
// instead. It fails as the informer's WaitForVersion does, and also if the
// handler is removed first.
func (r *Registration[T]) WaitForVersion(ctx context.Context, rv string) error {
	if err := r.inf.WaitForVersion(ctx, rv); err != nil {
		return err
	}
	// Every event up to rv was queued to the handler, under the store's
	// lock, before the reflector published rv: a mark queued now comes
	// after them all.
	m := r.listener.Mark()
	select {
	case <-m.Done():
		if m.Reached() {
			return nil
		}
		if err := r.Err(); err != nil {
			return err
		}
		return &ConsistencyError{Resource: r.desc, Handler: r.name, Written: rv, Err: ErrStopped}
	case <-ctx.Done():
		return &ConsistencyError{Resource: r.desc, Handler: r.name, Written: rv, Err: ctx.Err()}
	}
}
