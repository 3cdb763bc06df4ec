package informers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/dispatch"
)

// Handler receives an informer's events for objects of type T.
//
// Each handler has its own goroutine and queue: a slow handler delays only
// itself. Events for a handler arrive in order, one at a time. The objects
// are shared with the cache and with other handlers: read them, never
// modify them (DeepCopy first).
type Handler[T Object] interface {
	// HandleAdd is called for an object new to the cache. isInInitialList
	// is true for objects of the first list and for the current contents
	// replayed to a handler added late.
	HandleAdd(obj T, isInInitialList bool)
	// HandleUpdate is called when an object changed, and with oldObj ==
	// newObj on resync.
	HandleUpdate(oldObj, newObj T)
	// HandleDelete is called when an object is gone.
	HandleDelete(d Deleted[T])
}

// Deleted describes a deleted object. There is no tombstone to type-switch
// on: Object is always the last state the informer knew.
type Deleted[T Object] struct {
	// Key is the object's namespace and name.
	Key types.NamespacedName
	// Object is the object's final state as sent by the server, or, when
	// FinalStateUnknown is set, the last state the cache held.
	Object T
	// FinalStateUnknown is set when the deletion was found by a relist
	// rather than seen on the watch: the object may have changed between
	// Object and its deletion.
	FinalStateUnknown bool
	// LeftShard is set when the object was not deleted on the server but
	// left the informer's shard (see Options.Shard): another replica owns
	// it now.
	LeftShard bool
	// LeftNamespace is set when the object was not deleted on the server
	// but its namespace left the informer's namespace selection (see
	// Tuning.NamespaceSelector): its labels no longer match.
	LeftNamespace bool
}

// HandlerFuncs adapts functions to a Handler. A nil field ignores its
// events. Its fields say when each function is called (OnAdd: on an add),
// the Handler's methods what a type implementing it does (HandleAdd: it
// handles an add); the names differ because a struct cannot have a field
// and a method of the same name, and both read as a call site reads:
//
//	pods.AddHandler(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(p *corev1.Pod, initial bool) { ... }})
//	func (c *controller) HandleAdd(p *corev1.Pod, initial bool) { ... }
type HandlerFuncs[T Object] struct {
	OnAdd    func(obj T, isInInitialList bool)
	OnUpdate func(oldObj, newObj T)
	OnDelete func(d Deleted[T])
}

// HandleAdd calls OnAdd if it is set.
func (f HandlerFuncs[T]) HandleAdd(obj T, isInInitialList bool) {
	if f.OnAdd != nil {
		f.OnAdd(obj, isInInitialList)
	}
}

// HandleUpdate calls OnUpdate if it is set.
func (f HandlerFuncs[T]) HandleUpdate(oldObj, newObj T) {
	if f.OnUpdate != nil {
		f.OnUpdate(oldObj, newObj)
	}
}

// HandleDelete calls OnDelete if it is set.
func (f HandlerFuncs[T]) HandleDelete(d Deleted[T]) {
	if f.OnDelete != nil {
		f.OnDelete(d)
	}
}

// HandlerOptions configures one handler registration, given to
// AddHandlerWith. The zero value is AddHandler's.
type HandlerOptions struct {
	// Name names the handler in errors and logs. "" means its Go type and
	// its number among the informer's handlers.
	Name string
	// QueueLimit bounds how many events may wait for the handler. When
	// one more arrives (with MergeByKey, one that does not merge), the
	// handler is removed rather than fed a partial stream: its queue is
	// dropped, Done is closed once a call in progress returns, Err returns
	// a *HandlerOverflowError, which the informer's OnError also receives,
	// and readiness checks on the registration fail. 0 means no limit.
	QueueLimit int
	// ResyncPeriod replays the whole cache to the handler as updates every
	// period. Unset, the handler inherits the informer's
	// (Tuning.ResyncPeriod); Set(time.Duration(0)) turns resync off for
	// the handler.
	ResyncPeriod Setting[time.Duration]
	// MergeByKey makes the handler's queue merge the events that wait
	// there for one object: an object changed twice while the handler was
	// busy is delivered once, with its latest state; an update then a
	// delete is delivered as the delete; an add then a delete is not
	// delivered at all. A deletion and a recreation under the same name
	// stay a delete and an add. So the handler ends in the cache's state,
	// as without the option, and its backlog is bounded by the number of
	// objects (two events each at most), not by the number of changes: a
	// stuck handler cannot make memory run away. Events for different
	// objects may be delivered in another order than they happened; those
	// for one object stay in order. Resyncs merge the same way. It suits
	// handlers that act on the latest state, such as those that enqueue
	// keys.
	MergeByKey bool
}

