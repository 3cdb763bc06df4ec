package informers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultTrackerTimeout is how long a Tracker waits by default.
const DefaultTrackerTimeout = 5 * time.Second

// Tracker lets a controller read its own writes from an informer's cache.
// The controller records each write of an object of type T it makes under
// the key it reconciles (the object's own key, or its owner's); before it
// reads the cache for that key again, Wait, or Get, waits until the cache
// shows those writes, or gives up after a timeout with a
// *ConsistencyError, for the workqueue to retry the key later:
//
//	func (c *controller) reconcile(ctx context.Context, key types.NamespacedName) error {
//		if err := c.pods.Wait(ctx, key); err != nil {
//			return err // requeued with backoff
//		}
//		if len(c.podsOf(key)) == 0 {
//			pod, err := c.client.CoreV1().Pods(key.Namespace).Create(ctx, podFor(key), metav1.CreateOptions{})
//			if err != nil {
//				c.pods.WriteFailed(key, err)
//				return err
//			}
//			return c.pods.Wrote(key, pod)
//		}
//		return nil
//	}
//
// Without it, a reconcile that runs again before the informer has
// delivered the pod it created finds none and creates a second one.
//
// A write shows once the cache has reached its version, as
// SharedInformer.WaitForVersion waits for, or holds the object at it. A
// write that the informer's namespace, selectors or shard leave out shows
// once the cache no longer holds the object, at once if it never did: it
// waits for no bookmark. A delete shows once the cache no longer holds
// the object, holds another object of that name, or holds it marked for
// deletion (finalizers keep it on the server). A Tracker costs the
// informer nothing; waits cost the waiter a few map lookups each time the
// cache advances. It is safe for concurrent use: typically, workers that
// each reconcile one key at a time. Create one with NewTracker.
type Tracker[T Object] struct {
	inf     *SharedInformer[T]
	timeout time.Duration

	mu      sync.Mutex
	records map[types.NamespacedName][]write
	sweepAt int // the number of records at which to drop the settled ones
}

// write is what a Tracker expects the cache to show of one write.
type write struct {
	obj types.NamespacedName
	uid types.UID
	// rv is the version the server returned; "" for a delete or for a
	// write whose outcome is unknown.
	rv string
	// gone: the cache must stop holding obj (deleted, or written out of
	// the informer's scope).
	gone bool
	// unknown: the write failed in a way that leaves unknown whether the
	// server applied it; the cache must reach the server's current
	// version before anything is read.
	unknown bool
}

// sweepEvery is the smallest number of records at which a Tracker drops
// the settled records nobody waited for.
const sweepEvery = 256

// NewTracker returns a tracker of the controller's writes to inf's
// objects. Wait gives up after timeout; 0 means DefaultTrackerTimeout.
func NewTracker[T Object](inf *SharedInformer[T], timeout time.Duration) *Tracker[T] {
	if timeout <= 0 {
		timeout = DefaultTrackerTimeout
	}
	return &Tracker[T]{inf: inf, timeout: timeout, records: map[types.NamespacedName][]write{}, sweepAt: sweepEvery}
}

// Wrote records that the controller created, updated, patched or wrote the
// status of obj, as the server returned it, while reconciling key: Wait
// for key waits until the cache shows obj at that version or later. It
// records nothing and returns an error if obj has no name or no resource
// version, as the empty object a client returns with a failed write: call
// it only when the write succeeded, and WriteFailed otherwise.
func (t *Tracker[T]) Wrote(key types.NamespacedName, obj T) error {
	if isNil(obj) || obj.GetName() == "" || obj.GetResourceVersion() == "" {
		return errorf("%s: Tracker.Wrote for %s: the object has no name or no resource version, not one a server returned from a successful write", t.inf.cfg.desc, key)
	}
	t.record(key, write{obj: KeyOf(obj), uid: obj.GetUID(), rv: obj.GetResourceVersion(), gone: t.inf.excludes(obj)})
	return nil
}

