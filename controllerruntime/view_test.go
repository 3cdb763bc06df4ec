package controllerruntime_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testutil"
)

// podView is what a scheduler-like controller reads of a pod.
type podView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase corev1.PodPhase `json:"phase"`
	} `json:"status"`
}

func (p *podView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(p) }

// podViewList is a list of pod views, for List.
type podViewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []podView `json:"items"`
}

func (l *podViewList) DeepCopyObject() runtime.Object { return informers.DeepCopyView(l) }

// viewsGV is the group version of the tests' views in the scheme, which
// no server serves.
var viewsGV = schema.GroupVersion{Group: "views.example.com", Version: "v1"}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// viewScheme returns client-go's types and the tests' pod views.
func viewScheme() *runtime.Scheme {
	sch := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(sch)
	sch.AddKnownTypeWithName(viewsGV.WithKind("PodView"), &podView{})
	sch.AddKnownTypeWithName(viewsGV.WithKind("PodViewList"), &podViewList{})
	return sch
}

// projection is what a podView holds of a pod, for comparisons.
type projection struct {
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	Labels          map[string]string
	NodeName        string
	Phase           corev1.PodPhase
}

func projectPod(p *corev1.Pod) projection {
	return projection{p.Namespace, p.Name, p.UID, p.ResourceVersion, p.Labels, p.Spec.NodeName, p.Status.Phase}
}

func projectView(v *podView) projection {
	return projection{v.Namespace, v.Name, v.UID, v.ResourceVersion, v.Labels, v.Spec.NodeName, v.Status.Phase}
}

// A manager's cache serves a view of pods, registered in its scheme and
// mapped to the pods resource: Get and List through the manager's client
// return views equal to the server's pods (of ByObject's selection), a
// controller For the view reconciles their changes, and the cache follows
// updates of labels and status and deletes; the full type is served
// beside it.
func TestCacheViews(t *testing.T) {
	env, cs := sharedServer(t)
	ns := testutil.Namespace(t, cs)
	ctx := testutil.Context(t, 2*time.Minute)
	const pods = 6
	for i := range pods {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": "web", "v": "1"},
				Annotations: map[string]string{"note": "not in the view"}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%2), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"app": "other"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	running, err := cs.CoreV1().Pods(ns).Get(ctx, "p0", metav1.GetOptions{})
	require.NoError(t, err)
	running.Status.Phase = corev1.PodRunning
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, running, metav1.UpdateOptions{})
	require.NoError(t, err)

	sch := viewScheme()
	mgr := newManager(t, env.Config(), manager.Options{
		Scheme: sch,
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			ByObject:          map[client.Object]cache.ByObject{&podView{}: {Label: labels.SelectorFromSet(labels.Set{"app": "web"})}},
		},
		NewCache: controllerruntime.NewCacheWithOptions(controllerruntime.Options{
			Views:    map[client.Object]schema.GroupVersionResource{&podView{}: podsGVR},
			Decoding: controllerruntime.Decoding{SkipFields: map[client.Object][]string{&podView{}: {"metadata.annotations"}}},
		}),
	})
	reconciled := &seen{}
	require.NoError(t, builder.ControllerManagedBy(mgr).Named("podviews").For(&podView{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var v podView
			switch err := mgr.GetClient().Get(ctx, req.NamespacedName, &v); {
			case apierrors.IsNotFound(err):
				reconciled.set(req.NamespacedName, "gone")
			case err != nil:
				return reconcile.Result{}, err
			default:
				reconciled.set(req.NamespacedName, fmt.Sprintf("%s %s %s", v.Labels["v"], v.Spec.NodeName, v.Status.Phase))
			}
			return reconcile.Result{}, nil
		})))
	require.NoError(t, mgr.GetFieldIndexer().IndexField(ctx, &podView{}, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*podView).Spec.NodeName}
	}))
	startManager(t, mgr)
	c := mgr.GetClient()

	// serverPods returns the server's pods of the view's selection.
	serverPods := func() map[string]projection {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		require.NoError(t, err)
		out := map[string]projection{}
		for i := range l.Items {
			out[l.Items[i].Name] = projectPod(&l.Items[i])
		}
		return out
	}
	// cachedViews returns the views List returns, and checks that Get
	// returns each alike.
	cachedViews := func() map[string]projection {
		var l podViewList
		require.NoError(t, c.List(ctx, &l, client.InNamespace(ns)))
		out := map[string]projection{}
		for i := range l.Items {
			v := &l.Items[i]
			assert.Nil(t, v.Annotations, "skipped")
			var got podView
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(v), &got))
			assert.Equal(t, projectView(v), projectView(&got))
			out[v.Name] = projectView(v)
		}
		return out
	}
	follows := func(what string) {
		t.Helper()
		var want, got map[string]projection
		ok := assert.Eventually(t, func() bool {
			want, got = serverPods(), cachedViews()
			return assert.ObjectsAreEqual(want, got)
		}, time.Minute, 20*time.Millisecond)
		require.True(t, ok, "%s: the views are not the server's pods:\nserver %v\ncached %v", what, want, got)
	}
	follows("synced")
	assert.Len(t, cachedViews(), pods, "ByObject's label selector applies to the view")
	assert.Equal(t, corev1.PodRunning, cachedViews()["p0"].Phase)
	p0 := types.NamespacedName{Namespace: ns, Name: "p0"}
	testutil.EventuallyWithin(t, time.Minute, func() bool { return reconciled.get(p0) == "1 node-0 Running" }, "the controller reconciles the view")
	var onNode0 podViewList
	require.NoError(t, c.List(ctx, &onNode0, client.InNamespace(ns), client.MatchingFields{"spec.nodeName": "node-0"}))
	var onNode0Names []string
	for _, v := range onNode0.Items {
		onNode0Names = append(onNode0Names, v.Name)
	}
	slices.Sort(onNode0Names)
	assert.Equal(t, []string{"p0", "p2", "p4"}, onNode0Names, "an index of the view")
	err = c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "other"}, &podView{})
	assert.True(t, apierrors.IsNotFound(err), "a pod the selector leaves out: %v", err)
	var full corev1.PodList
	require.NoError(t, c.List(ctx, &full, client.InNamespace(ns)))
	require.Len(t, full.Items, pods+1, "the full type, beside the view, with no selector of its own")
	assert.Equal(t, "not in the view", full.Items[slices.IndexFunc(full.Items, func(p corev1.Pod) bool { return p.Name == "p0" })].Annotations["note"])

	// An update of labels, then of status.
	p1 := types.NamespacedName{Namespace: ns, Name: "p1"}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, p1.Name, metav1.GetOptions{})
	require.NoError(t, err)
	pod.Labels["v"] = "2"
	pod, err = cs.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodSucceeded
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	follows("updated")
	assert.Equal(t, corev1.PodSucceeded, cachedViews()["p1"].Phase)
	testutil.EventuallyWithin(t, time.Minute, func() bool { return reconciled.get(p1) == "2 node-1 Succeeded" }, "the controller reconciles the update")

	// A delete.
	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "p2", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	follows("deleted")
	p2 := types.NamespacedName{Namespace: ns, Name: "p2"}
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, p2, &podView{})))
	testutil.EventuallyWithin(t, time.Minute, func() bool { return reconciled.get(p2) == "gone" }, "the controller reconciles the delete")
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range cachedViews() {
			if !yield(name) {
				return
			}
		}
	})
	assert.Equal(t, []string{"p0", "p1", "p3", "p4", "p5"}, names)

	// The client writes no view: its REST mapper knows no resource of
	// the view's kind.
	v := &podView{}
	require.NoError(t, c.Get(ctx, p0, v))
	err = c.Update(ctx, v)
	require.Error(t, err)
	assert.True(t, meta.IsNoMatchError(err), "%v", err)
}

