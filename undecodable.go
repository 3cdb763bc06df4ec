package informers

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kubetyped/informers/internal/store"
)

// undecodables are the objects of an informer's resource that the server
// has but that could not be decoded into the informer's T, by key: what
// Stats counts, a Tracker returns for them, and readiness may fail on.
// An entry goes when the object decodes again, is deleted, or a list no
// longer has it. The writer changes it; anyone reads it.
type undecodables struct {
	n  atomic.Int64 // len(m), read without the lock on the event path
	mu sync.Mutex
	m  map[store.Key]undecodable
}

// undecodable is one object that could not be decoded, and the list
// generation that last saw it.
type undecodable struct {
	err *UndecodableObjectError
	gen uint64
}

// record notes err for its key, seen by list generation gen, and reports
// whether it is news: a version of the object not recorded before.
func (u *undecodables) record(err *UndecodableObjectError, gen uint64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[store.Key]undecodable{}
	}
	old, had := u.m[err.Key]
	u.m[err.Key] = undecodable{err: err, gen: gen}
	u.n.Store(int64(len(u.m)))
	return !had || old.err.ResourceVersion != err.ResourceVersion || old.err.UID != err.UID
}

// forget drops key: its object decoded, or is gone.
func (u *undecodables) forget(key store.Key) {
	if u.n.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, key)
	u.n.Store(int64(len(u.m)))
}

// sweep drops the objects that a list of generation gen did not see, of
// namespace ns alone if inNamespace.
func (u *undecodables) sweep(gen uint64, ns string, inNamespace bool) {
	if u.n.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for key, e := range u.m {
		if e.gen < gen && (!inNamespace || key.Namespace == ns) {
			delete(u.m, key)
		}
	}
	u.n.Store(int64(len(u.m)))
}

// get returns the error of key, or nil if its object decoded.
func (u *undecodables) get(key store.Key) *UndecodableObjectError {
	if u.n.Load() == 0 {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[key].err
}

// len returns how many objects could not be decoded.
func (u *undecodables) len() int { return int(u.n.Load()) }

// all returns the errors of every object that could not be decoded, by
// key.
func (u *undecodables) all() []*UndecodableObjectError {
	u.mu.Lock()
	defer u.mu.Unlock()
	errs := make([]*UndecodableObjectError, 0, len(u.m))
	for _, e := range u.m {
		errs = append(errs, e.err)
	}
	slices.SortFunc(errs, func(a, b *UndecodableObjectError) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return errs
}
