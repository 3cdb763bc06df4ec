package controllerruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubetyped/informers"
)

// Source returns a source that feeds a controller's work queue from inf,
// for builder.WatchesRawSource: each event of inf that passes the
// predicates goes to h, which adds requests to the queue. The controller
// waits, before it starts its workers, until the handler has been
// delivered inf's initial state:
//
//	pods := informers.Informer[*corev1.Pod](factory)
//	err := ctrl.NewControllerManagedBy(mgr).Named("pods").
//		WatchesRawSource(controllerruntime.Source(pods, &handler.TypedEnqueueRequestForObject[*corev1.Pod]{})).
//		Complete(reconciler)
//
// The informer must run (its factory started) for the source to sync.
// The handler is removed when the controller's context ends.
func Source[T informers.Object, R comparable](inf *informers.SharedInformer[T], h handler.TypedEventHandler[T, R], predicates ...predicate.TypedPredicate[T]) source.TypedSyncingSource[R] {
	return &informerSource[T, R]{inf: inf, handler: h, predicates: predicates}
}

type informerSource[T informers.Object, R comparable] struct {
	inf        *informers.SharedInformer[T]
	handler    handler.TypedEventHandler[T, R]
	predicates []predicate.TypedPredicate[T]

	mu  sync.Mutex
	reg *informers.Registration[T]
}

// Start adds the handler to the informer; it does not block.
func (s *informerSource[T, R]) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[R]) error {
	if s.handler == nil {
		return fmt.Errorf("controllerruntime: source of %s has no handler", s.inf)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reg != nil {
		return fmt.Errorf("controllerruntime: source of %s started twice", s.inf)
	}
	reg, err := s.inf.AddHandlerWith(informers.HandlerFuncs[T]{
		OnAdd: func(obj T, initial bool) {
			e := event.TypedCreateEvent[T]{Object: obj, IsInInitialList: initial}
			for _, p := range s.predicates {
				if !p.Create(e) {
					return
				}
			}
			s.handler.Create(ctx, e, q)
		},
		OnUpdate: func(oldObj, newObj T) {
			e := event.TypedUpdateEvent[T]{ObjectOld: oldObj, ObjectNew: newObj}
			for _, p := range s.predicates {
				if !p.Update(e) {
					return
				}
			}
			s.handler.Update(ctx, e, q)
		},
		OnDelete: func(d informers.Deleted[T]) {
			e := event.TypedDeleteEvent[T]{Object: d.Object, DeleteStateUnknown: d.FinalStateUnknown}
			for _, p := range s.predicates {
				if !p.Delete(e) {
					return
				}
			}
			s.handler.Delete(ctx, e, q)
		},
	}, informers.HandlerOptions{Name: fmt.Sprintf("controller-runtime source %T", s.handler)})
	if err != nil {
		return err
	}
	s.reg = reg
	context.AfterFunc(ctx, reg.Remove)
	return nil
}

// WaitForSync waits until the handler has been delivered the informer's
// initial state.
func (s *informerSource[T, R]) WaitForSync(ctx context.Context) error {
	s.mu.Lock()
	reg := s.reg
	s.mu.Unlock()
	if reg == nil {
		return errors.New("controllerruntime: WaitForSync before Start")
	}
	return informers.WaitForSync(ctx, reg)
}

func (s *informerSource[T, R]) String() string { return "informer source of " + s.inf.String() }
