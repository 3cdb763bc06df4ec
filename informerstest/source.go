// Package informerstest provides an in-memory source of objects that
// behaves like an API server for one resource, so that controllers built on
// informers can be tested without a server: lists with paging, watches that
// resume from a resource version, bookmarks, watch-list streaming, 410
// expiry, injected errors, and counts of requests.
package informerstest

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/shard"
)

// Source is an in-memory API for objects of type T listed as L. It is safe
// for concurrent use. The zero value is not usable; call NewSource.
type Source[T informers.Object, L informers.List] struct {
	resource schema.GroupResource

	mu        sync.Mutex
	rv        uint64
	compacted uint64 // versions at or below this are gone from history
	objects   map[types.NamespacedName]T
	history   []change[T]
	watchers  map[*watcher]watchFilter
	snapshots map[string]snapshot[T] // continue token -> rest of a paged list

	listErr, watchErr error
	noWatchList       bool
	ignoreShards      bool
	stalled           bool
	calls             Calls
}

// Calls counts the requests a Source has served, failed ones included.
type Calls struct {
	List, Watch, WatchList int
}

// snapshot is what is left of a paged list, as of its first page's version.
type snapshot[T any] struct {
	rv    uint64
	items []T
}

// change is one write: the object after it, and before it if it was an
// update.
type change[T informers.Object] struct {
	rv   uint64
	typ  watch.EventType
	obj  T
	prev T // Modified only
}

// eventFor returns the event of c that a watch with filter f sees, and
// whether it sees one. As with kube-apiserver's watch cache, an update
// that makes an object match arrives as Added, and one that makes it stop
// matching as Deleted, carrying the object as it was, at c's version.
func (c change[T]) eventFor(f watchFilter) (watch.Event, bool) {
	matches := f.matches(c.obj)
	if c.typ != watch.Modified {
		if !matches {
			return watch.Event{}, false
		}
		return watch.Event{Type: c.typ, Object: c.obj.DeepCopyObject()}, true
	}
	switch matched := f.matches(c.prev); {
	case matches && matched:
		return watch.Event{Type: watch.Modified, Object: c.obj.DeepCopyObject()}, true
	case matches:
		return watch.Event{Type: watch.Added, Object: c.obj.DeepCopyObject()}, true
	case matched:
		gone := c.prev.DeepCopyObject().(T)
		gone.SetResourceVersion(c.obj.GetResourceVersion())
		return watch.Event{Type: watch.Deleted, Object: gone}, true
	}
	return watch.Event{}, false
}

type watchFilter struct {
	ns    string
	label labels.Selector
	field fields.Selector
	shard *shard.Shard
}

// NewSource returns an empty source. resource names it in the errors it
// returns, such as NotFound or Expired.
func NewSource[T informers.Object, L informers.List](resource schema.GroupResource) *Source[T, L] {
	return &Source[T, L]{
		resource:  resource,
		objects:   make(map[types.NamespacedName]T),
		watchers:  make(map[*watcher]watchFilter),
		snapshots: make(map[string]snapshot[T]),
	}
}

// ListWatch returns a ListWatch over the source, limited to namespace ns
// ("" for all).
func (s *Source[T, L]) ListWatch(ns string) *informers.ListWatch[T, L] {
	return informers.NewListWatch[T, L](
		func(ctx context.Context, opts metav1.ListOptions) (L, error) { return s.List(ctx, ns, opts) },
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return s.Watch(ctx, ns, opts)
		},
	)
}

// Add creates obj; it fails if the name is taken. The source keeps a copy
// and stamps it with a new resource version, which it returns.
func (s *Source[T, L]) Add(obj T) (string, error) {
	return s.write(watch.Added, obj)
}

// Update replaces obj; it fails if it does not exist.
func (s *Source[T, L]) Update(obj T) (string, error) {
	return s.write(watch.Modified, obj)
}

// Delete removes the object called namespace/name; it fails if it does not
// exist.
func (s *Source[T, L]) Delete(namespace, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: namespace, Name: name}
	old, ok := s.objects[key]
	if !ok {
		return "", apierrors.NewNotFound(s.resource, name)
	}
	delete(s.objects, key)
	s.rv++
	gone := old.DeepCopyObject().(T)
	gone.SetResourceVersion(s.version())
	s.record(change[T]{typ: watch.Deleted, obj: gone})
	return s.version(), nil
}

func (s *Source[T, L]) write(typ watch.EventType, obj T) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	old, exists := s.objects[key]
	switch {
	case typ == watch.Added && exists:
		return "", apierrors.NewAlreadyExists(s.resource, key.Name)
	case typ == watch.Modified && !exists:
		return "", apierrors.NewNotFound(s.resource, key.Name)
	}
	stored := obj.DeepCopyObject().(T)
	if typ == watch.Added && stored.GetUID() == "" {
		stored.SetUID(types.UID(fmt.Sprintf("uid-%d", s.rv+1)))
	}
	if typ == watch.Modified {
		stored.SetUID(old.GetUID())
	}
	s.rv++
	stored.SetResourceVersion(s.version())
	s.objects[key] = stored
	s.record(change[T]{typ: typ, obj: stored, prev: old})
	return s.version(), nil
}

