package informers_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
)

// An informer of the config maps of the namespaces labelled team=a: a
// namespace that gains the label brings its objects, one that loses it
// takes them away, with LeftNamespace set.
func ExampleOptions_namespaceSelector() {
	configMaps := informerstest.NewSource[*corev1.ConfigMap, *corev1.ConfigMapList](corev1.Resource("configmaps"))
	namespaces := informerstest.NewSource[*corev1.Namespace, *corev1.NamespaceList](corev1.Resource("namespaces"))
	cluster := informerstest.NewCluster()
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("configmaps"), configMaps)
	informerstest.Serve(cluster, corev1.SchemeGroupVersion.WithResource("namespaces"), namespaces)
	label := func(name, team string) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}}}
		if _, err := namespaces.Update(ns); err != nil {
			_, _ = namespaces.Add(ns)
		}
	}
	label("shop", "a")
	label("blog", "b")
	for _, ns := range []string{"shop", "blog"} {
		_, _ = configMaps.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
	}

	factory := informers.NewFactoryWith(nil, informers.FactoryOptions{Server: cluster})
	teamA := informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}})
	events := make(chan string, 10)
	_, _ = teamA.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{
		OnAdd: func(cm *corev1.ConfigMap, initial bool) {
			events <- fmt.Sprintf("add %s/%s initial=%v", cm.Namespace, cm.Name, initial)
		},
		OnDelete: func(d informers.Deleted[*corev1.ConfigMap]) {
			events <- fmt.Sprintf("delete %s left-namespace=%v", d.Key, d.LeftNamespace)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory.Start(ctx)
	defer func() { _ = factory.Shutdown(context.Background()) }()
	if err := informers.WaitForSync(ctx, factory); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-events)

	label("blog", "a") // blog enters
	fmt.Println(<-events)
	label("shop", "b") // shop leaves
	fmt.Println(<-events)
	// Output:
	// add shop/settings initial=true
	// add blog/settings initial=false
	// delete shop/settings left-namespace=true
}
