package informers

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubetyped/informers/internal/reflector"
)

// fakeClient is implemented by client-go's fake clients and clientsets.
type fakeClient interface {
	Invokes(clienttesting.Action, runtime.Object) (runtime.Object, error)
}

// ListWatch lists and watches objects of type T whose list type is L. Build
// one with FromClient or NewListWatch; its namespace is its functions'.
// NewInformer adds the selectors of its Options to every request. The
// objects its functions return belong to the informer, which changes them
// in place (interning replaces their parts with equal ones): return new
// objects, as a client decoding a response does.
type ListWatch[T Object, L List] struct {
	// ListFunc lists objects.
	ListFunc func(ctx context.Context, opts metav1.ListOptions) (L, error)
	// WatchFunc watches objects; its events carry T.
	WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	// StreamFunc, if set, lists as ListFunc does, but hands each object to
	// items as the response is read, and returns the list's metadata (its
	// resource version and continue token) once the response is read to
	// its end. The informer then lists with it, page after page, and holds
	// no page whole, neither its body nor its decoded objects: its peak
	// memory at a list is what it keeps (see docs/memory.md). ListFunc is
	// still needed: the informer asks it for the server's current version.
	// The informers of a Factory and the adapter package's list-watches
	// stream their lists so.
	StreamFunc func(ctx context.Context, opts metav1.ListOptions, items ListItems[T]) (metav1.ListMeta, error)
	// Tweak, if set, edits the options of every request last.
	Tweak func(*metav1.ListOptions)
	// DisableWatchList turns off watch-list streaming, for sources that do
	// not end the initial events with the k8s.io/initial-events-end
	// bookmark (client-go's fake clientsets, for one). Servers that refuse
	// streaming are detected without it.
	DisableWatchList bool
}

// Client is what FromClient needs: the List and Watch of a typed client,
// such as clientset.CoreV1().Pods(namespace).
type Client[L List] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewListWatch returns a ListWatch from a list and a watch function.
func NewListWatch[T Object, L List](
	list func(context.Context, metav1.ListOptions) (L, error),
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error),
) *ListWatch[T, L] {
	return &ListWatch[T, L]{ListFunc: list, WatchFunc: watch}
}

// FromClient returns a ListWatch over a typed client of a real or fake
// clientset; the client's namespace ("" for all) is the one watched:
//
//	lw := informers.FromClient[*corev1.Pod](clientset.CoreV1().Pods("default"))
//
// Watch-list streaming is turned off for client-go's fake clients, which do
// not implement it.
//
// The client decodes what it lists and watches, with its own codecs: each
// object apart from every other, sharing nothing, and each list response
// read whole before it is decoded. The informers of a Factory, over the
// same clientset (NewFactory(clientset)) or a rest.Config, decode with the
// library's decoders, which share equal parts across objects, and stream
// their lists item by item (see ListWatch.StreamFunc and docs/memory.md):
// prefer them where memory matters.
func FromClient[T Object, L List](c Client[L]) *ListWatch[T, L] {
	_, fake := c.(fakeClient)
	return &ListWatch[T, L]{ListFunc: c.List, WatchFunc: c.Watch, DisableWatchList: fake}
}

// List lists with the tweak applied.
func (lw *ListWatch[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	return lw.ListFunc(ctx, lw.options(opts))
}

// stream lists with StreamFunc, the tweak applied.
func (lw *ListWatch[T, L]) stream(ctx context.Context, opts metav1.ListOptions, items ListItems[T]) (metav1.ListMeta, error) {
	return lw.StreamFunc(ctx, lw.options(opts), items)
}

// Watch watches with the tweak applied.
func (lw *ListWatch[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchFunc(ctx, lw.options(opts))
}

func (lw *ListWatch[T, L]) options(opts metav1.ListOptions) metav1.ListOptions {
	if lw.Tweak != nil {
		lw.Tweak(&opts)
	}
	return opts
}

// ListItems receives the objects of a list as a ListWatch's StreamFunc
// reads them, in the order of the list.
type ListItems[T Object] interface {
	// Put takes an object of the list, which the informer owns from then
	// on.
	Put(obj T)
	// Undecodable takes an item of the list that did not decode into T,
	// named by its metadata, which did (its Resource may be left empty):
	// the informer keeps what it holds of the object, as for an object
	// that a watch event could not decode (see UndecodableObjectError).
	Undecodable(err *UndecodableObjectError)
}

// reflectorItems are the items of a reflector's streamed list, as a
// StreamFunc takes them.
type reflectorItems[T Object] struct{ r reflector.ListItems }

func (i reflectorItems[T]) Put(obj T) { i.r.Put(obj) }
func (i reflectorItems[T]) Undecodable(err *UndecodableObjectError) {
	i.r.Undecodable(undecodableItem{err})
}

// undecodableItem is an UndecodableObjectError as the reflector takes it.
type undecodableItem struct{ e *UndecodableObjectError }

func (u undecodableItem) Error() string {
	if u.e.Err != nil {
		return u.e.Err.Error() // it names the object
	}
	return "object " + u.e.Key.String() + " does not decode"
}

func (u undecodableItem) Unwrap() error { return u.e.Err }

func (u undecodableItem) Identity() (namespace, name string, uid types.UID, resourceVersion string) {
	return u.e.Key.Namespace, u.e.Key.Name, u.e.UID, u.e.ResourceVersion
}

// streamTo returns what a stream of the library's decoders (see
// apiclient.Funcs.Stream) hands its items to for items: the reflector
// itself, for items of a reflector's list.
func streamTo[T Object](items ListItems[T]) reflector.ListItems {
	if ri, ok := items.(reflectorItems[T]); ok {
		return ri.r
	}
	return typedItems[T]{items}
}

// typedItems are items, as a stream of the library's decoders hands them
// out.
type typedItems[T Object] struct{ items ListItems[T] }

func (i typedItems[T]) Put(obj runtime.Object) {
	if t, ok := obj.(T); ok {
		i.items.Put(t)
		return
	}
	err := &UndecodableObjectError{Err: fmt.Errorf("list item is %T, want %T", obj, *new(T))}
	if m, ok := obj.(metav1.Object); ok {
		err.Key = types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
		err.UID, err.ResourceVersion = m.GetUID(), m.GetResourceVersion()
	}
	i.items.Undecodable(err)
}

func (i typedItems[T]) Undecodable(u reflector.Undecodable) {
	ns, name, uid, rv := u.Identity()
	i.items.Undecodable(&UndecodableObjectError{Key: types.NamespacedName{Namespace: ns, Name: name}, UID: uid, ResourceVersion: rv, Err: u})
}
