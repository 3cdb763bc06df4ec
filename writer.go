package informers

import (
	"errors"
	"reflect"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/dispatch"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/store"
)

// writer is the reflector's side of an informer: it applies what the
// reflector learns to the store and queues the matching notifications while
// holding the store's write lock, so that every reader and every handler
// sees changes in one order. Only the reflector's goroutine calls it; it is
// the store's only writer.
type writer[T Object] struct {
	desc      string
	store     *store.Store[T]
	transform TransformFunc[T]
	copyOut   func(T) T // copies a list item out of its list's item array
	clear     func(T)   // zeroes the fields to skip; nil if none
	report    func(error)

	// handlers is replaced, never changed in place, with the informer's
	// mu held. The writer reads it with the store's write lock held;
	// AddHandler replaces it with the store's read lock held, so that a
	// handler added late gets a snapshot of the cache and every event
	// after it, exactly once. Removal needs no store lock: a removed
	// handler is stopped and ignores what is still queued for it.
	handlers atomic.Pointer[[]*dispatch.Listener[T]]
	// synced turns true, and syncedCh is closed, once the cache holds a
	// complete list and a watch follows it; syncedAt is when, in Unix
	// nanoseconds.
	synced   atomic.Bool
	syncedCh chan struct{}
	syncedAt atomic.Int64

	// bad are the objects the server has that could not be decoded.
	bad undecodables

	gen     uint64 // the current list generation
	lastGen uint64 // the last generation handed out
	scratch []store.Key
	toWake  []*dispatch.Listener[T] // handlers to wake at the next Flush
}

// newWriter returns the writer of store, with no handlers.
func newWriter[T Object](desc string, s *store.Store[T], transform TransformFunc[T], clear func(T), report func(error)) *writer[T] {
	w := &writer[T]{
		desc:      desc,
		store:     s,
		transform: transform,
		copyOut:   shallowCopier[T](),
		clear:     clear,
		report:    report,
		syncedCh:  make(chan struct{}),
	}
	w.handlers.Store(&[]*dispatch.Listener[T]{})
	return w
}

// listeners returns the handlers the writer delivers to.
func (w *writer[T]) listeners() []*dispatch.Listener[T] { return *w.handlers.Load() }

// addListener makes the writer deliver to l too. The caller holds the
// informer's mu and the store's read lock (see handlers).
func (w *writer[T]) addListener(l *dispatch.Listener[T]) {
	old := *w.handlers.Load()
	next := append(old[:len(old):len(old)], l)
	w.handlers.Store(&next)
}

// removeListener stops the writer delivering to l. The caller holds the
// informer's mu.
func (w *writer[T]) removeListener(l *dispatch.Listener[T]) {
	old := *w.handlers.Load()
	next := make([]*dispatch.Listener[T], 0, len(old))
	for _, x := range old {
		if x != l {
			next = append(next, x)
		}
	}
	w.handlers.Store(&next)
}

// hasSynced reports whether Watching has marked the cache synced.
func (w *writer[T]) hasSynced() bool { return w.synced.Load() }

// syncedChan is closed once the cache has synced.
func (w *writer[T]) syncedChan() <-chan struct{} { return w.syncedCh }

// syncedTime is when the cache synced, in Unix nanoseconds; 0 if it has
// not.
func (w *writer[T]) syncedTime() int64 { return w.syncedAt.Load() }

// unsync marks the cache of a stopped informer, about to be emptied, not
// synced.
func (w *writer[T]) unsync() { w.synced.Store(false) }

// StartList opens a new list generation; FinishList deletes what it missed.
func (w *writer[T]) StartList() { w.gen = w.newGeneration() }

// newGeneration returns a list generation no list has had, for a list
// that is one of several going on at once (one per namespace): it puts
// with putIn and completes with finishListIn.
func (w *writer[T]) newGeneration() uint64 {
	w.lastGen++
	return w.lastGen
}