// Registration is a handler added to an informer.
type Registration[T Object] struct {
	name     string
	limit    int // HandlerOptions.QueueLimit
	desc     string
	inf      handlerHost[T]
	listener *dispatch.Listener[T]
	metrics  HandlerMetrics
	forget   sync.Once
}

var _ AnyRegistration = (*Registration[Object])(nil)

// handlerHost is what a Registration needs of its informer, a
// *SharedInformer[T].
type handlerHost[T Object] interface {
	waitForSync(ctx context.Context) error
	WaitForVersion(ctx context.Context, rv string) error
	removeHandler(reg *Registration[T])
}

// Err returns a *HandlerOverflowError once the handler was removed for
// exceeding its queue limit, and nil otherwise.
func (r *Registration[T]) Err() error {
	if r.listener.Overflowed() {
		return &HandlerOverflowError{Resource: r.desc, Handler: r.name, Limit: r.limit}
	}
	return nil
}

// forgetMetrics tells the handler's metrics, once, that it is gone.
func (r *Registration[T]) forgetMetrics() {
	if r.metrics != nil {
		r.forget.Do(r.metrics.Removed)
	}
}

// Name returns the handler's name.
func (r *Registration[T]) Name() string { return r.name }

// HasSynced reports whether the handler has been delivered the informer's
// initial state: every object of the first list, or, for a handler added
// after that, the cache's contents when it was added.
func (r *Registration[T]) HasSynced() bool { return r.listener.HasSynced() }

// Synced is closed once HasSynced turns true. It makes the registration a
// Syncer: WaitForSync(ctx, r) waits for it and says why it has not synced.
func (r *Registration[T]) Synced() <-chan struct{} { return r.listener.Synced() }

// waitForSync waits until HasSynced or ctx ends. Once the handler is
// removed or has overflowed it returns at once, ErrStopped or a
// *HandlerOverflowError, even while a call to it is still in progress.
func (r *Registration[T]) waitForSync(ctx context.Context) error {
	if err := r.inf.waitForSync(ctx); err != nil {
		return err
	}
	select {
	case <-r.listener.Synced():
		return nil
	case <-r.listener.Stopping(): // a call in progress cannot sync it
		if r.listener.HasSynced() {
			return nil
		}
		if err := r.Err(); err != nil {
			return err
		}
		return errorf("%s stopped before it was delivered the initial state: %w", r, ErrStopped)
	case <-ctx.Done():
		return errorf("%s handler %s has not been delivered the initial state: %w", r.desc, r.name, ctx.Err())
	}
}

// Backlog returns the number of events queued for the handler, including
// the one being delivered. A queued event costs 24 bytes plus the object
// versions it refers to: the cache holds only each object's latest, so a
// queued update keeps its own version alive. The queue grows without bound
// while the handler falls behind and shrinks once it has caught up.
func (r *Registration[T]) Backlog() int { return r.listener.Backlog() }

// Remove stops delivery to the handler: its queued events are dropped and
// no call of the handler begins after Remove returns. A call that began
// before runs to its end; Done is closed once it has.
func (r *Registration[T]) Remove() {
	r.listener.Stop()
	r.inf.removeHandler(r)
	r.forgetMetrics()
}

// Done is closed once the handler has been removed, or the informer has
// stopped, and no call to it is in progress.
func (r *Registration[T]) Done() <-chan struct{} { return r.listener.Done() }

// String names the handler and its informer.
func (r *Registration[T]) String() string {
	return fmt.Sprintf("handler %s of %s", r.name, r.desc)
}