// A cache refuses views it cannot serve, when it is made or when the view
// is first asked for: a view not in the scheme, a type that is no view,
// a view of no resource, one with the decoder off, one of a field its
// resource's type has not, and a view asked for as unstructured.
func TestCacheViewErrors(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"} // never reached
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	sch := viewScheme()
	sch.AddKnownTypeWithName(viewsGV.WithKind("NotAView"), &notAView{})
	sch.AddKnownTypeWithName(viewsGV.WithKind("BadPodView"), &badPodView{})
	newCache := func(o controllerruntime.Options) (*controllerruntime.Cache, error) {
		return controllerruntime.NewWithOptions(cfg, cache.Options{Scheme: sch, Mapper: mapper}, o)
	}
	for _, tc := range []struct {
		name  string
		views map[client.Object]schema.GroupVersionResource
		o     controllerruntime.Options
		err   string
	}{
		{"not in the scheme", map[client.Object]schema.GroupVersionResource{&unregisteredView{}: podsGVR}, controllerruntime.Options{}, "register the view"},
		{"no view", map[client.Object]schema.GroupVersionResource{&notAView{}: podsGVR}, controllerruntime.Options{}, "is not a view"},
		{"no resource", map[client.Object]schema.GroupVersionResource{&podView{}: {Version: "v1"}}, controllerruntime.Options{}, "views no resource"},
		{"decoder off", map[client.Object]schema.GroupVersionResource{&podView{}: podsGVR}, controllerruntime.Options{Decoding: controllerruntime.Decoding{Disable: true}}, "Decoding.Disable cannot be set with Views"},
		{"a field to skip the view has not", map[client.Object]schema.GroupVersionResource{&podView{}: podsGVR},
			controllerruntime.Options{Decoding: controllerruntime.Decoding{SkipFields: map[client.Object][]string{&podView{}: {"spec.containers"}}}}, `no field "containers"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Views = tc.views
			_, err := newCache(tc.o)
			require.ErrorContains(t, err, tc.err)
		})
	}

	c, err := newCache(controllerruntime.Options{Views: map[client.Object]schema.GroupVersionResource{&podView{}: podsGVR, &badPodView{}: podsGVR}})
	require.NoError(t, err)
	ctx := testutil.Context(t, time.Minute)
	_, err = c.GetInformer(ctx, &badPodView{})
	require.ErrorContains(t, err, `has no field "node"`)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(viewsGV.WithKind("PodView"))
	_, err = c.GetInformer(ctx, u)
	require.ErrorContains(t, err, "is a view, cached as its Go type only")
	inf, err := c.GetInformer(ctx, &podView{})
	require.NoError(t, err, "made, not started")
	assert.False(t, inf.HasSynced())
}

// badPodView names a field pods have not.
type badPodView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Node string `json:"node"`
	} `json:"spec"`
}

func (b *badPodView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(b) }

// notAView has its metadata under "meta", not "metadata".
type notAView struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"meta"`
}

func (n *notAView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(n) }

// unregisteredView is a view no scheme knows.
type unregisteredView struct {
	informers.ViewMeta `json:"metadata"`
}

func (u *unregisteredView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(u) }

// applicationView is what a controller reads of an Application, a custom
// resource: where it deploys.
type applicationView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Destination struct {
			Server    string `json:"server"`
			Namespace string `json:"namespace"`
		} `json:"destination"`
	} `json:"spec"`
}