// putIn is Put for an object of the list of generation gen.
func (w *writer[T]) putIn(gen uint64, obj T, from reflector.Origin) {
	w.gen = gen
	w.Put(obj, from)
}

// Put stores obj and notifies handlers. The key and server version are
// read before the transform, which may change obj in place. A listed or
// re-sent object whose version is cached already is kept as it is and not
// notified, and its new copy is not retained. An object whose UID changed
// under the same name was deleted and recreated: handlers see a delete of
// the old one, then an add.
func (w *writer[T]) Put(obj T, from reflector.Origin) {
	key := store.KeyOf(obj)
	v := store.Version{UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()}
	if from != reflector.FromModified && w.keptAlready(key, v) {
		return
	}
	if w.clear != nil {
		w.clear(obj)
	}
	obj, ok := w.transformed(key, obj)
	if !ok {
		w.keepLastGood(key, v.UID)
		return
	}
	if k := store.KeyOf(obj); k != key {
		// The transform renamed the object: it is cached under its new
		// key, which the version check above could not look up.
		key = k
		if from != reflector.FromModified && w.keptAlready(key, v) {
			return
		}
	}
	if from == reflector.FromList {
		// Out of the page's item array, which can then be freed as a
		// whole: otherwise any one cached item would keep it all.
		obj = w.copyOut(obj)
	}
	w.bad.forget(key)
	w.store.Lock()
	old, oldV, existed, err := w.store.PutLocked(key, obj, v, w.gen)
	switch {
	case !existed:
		w.notify(dispatch.Notification[T]{Kind: dispatch.Add, New: obj, InitialList: !w.synced.Load()})
	case from != reflector.FromModified && oldV.UID != v.UID:
		// A Modified event is, by the API's contract, of the same UID:
		// the common case reads no UID.
		w.notifyGone(old)
		w.notify(dispatch.Notification[T]{Kind: dispatch.Add, New: obj, InitialList: !w.synced.Load()})
	default:
		w.notify(dispatch.Notification[T]{Kind: dispatch.Update, Old: old, New: obj})
	}
	w.store.Unlock()
	if err != nil {
		w.reportIndexErrors(err)
	}
}

// keptAlready reports whether the cache holds key at version v, and if
// so marks it seen by the current list generation: a listed or re-sent
// object that did not change is neither stored again nor notified.
func (w *writer[T]) keptAlready(key store.Key, v store.Version) bool {
	cur, ok := w.store.VersionOf(key)
	if !ok || !cur.Same(v) {
		return false
	}
	w.store.Lock()
	w.store.TouchLocked(key, w.gen)
	w.store.Unlock()
	return true
}

// Delete removes the object obj's key names, as the watch reported it (or
// as the transform renames it), and notifies handlers with obj
// transformed, or, if the transform fails, with the last cached state.
func (w *writer[T]) Delete(obj T) {
	key := store.KeyOf(obj)
	if w.clear != nil {
		w.clear(obj)
	}
	final, ok := w.transformed(key, obj)
	if ok {
		key = store.KeyOf(final)
	}
	w.bad.forget(key)
	w.store.Lock()
	if old, existed := w.store.DeleteLocked(key); existed {
		if !ok {
			final = old
		}
		w.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: final})
	}
	w.store.Unlock()
}

// Undecodable records that the server has, under u's key, an object that
// could not be decoded, and reports it once per version; the cache keeps
// the object's last good state, as for a transform that fails. An
// undecodable delete is a delete: the cached state, if any, goes, with its
// final state unknown.
func (w *writer[T]) Undecodable(u reflector.Undecodable, deleted bool) {
	ns, name, uid, rv := u.Identity()
	key := store.Key{Namespace: ns, Name: name}
	if deleted {
		w.bad.forget(key)
		w.store.Lock()
		if old, existed := w.store.DeleteLocked(key); existed {
			w.notifyGone(old)
		}
		w.store.Unlock()
		return
	}
	err := &UndecodableObjectError{Resource: w.desc, Key: key, UID: uid, ResourceVersion: rv, Err: u}
	if w.bad.record(err, w.gen) {
		w.report(err)
	}
	w.keepLastGood(key, uid)
}

