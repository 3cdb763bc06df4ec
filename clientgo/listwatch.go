package clientgo

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/kubetyped/informers"
)

// FromListerWatcher returns a ListWatch over a client-go ListerWatcher, such
// as a cache.ListWatch, for NewInformer:
//
//	inf, err := informers.NewInformer(clientgo.FromListerWatcher[*corev1.Pod](lw), informers.Options[*corev1.Pod]{})
//
// Watch-list streaming is turned off when lw says it does not support it
// (client-go's IsWatchListSemanticsUnSupported).
func FromListerWatcher[T informers.Object](lw cache.ListerWatcher) *informers.ListWatch[T, informers.List] {
	c := cache.ToListerWatcherWithContext(lw)
	out := informers.NewListWatch[T](
		func(ctx context.Context, opts metav1.ListOptions) (informers.List, error) {
			obj, err := c.ListWithContext(ctx, opts)
			if err != nil {
				return nil, err
			}
			l, ok := obj.(informers.List)
			if !ok {
				return nil, fmt.Errorf("clientgo: ListerWatcher listed %T, not a list", obj)
			}
			return l, nil
		},
		c.WatchWithContext)
	out.DisableWatchList = watchlist.DoesClientNotSupportWatchListSemantics(lw)
	return out
}
