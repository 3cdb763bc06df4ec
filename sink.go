package informers

import (
	"reflect"

	"github.com/kubetyped/informers/internal/dispatch"
	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/internal/store"
)

// sink is the reflector's view of an informer: it applies what the
// reflector learns to the store and queues the matching notifications while
// holding the store's write lock, so that every reader and every handler
// sees changes in one order. Only the reflector goroutine calls it.
type sink[T Object] SharedInformer[T]

func (s *sink[T]) inf() *SharedInformer[T] { return (*SharedInformer[T])(s) }

// StartList opens a new list generation; FinishList deletes what it missed.
func (s *sink[T]) StartList() { s.gen++ }

// Put stores obj and notifies handlers. A relisted object whose resource
// version is unchanged is kept as it is and not notified, and its new copy
// is not retained. An object whose
// UID changed under the same name was deleted and recreated: handlers see a
// delete of the old one, then an add.
func (s *sink[T]) Put(obj T, from reflector.Origin) {
	obj, ok := s.transform(obj)
	if !ok {
		return
	}
	st := s.store
	st.Lock()
	// A Modified event is a new version of a cached object with the same
	// UID: the common case takes one map lookup.
	if from != reflector.FromModified {
		key := store.KeyOf(obj)
		if old, existed := st.GetLocked(key); existed {
			if (from == reflector.FromList || from == reflector.FromInitialEvents) && sameVersion(old, obj) {
				st.TouchLocked(key, s.gen)
				st.Unlock()
				return
			}
			if old.GetUID() != obj.GetUID() {
				st.DeleteLocked(key)
				s.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: old, Flag: true})
			}
		}
	}
	if from == reflector.FromList {
		// Out of the page's item array, which can then be freed as a
		// whole: otherwise any one cached item would keep it all.
		obj = s.copyOut(obj)
	}
	old, existed, err := st.PutLocked(obj, s.gen)
	if existed {
		s.notify(dispatch.Notification[T]{Kind: dispatch.Update, Old: old, New: obj})
	} else {
		s.notify(dispatch.Notification[T]{Kind: dispatch.Add, New: obj, Flag: !s.synced.Load()})
	}
	st.Unlock()
	if err != nil {
		s.inf().report(s.inf().indexError(err))
	}
}

// Delete removes obj, as the watch reported it, and notifies handlers.
func (s *sink[T]) Delete(obj T) {
	obj, ok := s.transform(obj)
	if !ok {
		return
	}
	st := s.store
	st.Lock()
	if _, existed := st.DeleteLocked(store.KeyOf(obj)); existed {
		s.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: obj})
	}
	st.Unlock()
}

// FinishList deletes the objects the list did not contain; handlers see
// them deleted with their final state unknown.
func (s *sink[T]) FinishList() {
	st := s.store
	st.Lock()
	s.scratch = st.AppendStaleLocked(s.scratch[:0], s.gen)
	for _, obj := range s.scratch {
		st.DeleteLocked(store.KeyOf(obj))
		s.notify(dispatch.Notification[T]{Kind: dispatch.Delete, Old: obj, Flag: true})
	}
	st.Unlock()
	clear(s.scratch)
	s.scratch = s.scratch[:0]
	s.Flush()
}

// Watching marks the cache synced and tells every handler where its
// initial state ends.
func (s *sink[T]) Watching() {
	if s.synced.Load() {
		return
	}
	s.store.Lock()
	s.synced.Store(true)
	s.notify(dispatch.Notification[T]{Kind: dispatch.Synced})
	s.store.Unlock()
	s.Flush()
	close(s.syncedCh)
}

// notify queues n for every handler; the caller holds the write lock.
// Handlers that wait are woken by Flush.
func (s *sink[T]) notify(n dispatch.Notification[T]) {
	for _, l := range *s.listeners.Load() {
		if l.Queue(n) {
			s.toWake = append(s.toWake, l)
		}
	}
}

// Flush wakes the handlers that have notifications waiting.
func (s *sink[T]) Flush() {
	for i, l := range s.toWake {
		l.Wake()
		s.toWake[i] = nil
	}
	s.toWake = s.toWake[:0]
}

// transform applies the informer's transform, reporting failures.
func (s *sink[T]) transform(obj T) (out T, ok bool) {
	if s.opts.Transform == nil {
		return obj, true
	}
	out, err := s.opts.Transform.apply(obj)
	if err != nil {
		s.inf().report(&TransformError{Resource: s.desc, Key: store.KeyOf(obj), Err: err})
		return out, false
	}
	return out, true
}

// sameVersion reports whether a and b are the same version of one object.
func sameVersion[T Object](a, b T) bool {
	rv := a.GetResourceVersion()
	return rv != "" && rv == b.GetResourceVersion() && a.GetUID() == b.GetUID()
}

// shallowCopier returns a function that copies the struct a T points to
// into an allocation of its own; the copy shares strings, maps and slices
// with the original. For a T that is not a pointer it returns the identity.
// It uses reflection, once per object a list adds to the cache: next to
// decoding the object, the cost does not show.
func shallowCopier[T any]() func(T) T {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer {
		return func(obj T) T { return obj }
	}
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
}