// undecodableIn is Undecodable for an object of the list of generation
// gen.
func (w *writer[T]) undecodableIn(gen uint64, u reflector.Undecodable, deleted bool) {
	w.gen = gen
	w.Undecodable(u, deleted)
}

// undecodable returns the error of the object under key if the server has
// it but it could not be decoded, and nil otherwise.
func (w *writer[T]) undecodable(key store.Key) *UndecodableObjectError { return w.bad.get(key) }

// undecodableObjects returns the errors of the objects the server has that
// could not be decoded, by key.
func (w *writer[T]) undecodableObjects() []*UndecodableObjectError { return w.bad.all() }

// undecodableCount returns how many objects the server has that could not
// be decoded.
func (w *writer[T]) undecodableCount() int { return w.bad.len() }

// undecodableType returns an *UndecodableTypeError when most of the
// objects the server has fail to decode at the same field
// (mostlyUndecodable), and nil otherwise. The objects the server has are,
// as far as the informer knows, those cached and those that could not be
// decoded and are not.
func (w *writer[T]) undecodableType() error {
	field, failed := w.bad.commonest()
	cached := w.store.Len()
	if !mostlyUndecodable(failed, cached) { // it cannot hold for more objects
		return nil
	}
	keys, first := w.bad.keysAndFirst(field)
	objects := cached
	for _, key := range keys {
		if _, ok := w.store.Get(key); !ok {
			objects++
		}
	}
	if !mostlyUndecodable(failed, objects) {
		return nil
	}
	return &UndecodableTypeError{
		Resource: w.desc, Type: reflect.TypeFor[T]().String(), Field: field,
		Failed: failed, Undecodable: len(keys), Objects: objects, First: first,
	}
}

// keepLastGood keeps the cached object under key, whose new version the
// transform failed on, in its last good state, so that a relist does not
// take it for gone; unless the new version has another UID: the cached
// object was deleted, and handlers see it deleted with its final state
// unknown. The cache thus never holds a UID that the server no longer
// has under that name, which lets a Modified event skip the UID check.
func (w *writer[T]) keepLastGood(key store.Key, uid types.UID) {
	w.store.Lock()
	defer w.store.Unlock()
	if cur, ok := w.store.VersionOf(key); ok && cur.UID != uid {
		if old, existed := w.store.DeleteLocked(key); existed {
			w.notifyGone(old)
		}
		return
	}
	w.store.TouchLocked(key, w.gen)
}

// FinishList deletes the objects the list did not contain; handlers see
// them deleted with their final state unknown.
func (w *writer[T]) FinishList() {
	w.bad.sweep(w.gen, "", false)
	w.store.Lock()
	w.scratch = w.store.AppendStaleLocked(w.scratch[:0], w.gen)
	w.deleteStaleLocked()
}

// finishListIn is FinishList for the list of namespace ns alone, made in
// generation gen.
func (w *writer[T]) finishListIn(ns string, gen uint64) {
	w.bad.sweep(gen, ns, true)
	w.store.Lock()
	w.scratch = w.store.AppendStaleInNamespaceLocked(w.scratch[:0], ns, gen)
	w.deleteStaleLocked()
}

// deleteStaleLocked deletes the objects of w.scratch, which a list did
// not contain, then unlocks the store and wakes the handlers.
func (w *writer[T]) deleteStaleLocked() {
	for _, key := range w.scratch {
		if old, existed := w.store.DeleteLocked(key); existed {
			w.notifyGone(old)
		}
	}
	w.store.Unlock()
	clear(w.scratch)
	w.scratch = w.scratch[:0]
	w.Flush()
}

