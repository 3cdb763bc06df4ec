package integration

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// Custom resources synced through the factory, typed (decoded by the
// library's JSON decoder) and unstructured (by its unstructured decoder),
// equal what client-go's informers cache from the same server: after the
// initial sync and after updates that arrive as watch events.
func TestCustomResourcesCachedAsClientGoCaches(t *testing.T) {
	testutil.NoLeaks(t)
	g := gadgetsIn(t, "decoding.example.com", 3*time.Minute)
	env, ns, dyn, ctx, gv, gvr, s := g.env, g.ns, g.dyn, g.ctx, g.gv, g.gvr, g.scheme
	var err error

	resource := dyn.Resource(gvr).Namespace(ns)
	for i := range 40 {
		g := gadget(ns, fmt.Sprintf("g-%02d", i), int64(i%5))
		g.SetAPIVersion(gv.String())
		g.SetLabels(map[string]string{"app": "toys", "shard": fmt.Sprint(i % 3)})
		_, err := resource.Create(ctx, g, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: env.Config(), Scheme: s, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	typed := informers.Informer[*Gadget](f)
	untyped := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: gvr})
	testutil.StartFactory(t, f)

	// client-go's informers: typed through a REST client of the scheme,
	// unstructured through the dynamic informer factory.
	cfg := rest.CopyConfig(env.Config())
	cfg.GroupVersion, cfg.APIPath = &gv, "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	require.NoError(t, err)
	theirTyped := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := &GadgetList{}
			return l, rc.Get().Namespace(ns).Resource("gadgets").VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(l)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return rc.Get().Namespace(ns).Resource("gadgets").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}, &Gadget{}, 0, cache.Indexers{})
	theirDynamic := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	theirUntyped := theirDynamic.ForResource(gvr).Informer()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	runCtx, stopTyped := context.WithCancel(ctx) // ends before ctx, which outlives the cleanup below
	go func() { defer wg.Done(); theirTyped.RunWithContext(runCtx) }()
	theirDynamic.Start(stop)
	t.Cleanup(func() { close(stop); stopTyped(); theirDynamic.Shutdown(); wg.Wait() })
	require.True(t, cache.WaitForCacheSync(ctx.Done(), theirTyped.HasSynced, theirUntyped.HasSynced))
	require.NoError(t, informers.WaitForSync(ctx, f))

	// compare waits until both caches hold the count objects of the
	// server, at the same versions, and equal, read from one snapshot of
	// each (a delete that reaches one informer before the other must not
	// fail the comparison).
	compare := func(stage string, count int) {
		t.Helper()
		waitSame(t, stage, func() string {
			theirs, theirsU := theirTyped.GetStore().List(), theirUntyped.GetStore().List()
			if len(theirs) != count || len(theirsU) != count {
				return fmt.Sprintf("client-go holds %d typed and %d unstructured objects", len(theirs), len(theirsU))
			}
			return cmp.Or(differsFromClientGo("typed", typed.Lister().List(labels.Everything()), typed.Lister().Namespace(ns).Get, theirs),
				differsFromClientGo("unstructured", untyped.Lister().List(labels.Everything()), untyped.Lister().Namespace(ns).Get, theirsU))
		})
	}
	compare("initial sync", 40)

	for i := range 10 {
		g, err := resource.Get(ctx, fmt.Sprintf("g-%02d", i), metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(g.Object, int64(100+i), "spec", "size"))
		_, err = resource.Update(ctx, g, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, resource.Delete(ctx, "g-39", metav1.DeleteOptions{}))
	compare("after updates", 39)
}

// waitSame polls diff, which says why two caches differ, until it says
// nothing, and fails the test after a minute with its last reason.
func waitSame(t *testing.T, stage string, diff func() string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		why := diff()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the caches differ after a minute: %s", stage, why)
		}
	}
}

// differsFromClientGo says why ours, read through list and get, differs
// from theirs, one snapshot of client-go's store of the same objects:
// other versions, or an object not equal; "" where they are the same.
func differsFromClientGo[T metav1.Object](what string, list []T, get func(string) (T, error), theirs []any) string {
	if !sameVersions(list, theirs) {
		return what + ": the caches hold other versions"
	}
	for _, o := range theirs {
		want := o.(T)
		got, err := get(want.GetName())
		if err != nil || !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("%s %s (%v):\nclient-go: %#v\nours: %#v", what, want.GetName(), err, want, got)
		}
	}
	return ""
}

