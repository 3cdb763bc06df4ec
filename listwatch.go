package informers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
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
func FromClient[T Object, L List](c Client[L]) *ListWatch[T, L] {
	_, fake := c.(fakeClient)
	return &ListWatch[T, L]{ListFunc: c.List, WatchFunc: c.Watch, DisableWatchList: fake}
}

// List lists with the tweak applied.
func (lw *ListWatch[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	return lw.ListFunc(ctx, lw.options(opts))
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
