package fleet

import (
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers"
)

// health records the failed requests of one cluster's informers, so that
// informers.WaitForSync of the fleet stops waiting for a cluster at its first
// failure rather than at the end of its context.
type health struct {
	cluster string

	mu      sync.Mutex
	last    map[string]error // by informer, as informers.ListWatchError names it
	changed chan struct{}    // closed and replaced when last changes
}

func newHealth(cluster string) *health {
	return &health{cluster: cluster, last: make(map[string]error), changed: make(chan struct{})}
}

// observe returns the OnError of the cluster's factory: it records failed
// requests, then hands every error to next or, if next is nil, logs it
// with the cluster's name.
func (h *health) observe(next func(error)) func(error) {
	return func(err error) {
		var lw *informers.ListWatchError
		if errors.As(err, &lw) {
			h.mu.Lock()
			h.last[lw.Resource] = err
			close(h.changed)
			h.changed = make(chan struct{})
			h.mu.Unlock()
		}
		switch {
		case next != nil:
			next(err)
		case lw != nil && (apierrors.IsResourceExpired(lw.Err) || apierrors.IsGone(lw.Err)):
			klog.Background().V(4).Info("Resource version expired", "cluster", h.cluster, "err", err)
		default:
			klog.Background().Error(err, "Informer error", "cluster", h.cluster)
		}
	}
}

// watch returns a channel closed at the next failed request.
func (h *health) watch() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// failing returns the last failed request of an informer among infs that
// has not synced, or nil.
func (h *health) failing(infs []informers.AnyInformer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, inf := range infs {
		if err := h.last[inf.String()]; err != nil && !inf.HasSynced() {
			return &informers.NotSyncedError{Resource: inf.String(), LastErr: err}
		}
	}
	return nil
}
