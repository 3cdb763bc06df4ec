package informers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

func meta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// getOne fetches name through T's informer and checks it is there.
func getOne[T informers.Object](t *testing.T, f *informers.Factory, ns, name string) {
	t.Helper()
	inf := informers.Informer[T](f)
	require.NoError(t, inf.LastError())
	var err error
	if ns == "" {
		_, err = inf.Lister().Get(name)
	} else {
		_, err = inf.Lister().Namespace(ns).Get(name)
	}
	require.NoError(t, err, "%s %s/%s", inf, ns, name)
	assert.Equal(t, 1, inf.Lister().Len(), "%s", inf)
	// And in the other scope, an error that says which to use.
	if ns == "" {
		_, err = inf.Lister().Namespace("other").Get(name)
	} else {
		_, err = inf.Lister().Get(name)
	}
	var scope *informers.ScopeError
	require.ErrorAs(t, err, &scope, "%s %s/%s", inf, ns, name)
	assert.Equal(t, ns != "", scope.Namespaced)
}

// Every built-in kind works through one generic accessor, namespaced and
// cluster-scoped, across API groups.
func TestFactoryBuiltInKinds(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: meta("a", "pod")},
		&corev1.ConfigMap{ObjectMeta: meta("a", "cm")},
		&corev1.Endpoints{ObjectMeta: meta("a", "ep")},
		&corev1.Node{ObjectMeta: meta("", "node")},
		&corev1.Namespace{ObjectMeta: meta("", "a")},
		&appsv1.Deployment{ObjectMeta: meta("a", "deploy")},
		&appsv1.StatefulSet{ObjectMeta: meta("a", "sts")},
		&batchv1.Job{ObjectMeta: meta("a", "job")},
		&batchv1.CronJob{ObjectMeta: meta("a", "cron")},
		&networkingv1.Ingress{ObjectMeta: meta("a", "ing")},
		&networkingv1.NetworkPolicy{ObjectMeta: meta("a", "np")},
		&rbacv1.Role{ObjectMeta: meta("a", "role")},
		&rbacv1.ClusterRole{ObjectMeta: meta("", "crole")},
		&coordinationv1.Lease{ObjectMeta: meta("a", "lease")},
		&storagev1.StorageClass{ObjectMeta: meta("", "sc")},
		&schedulingv1.PriorityClass{ObjectMeta: meta("", "pc")},
	)
	// A factory-wide namespace must not hide cluster-scoped objects.
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set("a"), Backoff: informers.Set(fastBackoff)}})
	kinds := []func(){
		func() { informers.Informer[*corev1.Pod](f) },
		func() { informers.Informer[*corev1.ConfigMap](f) },
		func() { informers.Informer[*corev1.Endpoints](f) },
		func() { informers.Informer[*corev1.Node](f) },
		func() { informers.Informer[*corev1.Namespace](f) },
		func() { informers.Informer[*appsv1.Deployment](f) },
		func() { informers.Informer[*appsv1.StatefulSet](f) },
		func() { informers.Informer[*batchv1.Job](f) },
		func() { informers.Informer[*batchv1.CronJob](f) },
		func() { informers.Informer[*networkingv1.Ingress](f) },
		func() { informers.Informer[*networkingv1.NetworkPolicy](f) },
		func() { informers.Informer[*rbacv1.Role](f) },
		func() { informers.Informer[*rbacv1.ClusterRole](f) },
		func() { informers.Informer[*coordinationv1.Lease](f) },
		func() { informers.Informer[*storagev1.StorageClass](f) },
		func() { informers.Informer[*schedulingv1.PriorityClass](f) },
	}
	for _, k := range kinds {
		k()
	}
	testutil.StartFactory(t, f)
	waitSynced(t, f)
	getOne[*corev1.Pod](t, f, "a", "pod")
	getOne[*corev1.ConfigMap](t, f, "a", "cm")
	getOne[*corev1.Endpoints](t, f, "a", "ep")
	getOne[*corev1.Node](t, f, "", "node")
	getOne[*corev1.Namespace](t, f, "", "a")
	getOne[*appsv1.Deployment](t, f, "a", "deploy")
	getOne[*appsv1.StatefulSet](t, f, "a", "sts")
	getOne[*batchv1.Job](t, f, "a", "job")
	getOne[*batchv1.CronJob](t, f, "a", "cron")
	getOne[*networkingv1.Ingress](t, f, "a", "ing")
	getOne[*networkingv1.NetworkPolicy](t, f, "a", "np")
	getOne[*rbacv1.Role](t, f, "a", "role")
	getOne[*rbacv1.ClusterRole](t, f, "", "crole")
	getOne[*coordinationv1.Lease](t, f, "a", "lease")
	getOne[*storagev1.StorageClass](t, f, "", "sc")
	getOne[*schedulingv1.PriorityClass](t, f, "", "pc")

	// Watch events flow too.
	deploys := informers.Informer[*appsv1.Deployment](f)
	rec := make(chan string, 10)
	_, err := deploys.AddHandler(informers.HandlerFuncs[*appsv1.Deployment]{OnAdd: func(d *appsv1.Deployment, _ bool) { rec <- d.Name }})
	require.NoError(t, err)
	<-rec // the initial one
	_, err = cs.AppsV1().Deployments("a").Create(context.Background(), &appsv1.Deployment{ObjectMeta: meta("a", "new")}, metav1.CreateOptions{})
	require.NoError(t, err)
	select {
	case name := <-rec:
		assert.Equal(t, "new", name)
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the new deployment")
	}
	_, err = cs.AppsV1().Deployments("b").Create(context.Background(), &appsv1.Deployment{ObjectMeta: meta("b", "elsewhere")}, metav1.CreateOptions{})
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return deploys.Lister().Len() == 2 }, "other namespaces stay out")
}

