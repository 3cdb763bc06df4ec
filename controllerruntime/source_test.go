package controllerruntime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testutil"
)

// A typed informer of ours feeds a controller through Source, with
// predicates; the controller waits for the source to sync.
func TestSource(t *testing.T) {
	env, cs := sharedServer(t)
	ns := testutil.Namespace(t, cs)
	factory := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
	configMaps := informers.Informer[*corev1.ConfigMap](factory)
	fctx, stop := context.WithCancel(context.Background())
	factory.Start(fctx)
	t.Cleanup(func() {
		stop()
		require.NoError(t, factory.Shutdown(context.Background()))
	})

	mgr := newManager(t, env.Config(), manager.Options{})
	s := &seen{}
	notSkipped := predicate.NewTypedPredicateFuncs(func(cm *corev1.ConfigMap) bool { return cm.Labels["skip"] == "" })
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("source").
		WatchesRawSource(controllerruntime.Source(configMaps, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{}, notSkipped)).
		Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
			cm, err := configMaps.Lister().Namespace(req.Namespace).Get(req.Name)
			if err != nil {
				s.set(req.NamespacedName, "gone")
				return reconcile.Result{}, nil
			}
			s.set(req.NamespacedName, cm.Labels["v"])
			return reconcile.Result{}, nil
		})))
	startManager(t, mgr)

	ctx := testutil.Context(t, time.Minute)
	for name, lbls := range map[string]map[string]string{"a": {"v": "1"}, "skipped": {"v": "1", "skip": "yes"}} {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "a"}
	testutil.EventuallyWithin(t, time.Minute, func() bool { return s.get(key) == "1" }, "created")
	require.NoError(t, cs.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{}))
	testutil.EventuallyWithin(t, time.Minute, func() bool { return s.get(key) == "gone" }, "deleted")
	require.Empty(t, s.get(types.NamespacedName{Namespace: ns, Name: "skipped"}), "the predicate filtered it out")
}