// record appends c, at the current version, to the history and sends it
// to the watchers that see it.
func (s *Source[T, L]) record(c change[T]) {
	c.rv = s.rv
	s.history = append(s.history, c)
	for w, f := range s.watchers {
		if ev, ok := c.eventFor(f); ok {
			w.send(ev)
		}
	}
}

// Bookmark sends every watcher that asked for bookmarks one at the current
// resource version.
func (s *Source[T, L]) Bookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		if w.bookmarks {
			w.send(watch.Event{Type: watch.Bookmark, Object: s.bookmark(nil)})
		}
	}
}

// Compact forgets the history up to the current resource version, as etcd
// compaction does, and ends every open watch with 410 Expired. Watches and
// lists from older versions then fail with 410 too, which makes informers
// relist.
func (s *Source[T, L]) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = s.rv
	s.history = nil
	clear(s.snapshots)
	for w := range s.watchers {
		w.send(watch.Event{Type: watch.Error, Object: &s.expired().ErrStatus})
		w.close()
		delete(s.watchers, w)
	}
}

// CloseWatches ends every open watch cleanly, as a server timeout does;
// informers resume from their last resource version.
func (s *Source[T, L]) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.close()
		delete(s.watchers, w)
	}
}

// StallWatches, with stall true, holds back every event and bookmark of
// the open watches and of those opened later: they stay open and silent,
// as a stream stuck between server and client, and the informers on them
// stay synced, at their last version, while the source moves on. With
// stall false the held events are sent, in order.
func (s *Source[T, L]) StallWatches(stall bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = stall
	for w := range s.watchers {
		w.hold(stall)
	}
}

// FailList makes every list fail with err until called with nil, and every
// watch-list request, which lists the initial state by streaming.
func (s *Source[T, L]) FailList(err error) { setLocked(&s.mu, &s.listErr, err) }

// FailWatch makes every watch fail with err until called with nil.
func (s *Source[T, L]) FailWatch(err error) { setLocked(&s.mu, &s.watchErr, err) }

// RefuseWatchList makes watch-list requests fail with 400 Bad Request, as
// a server without the feature does, when refuse is true.
func (s *Source[T, L]) RefuseWatchList(refuse bool) { setLocked(&s.mu, &s.noWatchList, refuse) }

// IgnoreShardSelectors makes the source serve every object whatever the
// shard selector of a request, as a server without the
// ShardedListAndWatch feature gate does, when ignore is true. Otherwise it
// serves only the shard, and echoes the selector in list responses.
func (s *Source[T, L]) IgnoreShardSelectors(ignore bool) { setLocked(&s.mu, &s.ignoreShards, ignore) }

// setLocked sets *field to v under mu.
func setLocked[V any](mu *sync.Mutex, field *V, v V) {
	mu.Lock()
	defer mu.Unlock()
	*field = v
}

// Calls returns the requests served so far.
func (s *Source[T, L]) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Watchers returns the number of open watches.
func (s *Source[T, L]) Watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// ResourceVersion returns the current resource version.
func (s *Source[T, L]) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version()
}

// Objects returns copies of the stored objects, sorted by namespace/name.
func (s *Source[T, L]) Objects() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sorted(watchFilter{})
}

// List serves a list request for namespace ns, honouring Limit, Continue,
// ResourceVersion and the selectors. Each call returns fresh copies, as a
// decoder would.
func (s *Source[T, L]) List(ctx context.Context, ns string, opts metav1.ListOptions) (L, error) {
	var zero L
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.List++
	if s.listErr != nil {
		return zero, s.listErr
	}
	f, err := s.filter(ns, opts)
	if err != nil {
		return zero, err
	}
	var items []T
	at := s.rv // every page of a list carries the version of its first
	if opts.Continue != "" {
		snap, ok := s.snapshots[opts.Continue]
		if !ok {
			return zero, s.expired()
		}
		delete(s.snapshots, opts.Continue)
		items, at = snap.items, snap.rv
	} else {
		if rv, err := parseVersion(opts.ResourceVersion); err != nil {
			return zero, err
		} else if rv > s.rv {
			return zero, apierrors.NewTimeoutError("Too large resource version", 1)
		} else if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && rv < s.rv {
			return zero, s.expired()
		}
		items = s.sorted(f)
	}
	next := ""
	if opts.Limit > 0 && int64(len(items)) > opts.Limit {
		next = fmt.Sprintf("%d-%d", at, len(s.snapshots)+int(s.calls.List))
		s.snapshots[next] = snapshot[T]{rv: at, items: items[opts.Limit:]}
		items = items[:opts.Limit]
	}
	list := reflect.New(reflect.TypeFor[L]().Elem()).Interface().(L)
	objs := make([]runtime.Object, len(items))
	for i, it := range items {
		objs[i] = it
	}
	if err := meta.SetList(list, objs); err != nil {
		return zero, fmt.Errorf("informerstest: building %T: %w", list, err)
	}
	list.SetResourceVersion(strconv.FormatUint(at, 10))
	list.SetContinue(next)
	if sl, ok := any(list).(metav1.ShardedListInterface); ok && f.shard != nil {
		sl.SetShardInfo(&metav1.ShardInfo{Selector: f.shard.Selector()})
	}
	return list, nil
}