// Every typed client of client-go's clientset lists the resource that
// resourceFor derives from the kind it returns: the generic rule, plus its
// one irregular plural, serves every built-in type with no per-type code.
func TestResourceNamesOfBuiltInKinds(t *testing.T) {
	cs := fake.NewClientset()
	ctx := context.Background()
	checked := 0
	groups := reflect.ValueOf(cs)
	for i := range groups.NumMethod() {
		m := groups.Type().Method(i)
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Name == "Discovery" || m.Name == "Tracker" {
			continue
		}
		group := groups.Method(i).Call(nil)[0]
		for j := range group.NumMethod() {
			gm := group.Type().Method(j)
			var args []reflect.Value
			switch {
			case gm.Type.NumIn() == 1 && gm.Type.In(0).Kind() == reflect.String:
				args = []reflect.Value{reflect.ValueOf("ns")}
			case gm.Type.NumIn() == 0:
			default:
				continue
			}
			if gm.Type.NumOut() != 1 || gm.Name == "RESTClient" {
				continue
			}
			client := group.Method(j).Call(args)[0]
			list := client.MethodByName("List")
			if !list.IsValid() {
				continue
			}
			cs.ClearActions()
			out := list.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(metav1.ListOptions{})})
			require.True(t, out[1].IsNil(), "%s.%s.List", m.Name, gm.Name)
			gvks, _, err := scheme.Scheme.ObjectKinds(out[0].Interface().(runtime.Object))
			require.NoError(t, err)
			listKind := gvks[0]
			kind := listKind.GroupVersion().WithKind(strings.TrimSuffix(listKind.Kind, "List"))
			want := cs.Actions()[0].GetResource()
			assert.Equal(t, want, informers.ResourceFor(kind), "%s.%s", m.Name, gm.Name)
			checked++
		}
	}
	assert.Greater(t, checked, 100, "typed clients checked")
}

func TestFactorySameInformer(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset())
	a := informers.Informer[*corev1.Pod](f)
	b := informers.Informer[*corev1.Pod](f)
	assert.Same(t, a, b)
	web := informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "app=web"})
	assert.NotSame(t, a, web, "selectors make another informer")
	assert.Same(t, web, informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "app=web"}))
	other := informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{Namespace: informers.Set("other")}})
	assert.NotSame(t, a, other)
	assert.Equal(t, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, a.Resource())
}

// widget is a Go type no scheme knows.
type widget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

