package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Key identifies an object by namespace and name. Cluster-scoped objects
// have an empty namespace.
type Key = types.NamespacedName

// NamespaceIndex is the name of the built-in namespace index.
const NamespaceIndex = "namespace"

// KeyOf returns the key of obj.
func KeyOf(obj metav1.Object) Key {
	return Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Store is a typed, indexed, thread-safe object cache. The zero value is not
// usable; call New.
//
// Readers use Get and the Append methods. The single writer brackets its
// changes with Lock and Unlock and calls the Locked methods in between, so it
// can act on a change (queue notifications) before any reader or snapshot
// sees the next one. Objects are stored under the key the writer gives,
// which is the object's namespace and name as the server sent them.
type Store[T metav1.Object] struct {
	mu      sync.RWMutex
	items   map[Key]item[T]
	all     *bucket[T]
	byNS    map[string]*bucket[T]
	indexes []*index[T]
}

// New returns an empty store.
func New[T metav1.Object]() *Store[T] {
	return &Store[T]{
		items: make(map[Key]item[T]),
		all:   &bucket[T]{},
		byNS:  make(map[string]*bucket[T]),
	}
}

// AddIndex adds an index and indexes the objects already stored. It fails if
// the name is taken or fn is nil. Index function panics while indexing
// existing objects are returned as *IndexFuncError values; the index is
// added regardless.
func (s *Store[T]) AddIndex(name string, fn IndexFunc[T]) error {
	if fn == nil {
		return fmt.Errorf("index %q: nil index function", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == NamespaceIndex || s.indexLocked(name) != nil {
		return fmt.Errorf("index %q already exists", name)
	}
	ix := &index[T]{name: name, fn: fn, buckets: make(map[string]*bucket[T])}
	s.indexes = append(s.indexes, ix)
	var errs []error
	for key, it := range s.items {
		vals, err := ix.values(it.obj, key)
		if err != nil {
			errs = append(errs, err)
		}
		ix.add(it.e, vals)
	}
	return errors.Join(errs...)
}

// HasIndex reports whether an index of that name exists.
func (s *Store[T]) HasIndex(name string) bool {
	if name == NamespaceIndex {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.indexLocked(name) != nil
}

func (s *Store[T]) indexLocked(name string) *index[T] {
	for _, ix := range s.indexes {
		if ix.name == name {
			return ix
		}
	}
	return nil
}

// Get returns the object stored under key.
func (s *Store[T]) Get(key Key) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.GetLocked(key)
}

// GetLocked is Get for a caller that holds the lock.
func (s *Store[T]) GetLocked(key Key) (T, bool) {
	if it, ok := s.items[key]; ok {
		return it.obj, true
	}
	var zero T
	return zero, false
}

// Len returns the number of stored objects.
func (s *Store[T]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// AppendAll appends every stored object to dst.
func (s *Store[T]) AppendAll(dst []T) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append(dst, s.all.objs...)
}

// AppendAllLocked is AppendAll for a caller that holds the lock.
func (s *Store[T]) AppendAllLocked(dst []T) []T {
	return append(dst, s.all.objs...)
}

// AppendNamespace appends the objects of namespace ns to dst.
func (s *Store[T]) AppendNamespace(dst []T, ns string) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if b := s.byNS[ns]; b != nil {
		dst = append(dst, b.objs...)
	}
	return dst
}

// CountNamespace returns the number of objects in namespace ns.
func (s *Store[T]) CountNamespace(ns string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if b := s.byNS[ns]; b != nil {
		return b.len()
	}
	return 0
}

// AppendIndex appends the objects indexed under value by the named index to
// dst. It reports false if there is no such index.
func (s *Store[T]) AppendIndex(dst []T, name, value string) ([]T, bool) {
	if name == NamespaceIndex {
		return s.AppendNamespace(dst, value), true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ix := s.indexLocked(name)
	if ix == nil {
		return dst, false
	}
	if b := ix.buckets[value]; b != nil {
		dst = append(dst, b.objs...)
	}
	return dst, true
}

// IndexValues returns the values that have at least one object in the named
// index, in no particular order. It reports false if there is no such index.
func (s *Store[T]) IndexValues(name string) ([]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	buckets := s.byNS
	if name != NamespaceIndex {
		ix := s.indexLocked(name)
		if ix == nil {
			return nil, false
		}
		buckets = ix.buckets
	}
	vals := make([]string, 0, len(buckets))
	for v := range buckets {
		vals = append(vals, v)
	}
	return vals, true
}

// Lock takes the write lock.
func (s *Store[T]) Lock() { s.mu.Lock() }

// Unlock releases the write lock.
func (s *Store[T]) Unlock() { s.mu.Unlock() }

// RLock takes the read lock, for a consistent snapshot across calls.
func (s *Store[T]) RLock() { s.mu.RLock() }

// RUnlock releases the read lock.
func (s *Store[T]) RUnlock() { s.mu.RUnlock() }

// Version is the server's identity of one version of an object: its UID
// and resource version as the server sent them, before any transform.
type Version struct {
	UID             types.UID
	ResourceVersion string
}

// Same reports whether v and o name one version of one object. An empty
// resource version names no version.
func (v Version) Same(o Version) bool {
	return v.ResourceVersion != "" && v == o
}

// VersionOf returns the version stored under key. The writer, the only
// goroutine that changes the store, may call it without holding a lock.
func (s *Store[T]) VersionOf(key Key) (Version, bool) {
	it, ok := s.items[key]
	if !ok {
		return Version{}, false
	}
	return it.e.v, true
}

// PutLocked stores obj under key, which must be KeyOf(obj), with the
// server version v, marking it seen in list generation gen, and returns
// the object and version it replaced. Index values are recomputed; an update that keeps them
// replaces the object in place without allocating. A panicking index
// function is returned as an *IndexFuncError and the object is left out of
// that index.
func (s *Store[T]) PutLocked(key Key, obj T, v Version, gen uint64) (old T, oldV Version, existed bool, err error) {
	it, existed := s.items[key]
	e := it.e
	if !existed {
		e = &entry[T]{obj: obj, v: v, gen: gen, ns: s.nsBucket(key.Namespace)}
		e.allPos = s.all.add(e)
		e.nsPos = e.ns.add(e)
		var errs []error
		for _, ix := range s.indexes {
			vals, err := ix.values(obj, key)
			if err != nil {
				errs = append(errs, err)
			}
			ix.add(e, vals)
		}
		s.items[key] = item[T]{obj: obj, e: e}
		return old, oldV, false, errors.Join(errs...)
	}
	old, oldV = e.obj, e.v
	e.gen, e.v = gen, v
	e.setObj(obj, s.all)
	s.items[key] = item[T]{obj: obj, e: e}
	if len(s.indexes) == 0 {
		return old, oldV, true, nil
	}
	var errs []error
	for _, ix := range s.indexes {
		vals, err := ix.values(obj, key)
		if err != nil {
			errs = append(errs, err)
		}
		if !ix.sameValues(e, vals) {
			s.removeFromIndex(ix, e)
			ix.add(e, vals)
		}
	}
	return old, oldV, true, errors.Join(errs...)
}

// TouchLocked marks the object under key as seen in list generation gen
// without changing it. It reports whether the key is stored.
func (s *Store[T]) TouchLocked(key Key, gen uint64) bool {
	it, ok := s.items[key]
	if ok {
		it.e.gen = gen
	}
	return ok
}

// DeleteLocked removes the object under key and returns it.
func (s *Store[T]) DeleteLocked(key Key) (old T, existed bool) {
	it, ok := s.items[key]
	if !ok {
		return old, false
	}
	e := it.e
	delete(s.items, key)
	s.removeFrom(s.all, e.allPos)
	s.removeFrom(e.ns, e.nsPos)
	if e.ns.len() == 0 {
		delete(s.byNS, e.ns.value)
	}
	for _, sl := range e.indexSlots() {
		s.removeFromIndexBucket(sl)
	}
	return e.obj, true
}

// removeFrom takes the object at pos out of b, and tells the entry of the
// object moved into its place its new position.
func (s *Store[T]) removeFrom(b *bucket[T], pos int) {
	if last := b.len() - 1; pos != last {
		_, moved := s.entryAt(b, last)
		*moved.posIn(b, s.all) = pos
	}
	b.remove(pos)
}

// removeFromIndex takes e out of every bucket of index ix.
func (s *Store[T]) removeFromIndex(ix *index[T], e *entry[T]) {
	if e.ix == nil {
		return
	}
	slots := e.ix.slots
	for i := len(slots) - 1; i >= 0; i-- {
		sl := slots[i]
		if sl.b.ix != ix {
			continue
		}
		s.removeFromIndexBucket(sl)
		last := len(slots) - 1
		slots[i] = slots[last]
		slots[last] = slot[T]{}
		slots = slots[:last]
	}
	e.ix.slots = slots
}

// removeFromIndexBucket takes the object of slot sl out of its custom
// index bucket, and the bucket out of its index once empty.
func (s *Store[T]) removeFromIndexBucket(sl slot[T]) {
	s.removeFrom(sl.b, sl.pos)
	if sl.b.len() == 0 {
		delete(sl.b.ix.buckets, sl.b.value)
	}
}

// Reset removes every object, keeping the indexes, and gives the memory
// back.
func (s *Store[T]) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = make(map[Key]item[T])
	s.all = &bucket[T]{}
	s.byNS = make(map[string]*bucket[T])
	for _, ix := range s.indexes {
		ix.buckets = make(map[string]*bucket[T])
	}
}

// AppendStaleLocked appends to dst the key of every object not marked seen
// in list generation gen, in the order of namespace and name: what a
// completed list did not contain.
func (s *Store[T]) AppendStaleLocked(dst []Key, gen uint64) []Key {
	n := len(dst)
	for key, it := range s.items {
		if it.e.gen != gen {
			dst = append(dst, key)
		}
	}
	slices.SortFunc(dst[n:], compareKeys)
	return dst
}

// AppendStaleInNamespaceLocked is AppendStaleLocked for the objects of
// namespace ns alone: what a completed list of that namespace did not
// contain.
func (s *Store[T]) AppendStaleInNamespaceLocked(dst []Key, ns string, gen uint64) []Key {
	n := len(dst)
	if b := s.byNS[ns]; b != nil {
		for pos := range b.objs {
			if key, e := s.entryAt(b, pos); e.gen != gen {
				dst = append(dst, key)
			}
		}
	}
	slices.SortFunc(dst[n:], compareKeys)
	return dst
}

// entryAt returns the entry of the object at pos in b, and the key the map
// holds it under: the object's key. Should the object's name or namespace
// have been changed since it was stored (a caller writing to a cached
// object), the entry is found by its position instead, looking through
// every entry.
func (s *Store[T]) entryAt(b *bucket[T], pos int) (Key, *entry[T]) {
	key := KeyOf(b.objs[pos])
	if e := s.items[key].e; e != nil && e.holds(b, pos, s.all) {
		return key, e
	}
	for key, it := range s.items {
		if it.e.holds(b, pos, s.all) {
			return key, it.e
		}
	}
	panic("store: no entry records the position of an object of its bucket")
}

// compareKeys orders keys by namespace, then name.
func compareKeys(a, b Key) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (s *Store[T]) nsBucket(ns string) *bucket[T] {
	b := s.byNS[ns]
	if b == nil {
		b = &bucket[T]{value: ns}
		s.byNS[ns] = b
	}
	return b
}