// Deleted records that the controller deleted obj (only its namespace,
// name and UID are read; the UID may be empty) while reconciling key:
// Wait for key waits until the cache no longer holds it. Deletes return no
// version the cache could be compared with.
func (t *Tracker[T]) Deleted(key types.NamespacedName, obj T) {
	t.record(key, write{obj: KeyOf(obj), uid: obj.GetUID(), gone: true})
}

// WriteFailed records a write that failed while reconciling key, if err
// leaves unknown whether the server applied it: a timeout, a connection
// lost, a 5xx (an API server restarting). Wait for key then asks the
// server for its current resource version and waits until the cache has
// reached it, so that a create whose response was lost is not made twice.
// Errors that say the server refused the write (a conflict, an invalid
// object, a 403...) record nothing; nor does nil.
func (t *Tracker[T]) WriteFailed(key types.NamespacedName, err error) {
	if err == nil || !outcomeUnknown(err) {
		return
	}
	t.record(key, write{unknown: true})
}

// outcomeUnknown reports whether a write that failed with err may have
// been applied all the same.
func outcomeUnknown(err error) bool {
	code := statusCode(err) // 0: no answer from the server
	return code == 0 || code >= 500 || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// record adds w to the writes recorded under key, replacing an earlier
// one of the same object.
func (t *Tracker[T]) record(key types.NamespacedName, w write) {
	t.mu.Lock()
	defer t.mu.Unlock()
	writes := t.records[key]
	for n := range writes {
		if !writes[n].unknown && !w.unknown && writes[n].obj == w.obj {
			writes[n] = w // the later write supersedes the earlier
			return
		}
	}
	t.records[key] = append(writes, w)
	if len(t.records) >= t.sweepAt {
		t.sweepLocked()
	}
}

// sweepLocked drops the records that the cache already shows, which no
// Wait has collected (the key was never reconciled again); t.mu is held.
func (t *Tracker[T]) sweepLocked() {
	for key, writes := range t.records {
		if pending, err := t.pendingLocked(writes, false); err == nil && len(pending) == 0 {
			delete(t.records, key)
		}
	}
	t.sweepAt = max(sweepEvery, 2*len(t.records))
}

// Forget drops the writes recorded under key, as when the object
// reconciled is gone for good.
func (t *Tracker[T]) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.records, key)
}