// Watch serves a watch request for namespace ns. From resource version ""
// it starts with the current objects as Added events; from a version it
// replays what changed after it, or fails with 410 if that was compacted.
// With SendInitialEvents it streams the current objects and then the
// bookmark that ends them, unless RefuseWatchList is set. An update that
// moves an object into a watch's selectors arrives as Added, and one that
// moves it out as Deleted, as from kube-apiserver.
func (s *Source[T, L]) Watch(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if streaming {
		s.calls.WatchList++
		if s.noWatchList {
			return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
		}
		if s.listErr != nil {
			return nil, s.listErr
		}
	} else {
		s.calls.Watch++
	}
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	f, err := s.filter(ns, opts)
	if err != nil {
		return nil, err
	}
	rv, err := parseVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if rv > s.rv {
		return nil, apierrors.NewTimeoutError("Too large resource version", 1)
	}
	w := newWatcher(ctx, opts.AllowWatchBookmarks)
	w.hold(s.stalled)
	switch {
	case streaming || opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		for _, obj := range s.sorted(f) {
			w.send(watch.Event{Type: watch.Added, Object: obj})
		}
		if streaming {
			w.send(watch.Event{Type: watch.Bookmark, Object: s.bookmark(map[string]string{metav1.InitialEventsAnnotationKey: "true"})})
		}
	case rv < s.compacted:
		return nil, s.expired()
	default:
		for _, c := range s.history {
			if c.rv <= rv {
				continue
			}
			if ev, ok := c.eventFor(f); ok {
				w.send(ev)
			}
		}
	}
	s.watchers[w] = f
	go func() {
		<-w.stopped
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}()
	return w, nil
}

func (s *Source[T, L]) version() string { return strconv.FormatUint(s.rv, 10) }

func (s *Source[T, L]) expired() *apierrors.StatusError {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version for %s (compacted at %d)", s.resource, s.compacted))
}

// bookmark returns a T carrying only the current resource version and
// annotations, as bookmark events do.
func (s *Source[T, L]) bookmark(annotations map[string]string) T {
	obj := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	obj.SetResourceVersion(s.version())
	obj.SetAnnotations(annotations)
	return obj
}

// sorted returns copies of the objects that f matches, by namespace/name.
func (s *Source[T, L]) sorted(f watchFilter) []T {
	out := make([]T, 0, len(s.objects))
	for _, obj := range s.objects {
		if f.matches(obj) {
			out = append(out, obj.DeepCopyObject().(T))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].GetNamespace(), out[j].GetNamespace(); a != b {
			return a < b
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// filter returns the filter of a request, with its shard selector unless
// the source ignores them.
func (s *Source[T, L]) filter(ns string, opts metav1.ListOptions) (watchFilter, error) {
	f, err := newFilter(ns, opts)
	if err != nil || opts.ShardSelector == "" || s.ignoreShards {
		return f, err
	}
	sh, err := shard.Parse(opts.ShardSelector)
	if err != nil {
		return f, apierrors.NewBadRequest(err.Error())
	}
	f.shard = &sh
	return f, nil
}

func newFilter(ns string, opts metav1.ListOptions) (watchFilter, error) {
	f := watchFilter{ns: ns, label: labels.Everything(), field: fields.Everything()}
	var err error
	if opts.LabelSelector != "" {
		if f.label, err = labels.Parse(opts.LabelSelector); err != nil {
			return f, apierrors.NewBadRequest(err.Error())
		}
	}
	if opts.FieldSelector != "" {
		if f.field, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return f, apierrors.NewBadRequest(err.Error())
		}
	}
	return f, nil
}

func (f watchFilter) matches(obj metav1.Object) bool {
	if f.ns != "" && obj.GetNamespace() != f.ns {
		return false
	}
	if f.label != nil && !f.label.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	if f.shard != nil && !f.shard.Contains(obj) {
		return false
	}
	if f.field != nil && !f.field.Empty() {
		set := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
		if !f.field.Matches(set) {
			return false
		}
	}
	return true
}

func parseVersion(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(rv), 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}