func TestFactoryErrors(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset())
	informers.Informer[*corev1.Pod](f)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unknown type", informers.Informer[*widget](f).LastError(), "not registered"},
		{"resource held by another type", informers.InformerWith(f, informers.Options[*corev1.ConfigMap]{
			Resource: corev1.SchemeGroupVersion.WithResource("pods")}).LastError(), "already served as *v1.Pod"},
		{"dynamic without resource", informers.Informer[*unstructured.Unstructured](f).LastError(), "needs Options.Resource"},
		{"dynamic without client", informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{
			Resource: corev1.SchemeGroupVersion.WithResource("pods")}).LastError(), "needs FactoryOptions.Dynamic"},
		{"bad selector", informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "a=b=c"}).LastError(), `label selector "a=b=c"`},
		{"another transform", informers.InformerWith(f, informers.Options[*corev1.Pod]{
			Transform: func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }}).LastError(), "another transform"},
		{"list on an informer that streams", informers.InformerWith(f, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}}).LastError(), "with DisableWatchList false"},
		{"no client", informers.Informer[*corev1.Pod](informers.NewFactory(nil)).LastError(), "needs a clientset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Error(t, tt.err)
			assert.Contains(t, tt.err.Error(), tt.want)
		})
	}

	// A failed informer reports its error everywhere and blocks nothing.
	bad := informers.Informer[*widget](f)
	_, err := bad.AddHandler(informers.HandlerFuncs[*widget]{})
	require.ErrorIs(t, err, bad.LastError())
	require.ErrorIs(t, informers.WaitForSync(context.Background(), bad), bad.LastError())
	assert.Zero(t, bad.Lister().Len())
	testutil.StartFactory(t, f)
	ctx := testutil.Context(t, 10*time.Second)
	err = informers.WaitForSync(ctx, f)
	require.ErrorIs(t, err, bad.LastError(), "the factory reports what it could not serve")
	assert.Contains(t, err.Error(), "already served as")
	assert.NoError(t, informers.WaitForSync(ctx, informers.Informer[*corev1.Pod](f)), "the pods informer synced")
}

// A user scheme adds to client-go's: built-in types still resolve.
func TestFactoryUserSchemeKeepsBuiltIns(t *testing.T) {
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	s.AddKnownTypes(gv, &widget{})
	f := informers.NewFactoryWith(fake.NewClientset(&corev1.Pod{ObjectMeta: meta("a", "p")}), informers.FactoryOptions{Scheme: s})
	pods := informers.Informer[*corev1.Pod](f)
	require.NoError(t, pods.LastError())
	w := informers.Informer[*widget](f)
	require.NoError(t, w.LastError())
	assert.Equal(t, gv.WithResource("widgets"), w.Resource())
	testutil.StartFactory(t, f)
	waitSynced(t, pods)
	assert.Equal(t, 1, pods.Lister().Len())
}

// An informer requested after Start runs: client-go's never does
// (kubernetes/kubernetes#92777).
func TestFactoryLateInformer(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: meta("a", "cm")})
	f := informers.NewFactory(cs)
	informers.Informer[*corev1.Pod](f)
	testutil.StartFactory(t, f)
	waitSynced(t, f)
	cms := informers.Informer[*corev1.ConfigMap](f)
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, informers.WaitForSync(ctx, cms))
	assert.Equal(t, 1, cms.Lister().Len())
	f.Start(ctx) // idempotent
	require.NoError(t, informers.WaitForSync(ctx, f))
}

// Releasing an informer stops its watch and frees its cache
// (kubernetes/kubernetes#79610); asking again makes a fresh one.
func TestFactoryRelease(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: meta("a", "cm")})
	f := informers.NewFactory(cs)
	cms := informers.Informer[*corev1.ConfigMap](f)
	rec := &cmCounter{}
	reg, err := cms.AddHandler(rec)
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	waitSynced(t, f)
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, f.Release(ctx, cms))
	<-reg.Done()
	<-cms.Stopped()
	_, err = cms.AddHandler(rec)
	require.ErrorIs(t, err, informers.ErrStopped)
	require.Error(t, f.Release(ctx, cms), "released twice")
	assert.Zero(t, cms.Lister().Len(), "a released cache is freed")
	assert.False(t, cms.HasSynced())
	// Its readers say why they find nothing: not a NotFound, which a
	// controller would take for a deleted object.
	_, err = cms.Lister().Namespace("a").Get("cm")
	require.ErrorIs(t, err, informers.ErrReleased)
	assert.False(t, apierrors.IsNotFound(err))
	assert.ErrorContains(t, err, `get configmaps "a/cm": informers: informer released by Factory.Release`)
	_, err = cms.Lister().ByIndex(informers.NamespaceIndex, "a")
	require.ErrorIs(t, err, informers.ErrReleased)

	fresh := informers.Informer[*corev1.ConfigMap](f)
	assert.NotSame(t, cms, fresh)
	require.NoError(t, informers.WaitForSync(ctx, fresh))
	assert.Equal(t, 1, fresh.Lister().Len())
	watches := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "watch" && a.GetResource().Resource == "configmaps" {
			watches++
		}
	}
	assert.Equal(t, 2, watches)
}

type cmCounter struct {
	informers.HandlerFuncs[*corev1.ConfigMap]
}

