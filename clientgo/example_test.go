package clientgo_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
)

// A client-go controller keeps its listers, handlers and
// WaitForCacheSync; only where its informer comes from changes.
func ExampleSharedIndexInformer() {
	clientset := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	factory := informers.NewFactory(clientset)
	podInformer := clientgo.SharedIndexInformer(informers.Informer[*corev1.Pod](factory)) // the one line

	added := make(chan string, 1)
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.Pod).Name },
	})
	podLister := corelisters.NewPodLister(podInformer.GetIndexer())

	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		_ = factory.Shutdown(context.Background())
	}()
	factory.Start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		return
	}
	pods, _ := podLister.Pods("default").List(labels.Everything())
	fmt.Println(len(pods), <-added)
	// Output: 1 web-0
}
