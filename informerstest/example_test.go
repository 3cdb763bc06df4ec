package informerstest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
)

// A Source plays the API server for one resource. Here the informer is
// disconnected while a pod is deleted and the history compacted, as etcd
// does: it relists, finds the pod gone, and tells its handler so.
func ExampleNewSource() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, name := range []string{"web-0", "web-1"} {
		_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}})
	}
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(&wait.Backoff{Duration: time.Millisecond}), OnError: informers.Set(func(error) {})}, // retry at once, for the example
		// the failures below are on purpose
	})
	deleted := make(chan informers.Deleted[*corev1.Pod], 1)
	_, _ = inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnDelete: func(d informers.Deleted[*corev1.Pod]) { deleted <- d },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = informers.WaitForSync(ctx, inf)

	unavailable := apierrors.NewServiceUnavailable("etcd is down")
	src.FailWatch(unavailable) // no watch succeeds...
	src.CloseWatches()         // ...once the open ones end
	_, _ = src.Delete("default", "web-0")
	src.Compact() // the delete is no longer in the history: watches from before it get 410
	src.FailWatch(nil)

	d := <-deleted
	fmt.Println(d.Key, d.FinalStateUnknown, inf.Lister().Len())
	// Output: default/web-0 true 1
}

// A Cluster serves sources to a Factory, so that a controller built on one
// is tested as it ships. A resource it does not serve answers 404, as a
// missing custom resource definition does.
func ExampleNewCluster() {
	pods := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	_, _ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	cluster := informerstest.NewCluster()
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("pods"), pods)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster, Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
	defer factory.Shutdown(ctx)
	podInformer := informers.Informer[*corev1.Pod](factory)
	configMaps := informers.Informer[*corev1.ConfigMap](factory)
	factory.Start(ctx)

	fmt.Println(informers.WaitForSync(ctx, podInformer), podInformer.Lister().Len())
	err := informers.WaitForSync(ctx, configMaps)
	var notSynced *informers.NotSyncedError
	fmt.Println(apierrors.IsNotFound(err), errors.As(err, &notSynced))
	fmt.Println(err)
	// Output:
	// <nil> 1
	// true true
	// informers: cache of configmaps.v1 (*v1.ConfigMap) not synced: last error: informers: list configmaps.v1 (*v1.ConfigMap): 404 Not Found: configmaps "" not found
}
