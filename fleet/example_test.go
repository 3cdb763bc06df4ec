package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/informerstest"
)

// exampleCluster returns an in-memory cluster serving the named pods of
// namespace shop.
func exampleCluster(names ...string) fleet.Cluster {
	pods := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, name := range names {
		pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}})
	}
	server := informerstest.NewCluster()
	informerstest.Serve(server, corev1.SchemeGroupVersion.WithResource("pods"), pods)
	return fleet.Cluster{Server: server}
}

// Pods of two clusters read as one cache, keyed by cluster, namespace and
// name; a third cluster that does not serve pods is named by WaitForSync
// without holding up the others.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fl := fleet.New(fleet.Options{Factory: informers.FactoryOptions{Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}}})
	defer fl.Shutdown(context.Background())

	pods := fleet.Informer[*corev1.Pod](fl)
	fl.Attach(ctx, "east", exampleCluster("web-0", "web-1"))
	fl.Attach(ctx, "west", exampleCluster("web-0"))
	fl.Attach(ctx, "north", fleet.Cluster{Server: informerstest.NewCluster()})
	var failed *fleet.SyncError
	if err := informers.WaitForSync(ctx, fl); errors.As(err, &failed) {
		for cluster, cause := range failed.Clusters {
			fmt.Println("not synced:", cluster, "not found:", apierrors.IsNotFound(cause))
		}
	}

	for cluster, p := range pods.Lister().Namespace("shop") {
		fmt.Println(fleet.KeyOf(cluster, p))
	}
	p, err := pods.Lister().Get(fleet.Key{Cluster: "west", Namespace: "shop", Name: "web-0"})
	fmt.Println(p.Name, err)
	// Output:
	// not synced: north not found: true
	// east|shop/web-0
	// east|shop/web-1
	// west|shop/web-0
	// web-0 <nil>
}