func (a *applicationView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(a) }

// applicationViewList is a list of application views, for List.
type applicationViewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []applicationView `json:"items"`
}

func (l *applicationViewList) DeepCopyObject() runtime.Object { return informers.DeepCopyView(l) }

// A view of a custom resource whose Go type the scheme does not know,
// decoded from JSON, with its annotations skipped: the cache syncs (the
// bookmark that ends the watch-list keeps its annotation) and follows an
// update and a delete.
func TestCacheViewOfCustomResource(t *testing.T) {
	env, cs := sharedServer(t)
	cfg := env.Config()
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := testutil.Context(t, 2*time.Minute)
	require.NoError(t, bf.CreateApplicationCRD(ctx, dyn))
	ns := testutil.Namespace(t, cs)
	apps := dyn.Resource(bf.ApplicationResource).Namespace(ns)
	var names []string
	for i := range 4 {
		a := bf.NewApplication(i, 1)
		a.Namespace, a.ResourceVersion, a.UID, a.CreationTimestamp, a.Finalizers = ns, "", "", metav1.Time{}, nil
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		require.NoError(t, err)
		_, err = apps.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
		require.NoError(t, err)
		names = append(names, a.Name)
	}

	sch := viewScheme()
	sch.AddKnownTypeWithName(viewsGV.WithKind("ApplicationView"), &applicationView{})
	sch.AddKnownTypeWithName(viewsGV.WithKind("ApplicationViewList"), &applicationViewList{})
	c, err := controllerruntime.NewWithOptions(cfg, cache.Options{Scheme: sch, DefaultNamespaces: map[string]cache.Config{ns: {}}}, controllerruntime.Options{
		Views:    map[client.Object]schema.GroupVersionResource{&applicationView{}: bf.ApplicationResource},
		Decoding: controllerruntime.Decoding{SkipFields: map[client.Object][]string{&applicationView{}: {"metadata.annotations"}}},
	})
	require.NoError(t, err)
	startCache(t, c)
	require.True(t, c.WaitForCacheSync(ctx))

	type destination struct{ uid, rv, server, namespace string }
	follows := func(what string) {
		t.Helper()
		var want, got map[string]destination
		ok := assert.Eventually(t, func() bool {
			l, err := apps.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			want = map[string]destination{}
			for _, u := range l.Items {
				server, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "server")
				namespace, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "namespace")
				want[u.GetName()] = destination{string(u.GetUID()), u.GetResourceVersion(), server, namespace}
			}
			var views applicationViewList
			require.NoError(t, c.List(ctx, &views))
			got = map[string]destination{}
			for _, v := range views.Items {
				assert.Nil(t, v.Annotations, "skipped")
				got[v.Name] = destination{string(v.UID), v.ResourceVersion, v.Spec.Destination.Server, v.Spec.Destination.Namespace}
			}
			return assert.ObjectsAreEqual(want, got)
		}, time.Minute, 20*time.Millisecond)
		require.True(t, ok, "%s: the views are not the server's applications:\nserver %v\ncached %v", what, want, got)
	}
	follows("synced")

	_, err = apps.Patch(ctx, names[1], types.MergePatchType, []byte(`{"spec":{"destination":{"server":"https://moved.example.com"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	follows("updated")
	var moved applicationView
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names[1]}, &moved))
	assert.Equal(t, "https://moved.example.com", moved.Spec.Destination.Server)

	require.NoError(t, apps.Delete(ctx, names[2], metav1.DeleteOptions{}))
	follows("deleted")
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names[2]}, &applicationView{})))
}