// Wait waits until the cache shows every write recorded under key, then
// forgets them. It gives up after the tracker's timeout, or when ctx ends,
// with a *ConsistencyError; a *VersionError means versions that cannot be
// compared (the writes are forgotten: waiting again would not help). With
// writes to wait for, it waits for the cache to sync first. When nothing
// is recorded under key, or the cache shows it already, as it mostly
// does, it returns at once and allocates nothing.
func (t *Tracker[T]) Wait(ctx context.Context, key types.NamespacedName) error {
	if t.inf.HasSynced() {
		if pending, err := t.settle(key); err != nil || len(pending) == 0 {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	if err := t.inf.waitForSync(ctx); err != nil {
		return err
	}
	if err := t.resolveUnknown(ctx, key); err != nil {
		return err
	}
	for {
		// Any part of the cache that moves may show a write: a wait for a
		// write in one namespace is woken by that namespace's events.
		changed := t.inf.scope.moved()
		pending, err := t.settle(key)
		if err != nil || len(pending) == 0 {
			return err
		}
		select {
		case <-changed:
		case <-t.inf.stopped:
			return t.notShown(key, pending[0], ErrStopped)
		case <-ctx.Done():
			return t.notShown(key, pending[0], ctx.Err())
		}
	}
}

// settle forgets the writes recorded under key that the cache shows, and
// returns those it does not, or the error that makes it forget them all.
func (t *Tracker[T]) settle(key types.NamespacedName) ([]write, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	writes, ok := t.records[key]
	if !ok {
		return nil, nil
	}
	pending, err := t.pendingLocked(writes, true)
	if err != nil || len(pending) == 0 {
		delete(t.records, key)
	} else {
		t.records[key] = pending
	}
	return pending, err
}

// resolveUnknown turns the writes of unknown outcome recorded under key
// into a wait for the server's current version.
func (t *Tracker[T]) resolveUnknown(ctx context.Context, key types.NamespacedName) error {
	t.mu.Lock()
	var unknown bool
	for _, w := range t.records[key] {
		unknown = unknown || w.unknown
	}
	t.mu.Unlock()
	if !unknown {
		return nil
	}
	rv, err := t.inf.refls.serverVersion(ctx)
	if err != nil {
		return &ConsistencyError{Resource: t.inf.cfg.desc, Key: key, Err: fmt.Errorf("asking the server for its version after a write of unknown outcome: %w", err)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	writes := t.records[key]
	for n := range writes {
		if writes[n].unknown {
			writes[n] = write{rv: rv}
		}
	}
	return nil
}

// notShown is the error of a wait that ended before the cache showed w.
func (t *Tracker[T]) notShown(key types.NamespacedName, w write, err error) error {
	have := t.inf.scope.progress(w.obj.Namespace)
	return &ConsistencyError{Resource: t.inf.cfg.desc, Key: key, Object: w.obj, Written: w.rv, Deleted: w.gone, Cached: have, Err: err}
}

// Get waits as Wait does for the writes recorded under key, then returns
// the cached object key, or a NotFound error: a read that sees the
// controller's own writes.
func (t *Tracker[T]) Get(ctx context.Context, key types.NamespacedName) (T, error) {
	if err := t.Wait(ctx, key); err != nil {
		var zero T
		return zero, err
	}
	return t.inf.reader.get(key.Namespace, key.Name)
}

// pendingLocked returns the writes the cache does not show yet, by the
// versions the cache has reached too if byVersion is set (else by the
// objects alone); t.mu is held.
func (t *Tracker[T]) pendingLocked(writes []write, byVersion bool) ([]write, error) {
	var pending []write
	for _, w := range writes {
		shown, err := t.shows(w, byVersion)
		if err != nil {
			return nil, err
		}
		if !shown {
			pending = append(pending, w)
		}
	}
	return pending, nil
}

// shows reports whether the cache shows w: it has reached w's version
// where w's namespace is (if byVersion is set), or holds the object at
// it, or, for a delete, no longer holds it.
func (t *Tracker[T]) shows(w write, byVersion bool) (bool, error) {
	if w.unknown {
		return false, nil
	}
	if w.rv == "" && !w.gone {
		return false, &VersionError{Resource: t.inf.cfg.desc, Version: w.rv, Err: errors.New("the server returned no resource version")}
	}
	if e := t.inf.writer.undecodable(w.obj); e != nil && !w.gone {
		// The server has the object at a version that cannot be decoded:
		// no wait will show it.
		if reached, err := t.inf.reached(e.ResourceVersion, w.rv); w.rv == "" || err == nil && reached {
			return false, e
		}
	}
	if w.rv != "" && byVersion {
		if have := t.inf.scope.progress(w.obj.Namespace); have != "" {
			if reached, err := t.inf.reached(have, w.rv); err != nil || reached {
				return reached, err
			}
		}
	}
	if w.obj == (types.NamespacedName{}) {
		return false, nil // the server's version, after a write of unknown outcome
	}
	cached, ok := t.inf.store.Get(w.obj)
	switch {
	case !ok:
		return w.gone, nil
	case w.uid != "" && cached.GetUID() != w.uid:
		// Another object of that name: the one written is gone.
		return w.gone, nil
	case w.gone && w.rv == "":
		return cached.GetDeletionTimestamp() != nil, nil
	}
	if w.rv == "" {
		return false, nil
	}
	return t.inf.reached(cached.GetResourceVersion(), w.rv)
}

// excludes reports whether the informer cannot hold obj: its namespace,
// its selectors, its namespace selection or its shard leave it out. It
// reports false where it cannot tell.
func (i *SharedInformer[T]) excludes(obj T) bool {
	return i.filter.excludes(obj) || i.scope.excludes(obj)
}
