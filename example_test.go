package informers_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/informerstest"
)

func ExampleNewFactory() {
	clientset := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	factory := informers.NewFactory(clientset)
	pods := informers.Informer[*corev1.Pod](factory)
	factory.Start(ctx)
	defer factory.Shutdown(ctx)
	if err := factory.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	p, err := pods.Lister().Namespace("default").Get("web-0")
	fmt.Println(p.Name, err)
	// Output: web-0 <nil>
}

func ExampleInformer() {
	factory := informers.NewFactory(fake.NewClientset())

	// The same type gives the same shared informer.
	a := informers.Informer[*corev1.Pod](factory)
	b := informers.Informer[*corev1.Pod](factory)
	// Selectors give another one.
	web := informers.InformerWith(factory, informers.Options[*corev1.Pod]{LabelSelector: "app=web"})

	fmt.Println(a == b, a == web)
	fmt.Println(a.Resource().Resource, a.Err())
	// Output:
	// true false
	// pods <nil>
}

func ExampleSharedInformer_AddHandler() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})

	events := make(chan string, 3)
	reg, _ := inf.AddHandler(informers.HandlerFuncs[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod, initial bool) { events <- fmt.Sprintf("add %s initial=%v", p.Name, initial) },
		OnDelete: func(d informers.Deleted[*corev1.Pod]) {
			// No tombstone to unwrap: d.Object is a *corev1.Pod.
			events <- fmt.Sprintf("delete %s unknown=%v", d.Object.Name, d.FinalStateUnknown)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = reg.WaitForSync(ctx)
	fmt.Println(<-events)

	_, _ = src.Delete("default", "web-0")
	fmt.Println(<-events)
	// Output:
	// add web-0 initial=true
	// delete web-0 unknown=false
}

func ExampleLister() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, name := range []string{"web-0", "web-1", "db-0"} {
		app := name[:len(name)-2]
		_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": app}}})
	}
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = inf.WaitForSync(ctx)

	lister := inf.Lister().Namespace("default")
	web := lister.List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	var got []string
	for _, p := range web { // p is a *corev1.Pod: no type assertion
		got = append(got, p.Name)
	}
	slices.Sort(got)
	fmt.Println(got)
	n := 0
	for range lister.All() { // iterates without allocating a result slice
		n++
	}
	fmt.Println(n)
	// Output:
	// [web-0 web-1]
	// 3
}

func ExampleSharedInformer_AddIndex() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for i, node := range []string{"node-a", "node-b", "node-a"} {
		_, _ = src.Add(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i)},
			Spec:       corev1.PodSpec{NodeName: node},
		})
	}
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	byNode, _ := inf.AddIndex("node", func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} })
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = inf.WaitForSync(ctx)

	fmt.Println(len(byNode.List("node-a")), len(byNode.List("node-b")), len(byNode.List("node-c")))
	// Output: 2 1 0
}

func ExampleFromClient() {
	clientset := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}},
	)
	// The typed client's namespace is the one watched; T names the item type.
	lw := informers.FromClient[*corev1.ConfigMap](clientset.CoreV1().ConfigMaps("kube-system"))
	inf, _ := informers.NewInformer(lw, informers.Options[*corev1.ConfigMap]{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = inf.WaitForSync(ctx)
	cm, err := inf.Lister().Namespace("kube-system").Get("coredns")
	fmt.Println(cm.Name, err, inf.Lister().Len())
	// Output: coredns <nil> 1
}

func ExampleNewListWatch() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})

	// Any pair of functions will do; here, the in-memory source's.
	lw := informers.NewListWatch[*corev1.Pod](
		func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			return src.List(ctx, "default", opts)
		},
		src.ListWatch("default").WatchFunc,
	)
	inf, _ := informers.NewInformer(lw, informers.Options[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = inf.WaitForSync(ctx)
	fmt.Println(inf.Lister().Len(), src.Calls().WatchList)
	// Output: 1 1
}

// A Deployment controller's wiring: its queue is fed by Deployments
// themselves and by the controller owners of ReplicaSets, and it finds a
// Deployment's ReplicaSets through an owner index. No key is built by hand.
func ExampleEnqueueOwner() {
	clientset := fake.NewClientset(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-5d8f", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: ptr.To(true)},
		}}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory := informers.NewFactory(clientset)
	defer factory.Shutdown(ctx)
	deploymentKind := appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()

	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer queue.ShutDown()
	deployments := informers.Informer[*appsv1.Deployment](factory)
	replicaSets := informers.InformerWith(factory, informers.Options[*appsv1.ReplicaSet]{
		Indexers: map[string]informers.IndexFunc[*appsv1.ReplicaSet]{
			"controller": informers.IndexByController[*appsv1.ReplicaSet](deploymentKind),
		},
	})
	fromDeployments, _ := deployments.AddHandler(informers.Enqueue[*appsv1.Deployment](queue))
	fromReplicaSets, _ := replicaSets.AddHandler(informers.EnqueueOwner[*appsv1.ReplicaSet](queue, deploymentKind))
	factory.Start(ctx)
	if err := informers.WaitForSync(ctx, fromDeployments, fromReplicaSets); err != nil {
		fmt.Println(err)
		return
	}

	key, _ := queue.Get() // a reconcile: one key, however many events
	defer queue.Done(key)
	owned, _ := replicaSets.Lister().ByIndex("controller", key.String())
	fmt.Println(key, len(owned), queue.Len())
	// Output: default/web 1 0
}