// Watching marks the cache synced and tells every handler where its
// initial state ends.
func (w *writer[T]) Watching() {
	if w.synced.Load() {
		return
	}
	w.syncedAt.Store(time.Now().UnixNano())
	w.store.Lock()
	w.synced.Store(true)
	w.notify(dispatch.Notification[T]{Kind: dispatch.Synced})
	w.store.Unlock()
	w.Flush()
	close(w.syncedCh)
}

// leaving says whether a cached object leaves the cache when its scope
// changes, and how handlers are told.
type leaving uint8

const (
	stays         leaving = iota
	leftShard             // deleted with LeftShard set
	leftNamespace         // deleted with LeftNamespace set
	gone                  // deleted with its final state unknown
)

// evict removes the cached objects that leave says leave, and tells
// handlers why.
func (w *writer[T]) evict(leave func(T) leaving) {
	w.store.Lock()
	for _, obj := range w.store.AppendAllLocked(nil) {
		why := leave(obj)
		if why == stays {
			continue
		}
		if old, existed := w.store.DeleteLocked(store.KeyOf(obj)); existed {
			w.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: old, LeftShard: why == leftShard, LeftNamespace: why == leftNamespace, FinalStateUnknown: why == gone})
		}
	}
	w.store.Unlock()
	w.Flush()
}

// notify queues n for every handler; the caller holds the write lock.
// Handlers that wait are woken by Flush.
func (w *writer[T]) notify(n dispatch.Notification[T]) {
	for _, l := range *w.handlers.Load() {
		if l.Queue(n) {
			w.toWake = append(w.toWake, l)
		}
	}
}

// notifyGone tells handlers that old was deleted while the informer did
// not watch: its final state is unknown.
func (w *writer[T]) notifyGone(old T) {
	w.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: old, FinalStateUnknown: true})
}

// Flush wakes the handlers that have notifications waiting.
func (w *writer[T]) Flush() {
	for i, l := range w.toWake {
		l.Wake()
		w.toWake[i] = nil
	}
	w.toWake = w.toWake[:0]
}

// transformed applies the informer's transform to obj, whose key is key,
// and reports failures: an error, a panic, or a nil result.
func (w *writer[T]) transformed(key store.Key, obj T) (T, bool) {
	if w.transform == nil {
		return obj, true
	}
	out, err := w.transform.apply(obj)
	switch {
	case err != nil:
	case isNil(out):
		err = errors.New("transform returned nil")
	default:
		return out, true
	}
	w.report(&TransformError{Resource: w.desc, Key: key, Err: err})
	return out, false
}

// reportIndexErrors reports the index functions that panicked, possibly
// several joined, as IndexErrors.
func (w *writer[T]) reportIndexErrors(err error) {
	for _, e := range unjoin(err) {
		var ix *store.IndexFuncError
		if errors.As(e, &ix) {
			w.report(&IndexError{Resource: w.desc, Index: ix.Index, Key: ix.Key, Value: ix.Value, Stack: ix.Stack})
		}
	}
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

// shallowCopier returns a function that copies the struct a T points to
// into an allocation of its own; the copy shares strings, maps and slices
// with the original. T may also be an interface type (client.Object, say),
// whose values are copied by their dynamic pointer type. For other T it
// returns the identity. It uses reflection, once per object a list adds to
// the cache: next to decoding the object, the cost does not show.
func shallowCopier[T any]() func(T) T {
	typ := reflect.TypeFor[T]()
	switch typ.Kind() {
	case reflect.Pointer:
		elem := typ.Elem()
		return func(obj T) T {
			v := reflect.ValueOf(obj)
			if v.IsNil() {
				return obj
			}
			c := reflect.New(elem)
			c.Elem().Set(v.Elem())
			return c.Interface().(T)
		}
	case reflect.Interface:
		return func(obj T) T {
			v := reflect.ValueOf(obj)
			if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
				return obj
			}
			c := reflect.New(v.Type().Elem())
			c.Elem().Set(v.Elem())
			return c.Interface().(T)
		}
	}
	return func(obj T) T { return obj }
}