// sameVersions reports whether ours and theirs hold the same objects at
// the same resource versions.
func sameVersions[T metav1.Object](ours []T, theirs []any) bool {
	if len(ours) != len(theirs) {
		return false
	}
	versions := map[string]string{}
	for _, o := range ours {
		versions[o.GetName()] = o.GetResourceVersion()
	}
	for _, o := range theirs {
		m := o.(metav1.Object)
		if versions[m.GetName()] != m.GetResourceVersion() {
			return false
		}
	}
	return true
}

// DisableWatchList, of a factory or of one informer, syncs custom
// resources by a list, then a watch, where the default is a watch-list
// stream; the objects are the same.
func TestDisableWatchListLists(t *testing.T) {
	testutil.NoLeaks(t)
	g := gadgetsIn(t, "lists.example.com", 2*time.Minute)
	env, ns, dyn, ctx, gv, gvr, s := g.env, g.ns, g.dyn, g.ctx, g.gv, g.gvr, g.scheme
	for i := range 5 {
		g := gadget(ns, fmt.Sprintf("g-%d", i), int64(i))
		g.SetAPIVersion(gv.String())
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	for _, tc := range []struct {
		name      string
		factory   bool
		options   informers.Setting[bool]
		watchList bool
	}{
		{"default", false, informers.Setting[bool]{}, true},
		{"factory", true, informers.Setting[bool]{}, false},
		{"informer", false, informers.Set(true), false},
		{"informer overrides the factory", true, informers.Set(false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, cfg := recorded(env)
			f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: cfg, Scheme: s, Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff), DisableWatchList: informers.Set(tc.factory)}})
			typed := informers.InformerWith(f, informers.Options[*Gadget]{Tuning: informers.Tuning{DisableWatchList: tc.options}})
			untyped := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: gvr, Tuning: informers.Tuning{DisableWatchList: tc.options}})
			testutil.StartFactory(t, f)
			require.NoError(t, informers.WaitForSync(ctx, f))
			require.Len(t, typed.Lister().List(labels.Everything()), 5)
			require.Len(t, untyped.Lister().List(labels.Everything()), 5)
			var streamed, listed int
			for _, ex := range w.exchanges() {
				if !pathEndsWithURL(ex.url, "gadgets") {
					continue
				}
				switch {
				case strings.Contains(ex.url, "sendInitialEvents=true"):
					streamed++
				case !strings.Contains(ex.url, "watch=true"):
					listed++
				}
			}
			if tc.watchList {
				require.Equal(t, 2, streamed, "two watch-lists, no list")
				require.Zero(t, listed)
			} else {
				require.Zero(t, streamed, "no watch-list")
				require.Equal(t, 2, listed, "two lists")
			}
		})
	}
}

// gadgetServer is a namespace of the shared control plane where the
// gadgets of a group of their own are served, with a scheme that knows
// their Go types.
type gadgetServer struct {
	env    *testenv.Env
	ns     string
	dyn    dynamic.Interface
	ctx    context.Context
	gv     schema.GroupVersion
	gvr    schema.GroupVersionResource
	scheme *runtime.Scheme
}

// gadgetsIn installs the CRD of gadgets in group and returns where they
// are served, with a context of timeout d.
func gadgetsIn(t *testing.T, group string, d time.Duration) gadgetServer {
	t.Helper()
	g := gadgetServer{env: testenv.Shared(t), ctx: testutil.Context(t, d), gv: schema.GroupVersion{Group: group, Version: "v1"}}
	g.ns = testutil.Namespace(t, clientset(t, g.env.Config()))
	var err error
	g.dyn, err = dynamic.NewForConfig(g.env.Config())
	require.NoError(t, err)
	g.gvr = g.gv.WithResource("gadgets")
	createGadgetCRDIn(t, g.dyn, g.ctx, group)
	g.scheme = gadgetSchemeOf(g.gv)
	return g
}
