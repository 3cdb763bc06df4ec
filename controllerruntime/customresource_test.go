package controllerruntime_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers/controllerruntime"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
	"github.com/kubetyped/informers/internal/testutil"
)

// The cache serves custom resources, with a Go type from the scheme and
// unstructured, decoded by the library's JSON decoder: the objects equal
// what controller-runtime's own cache holds, and their equal strings are
// one string.
func TestCacheCustomResources(t *testing.T) {
	env, cs := sharedServer(t)
	cfg := env.Config()
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := testutil.Context(t, 2*time.Minute)
	require.NoError(t, bf.CreateApplicationCRD(ctx, dyn))
	ns := testutil.Namespace(t, cs)
	const count = 24
	for i := range count {
		a := bf.NewApplication(i, 1)
		a.Namespace, a.ResourceVersion, a.UID, a.CreationTimestamp = ns, "", "", metav1.Time{}
		a.APIVersion, a.Kind = bf.ApplicationGV.String(), "Application"
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		require.NoError(t, err)
		_, err = dyn.Resource(bf.ApplicationResource).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	bf.AddApplications(scheme)
	opts := cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}}
	ours, err := controllerruntime.New(cfg, opts)
	require.NoError(t, err)
	theirs, err := cache.New(cfg, opts)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for _, c := range []cache.Cache{ours, theirs} {
		go func() { done <- c.Start(cctx) }()
	}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})

	byName := func(a, b bf.Application) int { return cmp.Compare(a.Name, b.Name) }
	var got, want bf.ApplicationList
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		return ours.List(ctx, &got) == nil && len(got.Items) == count
	}, "our cache lists the applications")
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		return theirs.List(ctx, &want) == nil && len(want.Items) == count
	}, "controller-runtime's cache lists the applications")
	slices.SortFunc(got.Items, byName)
	slices.SortFunc(want.Items, byName)
	require.Equal(t, want.Items, got.Items)
	var cached bf.ApplicationList // as cached: its DeepCopy goes through JSON
	require.NoError(t, ours.List(ctx, &cached, client.UnsafeDisableDeepCopy))
	servers := map[*byte]bool{}
	for _, a := range cached.Items {
		servers[unsafe.StringData(a.Spec.Destination.Server)] = true
	}
	require.Less(t, len(servers), count/2, "equal strings shared: four servers among %d applications", count)
	newList := func() *unstructured.UnstructuredList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(bf.ApplicationGV.WithKind("ApplicationList"))
		return l
	}
	gotU, wantU := newList(), newList()
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		return ours.List(ctx, gotU) == nil && len(gotU.Items) == count
	}, "our cache lists the unstructured applications")
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		return theirs.List(ctx, wantU) == nil && len(wantU.Items) == count
	}, "controller-runtime's cache lists the unstructured applications")
	byUName := func(a, b unstructured.Unstructured) int { return cmp.Compare(a.GetName(), b.GetName()) }
	slices.SortFunc(gotU.Items, byUName)
	slices.SortFunc(wantU.Items, byUName)
	require.Equal(t, wantU.Items, gotU.Items)
	servers = map[*byte]bool{}
	for _, u := range gotU.Items {
		server, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "server")
		servers[unsafe.StringData(server)] = true
	}
	require.Less(t, len(servers), count/2, "equal strings shared in unstructured objects")

	skipping, err := controllerruntime.NewWithOptions(cfg, opts, controllerruntime.Options{Decoding: controllerruntime.Decoding{
		SkipFields: map[client.Object][]string{&bf.Application{}: {"status.resources"}},
	}})
	require.NoError(t, err)
	startCache(t, skipping)
	var skipped bf.ApplicationList
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		return skipping.List(ctx, &skipped) == nil && len(skipped.Items) == count
	}, "the cache with fields to skip lists the applications")
	for _, a := range skipped.Items {
		require.Empty(t, a.Status.Resources)
		require.NotEmpty(t, a.Status.Sync.Revision)
	}
	_, err = controllerruntime.NewWithOptions(cfg, opts, controllerruntime.Options{Decoding: controllerruntime.Decoding{
		SkipFields: map[client.Object][]string{&bf.Application{}: {"status.nothing"}},
	}})
	require.ErrorContains(t, err, `no field "nothing"`)
}

// Unstructured objects of a group the scheme does not know are listed and
// watched: the requests' options are encoded as meta.k8s.io/v1's, not
// converted through the scheme to the resource's group version.
func TestCacheUnstructuredOfGroupNotInScheme(t *testing.T) {
	env, cs := sharedServer(t)
	dyn := dynamic.NewForConfigOrDie(env.Config())
	ctx := testutil.Context(t, time.Minute)
	require.NoError(t, bf.CreateApplicationCRD(ctx, dyn))
	ns := testutil.Namespace(t, cs)
	a := bf.NewApplication(0, 1)
	a.Namespace, a.ResourceVersion, a.UID, a.CreationTimestamp, a.Finalizers = ns, "", "", metav1.Time{}, nil
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	require.NoError(t, err)
	_, err = dyn.Resource(bf.ApplicationResource).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	require.NoError(t, err)

	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c, err := controllerruntime.New(env.Config(), cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	require.NoError(t, err)
	startCache(t, c)
	require.True(t, c.WaitForCacheSync(ctx))
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(bf.ApplicationGV.WithKind("ApplicationList"))
	require.NoError(t, c.List(ctx, l))
	require.Len(t, l.Items, 1)
	require.Equal(t, a.Name, l.Items[0].GetName())
}