// WaitForSync says why a cache cannot sync, at once: here RBAC forbids
// listing secrets.
func TestFactoryWaitForSyncForbidden(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New(`user "bob" cannot list secrets`))
	})
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	informers.Informer[*corev1.Pod](f)
	informers.Informer[*corev1.Secret](f)
	testutil.StartFactory(t, f)
	err := waitFailsPromptly(t, waitOn(f))
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), "secrets.v1")
	assert.NotContains(t, err.Error(), "pods.v1", "the pods informer synced")
}

func TestFactoryDiscoveryError(t *testing.T) {
	// A server that refuses every request, discovery first.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(&metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("User %q cannot get path %q", "bob", r.URL.Path),
		})
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	informers.Informer[*appsv1.Deployment](f)
	testutil.StartFactory(t, f)
	err = waitFailsPromptly(t, waitOn(f))
	assert.True(t, apierrors.IsForbidden(err), "the 403 is in the chain: %v", err)
	assert.Contains(t, err.Error(), "deployments.v1.apps")
	assert.Contains(t, err.Error(), "discovery of apps/v1", "says which request failed")
	assert.Contains(t, err.Error(), `User "bob" cannot get path "/apis/apps/v1"`, "carries the server's message")
}

func TestFactoryDynamicAndMetadata(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace("a")
	w.SetName("w1")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"}, w)

	metaScheme := runtime.NewScheme()
	require.NoError(t, metav1.AddMetaToScheme(metaScheme))
	pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta("a", "s1")}
	md := metadatafake.NewSimpleMetadataClient(metaScheme, pm)

	f := informers.NewFactoryWith(fake.NewClientset(), informers.FactoryOptions{Dynamic: dyn, Metadata: md, Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff)}})
	widgets := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: gvr})
	secrets := informers.InformerWith(f, informers.Options[*metav1.PartialObjectMetadata]{Resource: corev1.SchemeGroupVersion.WithResource("secrets")})
	typedSecrets := informers.Informer[*corev1.Secret](f)
	require.NoError(t, widgets.LastError())
	require.NoError(t, secrets.LastError())
	require.NoError(t, typedSecrets.LastError(), "typed and metadata-only informers of one resource coexist")
	testutil.StartFactory(t, f)
	waitSynced(t, f)

	got, err := widgets.Lister().Namespace("a").Get("w1")
	require.NoError(t, err)
	assert.Equal(t, "Widget", got.GetKind())
	gotMeta, err := secrets.Lister().Namespace("a").Get("s1")
	require.NoError(t, err)
	assert.Equal(t, "s1", gotMeta.Name)

	w2 := w.DeepCopy()
	w2.SetName("w2")
	_, err = dyn.Resource(gvr).Namespace("a").Create(context.Background(), w2, metav1.CreateOptions{})
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return widgets.Lister().Len() == 2 }, "dynamic watch delivers")
}

// factoryWithStuckHandler returns a factory over one pod and its pod
// informer, with a handler that blocks in its first call: entered is
// closed once it has, and closing release lets it return.
func factoryWithStuckHandler(t *testing.T, opts informers.HandlerOptions) (f *informers.Factory, pods *informers.SharedInformer[*corev1.Pod], entered, release chan struct{}) {
	t.Helper()
	f = informers.NewFactory(fake.NewClientset(&corev1.Pod{ObjectMeta: meta("a", "p")}))
	pods = informers.Informer[*corev1.Pod](f)
	entered, release = make(chan struct{}), make(chan struct{})
	_, err := pods.AddHandlerWith(informers.HandlerFuncs[*corev1.Pod]{OnAdd: func(*corev1.Pod, bool) {
		close(entered)
		<-release
	}}, opts)
	require.NoError(t, err)
	return f, pods, entered, release
}

