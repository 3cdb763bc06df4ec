package informers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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
	if err := informers.WaitForSync(ctx, factory); err != nil {
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
	fmt.Println(a.Resource().Resource, a.LastError())
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
	_ = informers.WaitForSync(ctx, reg)
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
	_ = informers.WaitForSync(ctx, inf)

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
	_ = informers.WaitForSync(ctx, inf)

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
	_ = informers.WaitForSync(ctx, inf)
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
	_ = informers.WaitForSync(ctx, inf)
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

// A controller in a few lines: a shared informer feeds a typed workqueue,
// and a worker reads the cache once the informer and its handler have
// synced.
func Example() {
	clientset := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	factory := informers.NewFactory(clientset)
	defer factory.Shutdown(ctx)
	pods := informers.Informer[*corev1.Pod](factory)
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer queue.ShutDown()
	reg, err := pods.AddHandler(informers.Enqueue[*corev1.Pod](queue))
	if err != nil {
		fmt.Println(err) // the informer could not be made, and says why
		return
	}
	factory.Start(ctx)
	if err := informers.WaitForSync(ctx, pods, reg); err != nil {
		fmt.Println(err) // says why: 403 Forbidden, a missing CRD...
		return
	}

	key, _ := queue.Get() // a types.NamespacedName
	defer queue.Done(key)
	p, err := pods.Lister().Namespace(key.Namespace).Get(key.Name) // a *corev1.Pod
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reconcile", key, p.Name)
	// Output: reconcile default/web-0 web-0
}

// WaitForSync says why a cache did not sync, without waiting for a
// timeout: here the server refuses to list secrets.
func ExampleWaitForSync_forbidden() {
	clientset := fake.NewClientset()
	clientset.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New("RBAC: access denied"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	factory := informers.NewFactory(clientset)
	defer factory.Shutdown(ctx)
	informers.Informer[*corev1.Secret](factory)
	factory.Start(ctx)
	err := informers.WaitForSync(ctx, factory)
	fmt.Println(apierrors.IsForbidden(err), ctx.Err())
	fmt.Println(err)
	// Output:
	// true <nil>
	// informers: cache of secrets.v1 (*v1.Secret) not synced: last error: informers: list secrets.v1 (*v1.Secret): 403 Forbidden: secrets is forbidden: RBAC: access denied
}

// InformerWith gives an informer of its own to each namespace and
// selectors, which it lists, watches and caches alone; equivalent
// selectors, however spelled, give the same informer.
func ExampleInformerWith() {
	pod := func(ns, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app, "tier": "front"}}}
	}
	clientset := fake.NewClientset(
		pod("shop", "web-0", "web"), pod("shop", "db-0", "db"), pod("blog", "web-0", "web"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	factory := informers.NewFactory(clientset)
	defer factory.Shutdown(ctx)
	shopWeb := informers.InformerWith(factory, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Namespace: informers.Set("shop")}, LabelSelector: "app=web,tier=front"})
	same := informers.InformerWith(factory, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Namespace: informers.Set("shop")}, LabelSelector: "tier=front, app=web"})
	all := informers.Informer[*corev1.Pod](factory)
	factory.Start(ctx)
	if err := informers.WaitForSync(ctx, factory); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(shopWeb == same, shopWeb == all)
	fmt.Println(shopWeb.Name())
	fmt.Println(shopWeb.Lister().Len(), all.Lister().Len())
	// Output:
	// true false
	// pods.v1 namespace=shop labels=app=web,tier=front
	// 1 3
}

// NewInformer runs one informer, without a factory, over a ListWatch: here
// an in-memory source's, narrowed by a label selector. Run blocks until its
// context ends.
func ExampleNewInformer() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, app := range []string{"web", "db"} {
		_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app + "-0", Labels: map[string]string{"app": app}}})
	}
	inf, err := informers.NewInformer(src.ListWatch("default"), informers.Options[*corev1.Pod]{LabelSelector: "app=web"})
	if err != nil {
		fmt.Println(err) // options the informer cannot honour
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := informers.WaitForSync(ctx, inf); err == nil {
		for p := range inf.Lister().All() {
			fmt.Println(p.Namespace, p.Name)
		}
	}

	cancel() // stops the informer: Run returns once its goroutines have ended
	fmt.Println(<-done)
	// Output:
	// default web-0
	// <nil>
}

