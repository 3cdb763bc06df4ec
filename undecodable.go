package informers

import (
	"cmp"
	"errors"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kubetyped/informers/internal/decoded"
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
	// fields counts the entries of m by the field they failed at, as
	// fieldOf gives it; entries whose field is unknown are not counted.
	fields map[string]int
}

// undecodable is one object that could not be decoded, the field it
// failed at (fieldOf), and the list generation that last saw it.
type undecodable struct {
	err   *UndecodableObjectError
	field string
	gen   uint64
}

// record notes err for its key, seen by list generation gen, and reports
// whether it is news: a version of the object not recorded before.
func (u *undecodables) record(err *UndecodableObjectError, gen uint64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[store.Key]undecodable{}
		u.fields = map[string]int{}
	}
	old, had := u.m[err.Key]
	if had {
		u.uncountLocked(old)
	}
	e := undecodable{err: err, field: fieldOf(err), gen: gen}
	u.m[err.Key] = e
	if e.field != "" {
		u.fields[e.field]++
	}
	u.n.Store(int64(len(u.m)))
	return !had || old.err.ResourceVersion != err.ResourceVersion || old.err.UID != err.UID
}

// deleteLocked drops key, which m has as e.
func (u *undecodables) deleteLocked(key store.Key, e undecodable) {
	delete(u.m, key)
	u.uncountLocked(e)
}

// uncountLocked takes e, about to leave m, out of the count of its field.
func (u *undecodables) uncountLocked(e undecodable) {
	if e.field == "" {
		return
	}
	if u.fields[e.field]--; u.fields[e.field] <= 0 {
		delete(u.fields, e.field)
	}
}

// forget drops key: its object decoded, or is gone.
func (u *undecodables) forget(key store.Key) {
	if u.n.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.m[key]; ok {
		u.deleteLocked(key, e)
	}
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
			u.deleteLocked(key, e)
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
	slices.SortFunc(errs, func(a, b *UndecodableObjectError) int { return compareKeys(a.Key, b.Key) })
	return errs
}

// commonest returns the field that most objects failed at, and how many
// failed there; "" and 0 when no object failed at a known field. Of
// fields tied, the first in order.
func (u *undecodables) commonest() (field string, failed int) {
	if u.n.Load() == 0 {
		return "", 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for f, n := range u.fields {
		if n > failed || n == failed && f < field {
			field, failed = f, n
		}
	}
	return field, failed
}

// keysAndFirst returns the keys of every object that could not be
// decoded, and the error of the first, by namespace and name, that failed
// at field.
func (u *undecodables) keysAndFirst(field string) (keys []store.Key, first *UndecodableObjectError) {
	u.mu.Lock()
	defer u.mu.Unlock()
	keys = make([]store.Key, 0, len(u.m))
	for key, e := range u.m {
		keys = append(keys, key)
		if e.field == field && (first == nil || compareKeys(key, first.Key) < 0) {
			first = e.err
		}
	}
	return keys, first
}

// compareKeys orders keys by namespace, then name.
func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// elementIndex matches the index of an array element in a field path.
var elementIndex = regexp.MustCompile(`\[[0-9]+\]`)

// fieldOf returns the field path err's object failed to decode at, with
// the index of every array element as [*], so that objects failing at the
// same field of different elements count together: spec.containers[*].image;
// "" when the decoder did not say.
func fieldOf(err *UndecodableObjectError) string {
	var d *decoded.Undecodable
	if !errors.As(err.Err, &d) || d.Path == "" {
		return ""
	}
	return elementIndex.ReplaceAllString(d.Path, "[*]")
}

// mostlyUndecodable is the rule by which objects that fail to decode say
// that the Go type does not fit the resource rather than that some
// objects are bad: at least two objects fail at the same field, and they
// are more than half of the objects the server has.
func mostlyUndecodable(failed, objects int) bool {
	return failed >= 2 && 2*failed > objects
}