func TestFactoryShutdown(t *testing.T) {
	f, _, entered, release := factoryWithStuckHandler(t, informers.HandlerOptions{Name: "stuck"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	waitSynced(t, f)
	<-entered // no call begins once Shutdown has begun

	short, scancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer scancel()
	err := f.Shutdown(short)
	require.Error(t, err, "a stuck handler keeps Shutdown waiting")
	assert.Contains(t, err.Error(), "handler stuck of pods.v1", "names the handler")
	close(release)
	long, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	require.NoError(t, f.Shutdown(long))
	require.ErrorIs(t, informers.Informer[*corev1.Pod](f).LastError(), informers.ErrStopped)
}

func TestFactoryPerInformerOptions(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", Labels: map[string]string{"app": "web"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db", Labels: map[string]string{"app": "db"}}, Spec: corev1.PodSpec{NodeName: "n1"}},
	)
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{StripManagedFields: informers.Set(true)}})
	all := informers.InformerWith(f, informers.Options[*corev1.Pod]{
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{"node": byNode},
	})
	web := informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "app=web"})
	testutil.StartFactory(t, f)
	waitSynced(t, f)
	assert.Equal(t, []string{"a/web"}, names(mustList(t, web.Lister())))
	assert.Equal(t, []string{"a/db", "a/web"}, names(mustList(t, all.Lister())))
	p, err := all.Lister().Namespace("a").Get("web")
	require.NoError(t, err)
	assert.Nil(t, p.ManagedFields, "stripped")
	onN1, err := all.Lister().ByIndex("node", "n1")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/db"}, names(onN1))
	// A later request may add an index to the shared informer.
	again := informers.InformerWith(f, informers.Options[*corev1.Pod]{
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{"app": func(p *corev1.Pod) []string { return []string{p.Labels["app"]} }},
	})
	require.Same(t, all, again)
	webs, err := all.Lister().ByIndex("app", "web")
	require.NoError(t, err)
	assert.Len(t, webs, 1)
	assert.Equal(t, fmt.Sprint(all), fmt.Sprint(again))
}

// Releasing an informer that never ran stops it all the same: its channels
// close and it takes no more handlers.
func TestFactoryReleaseNeverStarted(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset())
	cms := informers.Informer[*corev1.ConfigMap](f)
	reg, err := cms.AddHandler(&cmCounter{})
	require.NoError(t, err)
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, f.Release(ctx, cms))
	<-cms.Stopped()
	<-reg.Done()
	_, err = cms.AddHandler(&cmCounter{})
	require.ErrorIs(t, err, informers.ErrStopped)
	require.NoError(t, f.Shutdown(ctx))
}

// Shutdown called with the context that Start was given, which has ended,
// still waits for the informers' goroutines, up to the grace period.
func TestFactoryShutdownAfterStartContextEnded(t *testing.T) {
	f, pods, entered, release := factoryWithStuckHandler(t, informers.HandlerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	<-entered
	cancel()
	shut := make(chan error, 1)
	go func() { shut <- f.Shutdown(ctx) }()
	close(release)
	require.NoError(t, <-shut, "waited for the handler instead of giving up at once")
	<-pods.Stopped()
}

// Equivalent spellings of a selector name one informer, one watch and one
// cache.
func TestFactoryCanonicalSelectors(t *testing.T) {
	f := informers.NewFactory(fake.NewClientset())
	a := informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "app=web,tier=front", FieldSelector: "spec.nodeName=n1,status.phase=Running"})
	b := informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "tier=front, app=web", FieldSelector: "status.phase=Running,spec.nodeName=n1"})
	c := informers.InformerWith(f, informers.Options[*corev1.Pod]{LabelSelector: "tier=back,app=web"})
	require.NoError(t, a.LastError())
	assert.Same(t, a, b)
	assert.NotSame(t, a, c)
	require.ErrorIs(t, informers.WaitForSync(context.Background(), f), informers.ErrNotStarted)
}

// The factory's readiness check covers the handlers added to its
// informers: one not yet delivered its initial state fails it, one removed
// for exceeding its queue limit fails it for good, and one removed by
// Remove no longer counts.
func TestFactoryReadyCheckCoversHandlers(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: meta("a", "x")},
		&corev1.ConfigMap{ObjectMeta: meta("a", "y")},
		&corev1.ConfigMap{ObjectMeta: meta("a", "z")},
	)
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
	cms := informers.Informer[*corev1.ConfigMap](f)
	ready := informers.ReadyCheck(f)
	release := make(chan struct{})
	defer close(release)
	stuck := informers.HandlerFuncs[*corev1.ConfigMap]{OnAdd: func(*corev1.ConfigMap, bool) { <-release }}
	slow, err := cms.AddHandlerWith(stuck, informers.HandlerOptions{Name: "slow"})
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	waitSynced(t, f)
	err = ready(nil)
	require.Error(t, err, "a handler has not been delivered the initial state")
	assert.Contains(t, err.Error(), "handler slow")

	slow.Remove()
	testutil.Eventually(t, func() bool { return ready(nil) == nil }, "a removed handler still counts: %v", ready(nil))

	_, err = cms.AddHandlerWith(stuck, informers.HandlerOptions{Name: "bounded", QueueLimit: 2})
	require.NoError(t, err)
	var overflow *informers.HandlerOverflowError
	testutil.Eventually(t, func() bool { return errors.As(ready(nil), &overflow) }, "an overflowed handler does not fail readiness: %v", ready(nil))
	assert.Equal(t, "bounded", overflow.Handler)
}