// Enqueue adds the key of every object added, updated or deleted to a
// workqueue; the worker reads the object back from the cache, and a key
// whose object is gone means a delete.
func ExampleEnqueue() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{})
	queue := workqueue.NewTyped[types.NamespacedName]()
	defer queue.ShutDown()
	reg, _ := inf.AddHandler(informers.Enqueue[*corev1.Pod](queue))
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = informers.WaitForSync(ctx, inf, reg)

	reconcile := func() {
		key, _ := queue.Get()
		defer queue.Done(key)
		if _, err := inf.Lister().Namespace(key.Namespace).Get(key.Name); apierrors.IsNotFound(err) {
			fmt.Println(key, "is gone")
			return
		}
		fmt.Println(key, "exists")
	}
	reconcile()
	_, _ = src.Delete("default", "web-0")
	reconcile()
	// Output:
	// default/web-0 exists
	// default/web-0 is gone
}

// Index returns an index by name: the built-in one by namespace, and those
// given in Options.Indexers or added with AddIndex.
func ExampleSharedInformer_Index() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	for _, p := range []struct{ ns, name, node string }{{"shop", "web-0", "node-a"}, {"shop", "web-1", "node-b"}, {"blog", "web-0", "node-a"}} {
		_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name}, Spec: corev1.PodSpec{NodeName: p.node}})
	}
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{
			"node": func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} },
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = informers.WaitForSync(ctx, inf)

	byNamespace, _ := inf.Index(informers.NamespaceIndex)
	byNode, _ := inf.Index("node")
	_, ok := inf.Index("zone")
	values := byNode.Values()
	slices.Sort(values)
	fmt.Println(len(byNamespace.List("shop")), values, ok)
	for p := range byNode.All("node-a") { // iterates without a result slice
		fmt.Println(p.Namespace, p.Name)
	}
	// Unordered output:
	// 2 [node-a node-b] false
	// shop web-0
	// blog web-0
}

// ReadyCheck is a readiness probe over informers and handlers: it fails,
// saying which has not synced and why, until they all have.
func ExampleReadyCheck() {
	src := informerstest.NewSource[*corev1.Pod, *corev1.PodList](corev1.Resource("pods"))
	src.RefuseWatchList(true) // so that every attempt is a list
	src.FailList(apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC: access denied")))
	inf, _ := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(&wait.Backoff{Duration: 10 * time.Millisecond})}, // retry soon, for the example
	})
	reg, _ := inf.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{}, informers.HandlerOptions{Name: "podcount"})
	ready := informers.ReadyCheck(inf, reg) // for /readyz, or mgr.AddReadyzCheck("informers", ready)

	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-inf.Stopped() }()
	go inf.Run(ctx)
	_ = informers.WaitForSync(ctx, inf) // returns at once: a 403 needs a fix, not a retry
	fmt.Println(ready(nil))

	src.FailList(nil) // the role is granted; the informer's next retry syncs
	<-inf.Synced()
	_ = informers.WaitForSync(ctx, reg)
	fmt.Println(ready(nil))
	// Output:
	// informers: cache of pods.v1 (*v1.Pod) not synced: last error: informers: list pods.v1 (*v1.Pod): 403 Forbidden: pods is forbidden: RBAC: access denied
	// informers: handler podcount of pods.v1 (*v1.Pod) has not been delivered the initial state
	// <nil>
}

// Release stops one informer of a factory and frees its cache; a later
// request for the same informer makes a fresh one.
func ExampleFactory_Release() {
	clientset := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory := informers.NewFactory(clientset)
	defer factory.Shutdown(ctx)
	configMaps := informers.Informer[*corev1.ConfigMap](factory)
	factory.Start(ctx)
	_ = informers.WaitForSync(ctx, configMaps)
	fmt.Println(configMaps.Lister().Len())

	if err := factory.Release(ctx, configMaps); err != nil {
		fmt.Println(err) // names the handlers still in a call
		return
	}
	<-configMaps.Stopped()
	fmt.Println(configMaps.Lister().Len())

	again := informers.Informer[*corev1.ConfigMap](factory) // started at once: the factory runs
	_ = informers.WaitForSync(ctx, again)
	fmt.Println(again == configMaps, again.Lister().Len())
	// Output:
	// 1
	// 0
	// false 1
}
