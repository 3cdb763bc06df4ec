package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// createLooseGadgetCRD creates a CRD of gadgets in group whose spec keeps
// any field (x-kubernetes-preserve-unknown-fields): the server accepts a
// spec.size that is not the integer the Go type says.
func createLooseGadgetCRD(t *testing.T, dyn dynamic.Interface, ctx context.Context, group string) schema.GroupVersionResource {
	t.Helper()
	return createGadgetCRDWith(t, dyn, ctx, group, map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

// looseGadget is a gadget whose spec.size is any JSON value.
func looseGadget(group, ns, name string, size any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1",
		"kind":       "Gadget",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"size": size},
	}}
}

// poisonLog keeps what an informer reports of objects it cannot decode,
// and every delete its handler is given.
type poisonLog struct {
	mu      sync.Mutex
	bad     map[types.NamespacedName]*informers.UndecodableObjectError
	deletes []string
}

func (l *poisonLog) onError(err error) {
	var u *informers.UndecodableObjectError
	if errors.As(err, &u) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.bad[u.Key] = u
	}
}

func (l *poisonLog) reported(key types.NamespacedName) *informers.UndecodableObjectError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bad[key]
}

func (l *poisonLog) deleted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.deletes...)
}

// TestPoisonObject: one custom resource that does not fit its Go type
// (spec.size "big" for an int) among 100 that do. Over list, watch-list
// and watch, the 100 are cached and follow their writes; the bad one is
// named, with its field, in an UndecodableObjectError and counted in
// Stats; a good one made bad keeps its last good state and is never
// delivered as deleted; fixing it brings it back, deleting the bad one
// clears the report.
func TestPoisonObject(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listOnly bool
	}{{"watch-list", false}, {"list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			env, _, ns, ctx := sharedServer(t, 3*time.Minute)
			dyn, err := dynamic.NewForConfig(env.Config())
			require.NoError(t, err)
			group := strings.ToLower(strings.ReplaceAll(ns, "-", "")) + ".poison.example.com"
			gvr := createLooseGadgetCRD(t, dyn, ctx, group)
			gadgets := dyn.Resource(gvr).Namespace(ns)
			for i := range 100 {
				_, err := gadgets.Create(ctx, looseGadget(group, ns, fmt.Sprintf("good-%03d", i), i), metav1.CreateOptions{})
				require.NoError(t, err)
			}
			_, err = gadgets.Create(ctx, looseGadget(group, ns, "bad", "big"), metav1.CreateOptions{})
			require.NoError(t, err)

			log := &poisonLog{bad: map[types.NamespacedName]*informers.UndecodableObjectError{}}
			f := informers.NewFactoryWith(nil, informers.FactoryOptions{
				RESTConfig: env.Config(), Scheme: gadgetSchemeOf(schema.GroupVersion{Group: group, Version: "v1"}),
				Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), DisableWatchList: informers.Set(tc.listOnly)},
			})
			inf := informers.InformerWith(f, informers.Options[*Gadget]{Tuning: informers.Tuning{Namespace: informers.Set(ns), OnError: informers.Set(log.onError)}})
			_, err = inf.AddHandler(informers.HandlerFuncs[*Gadget]{OnDelete: func(d informers.Deleted[*Gadget]) {
				log.mu.Lock()
				defer log.mu.Unlock()
				log.deletes = append(log.deletes, d.Key.Name)
			}})
			require.NoError(t, err)
			testutil.StartFactory(t, f)
			syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			require.NoError(t, informers.WaitForSync(syncCtx, f))
			assert.Equal(t, tc.listOnly, !inf.UsesWatchList())

			badKey := types.NamespacedName{Namespace: ns, Name: "bad"}
			assert.Equal(t, 100, inf.Lister().Len(), "every good gadget cached")
			_, err = inf.Lister().Namespace(ns).Get("bad")
			assert.Error(t, err, "the bad gadget is not cached")
			reported := log.reported(badKey)
			require.NotNil(t, reported, "the bad gadget is reported")
			assert.ErrorContains(t, reported, "spec.size")
			t.Logf("reported: %v", reported)
			assert.Equal(t, 1, inf.Stats().Undecodable)

			// cached waits up to a second for name to be cached at rv.
			cached := func(name, rv string) {
				t.Helper()
				testutil.EventuallyWithin(t, time.Second, func() bool {
					g, err := inf.Lister().Namespace(ns).Get(name)
					return err == nil && g.ResourceVersion == rv
				}, name+" cached at "+rv)
			}
			// A good gadget made bad keeps its last good state.
			before, err := inf.Lister().Namespace(ns).Get("good-005")
			require.NoError(t, err)
			u, err := gadgets.Get(ctx, "good-005", metav1.GetOptions{})
			require.NoError(t, err)
			require.NoError(t, unstructured.SetNestedField(u.Object, "huge", "spec", "size"))
			_, err = gadgets.Update(ctx, u, metav1.UpdateOptions{})
			require.NoError(t, err)
			testutil.EventuallyWithin(t, 5*time.Second, func() bool {
				return log.reported(types.NamespacedName{Namespace: ns, Name: "good-005"}) != nil
			}, "good-005 reported once bad")
			assert.Equal(t, 2, inf.Stats().Undecodable)
			still, err := inf.Lister().Namespace(ns).Get("good-005")
			require.NoError(t, err)
			assert.Equal(t, before.ResourceVersion, still.ResourceVersion, "its last good state")
			// Later writes to the others are cached within a second.
			for _, name := range []string{"good-007", "good-042"} {
				u, err := gadgets.Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err)
				require.NoError(t, unstructured.SetNestedField(u.Object, int64(1000), "spec", "size"))
				w, err := gadgets.Update(ctx, u, metav1.UpdateOptions{})
				require.NoError(t, err)
				cached(name, w.GetResourceVersion())
			}
			// Fixed on the server: back in the cache.
			u, err = gadgets.Get(ctx, "good-005", metav1.GetOptions{})
			require.NoError(t, err)
			require.NoError(t, unstructured.SetNestedField(u.Object, int64(5), "spec", "size"))
			fixed, err := gadgets.Update(ctx, u, metav1.UpdateOptions{})
			require.NoError(t, err)
			cached("good-005", fixed.GetResourceVersion())
			// The bad one deleted: no longer reported.
			require.NoError(t, gadgets.Delete(ctx, "bad", metav1.DeleteOptions{}))
			testutil.EventuallyWithin(t, 5*time.Second, func() bool { return inf.Stats().Undecodable == 0 }, "no undecodable object left")
			assert.Empty(t, log.deleted(), "no gadget delivered as deleted")
			assert.Equal(t, 100, inf.Lister().Len())
		})
	}
}

// sizeAsString is a view of gadgets with the wrong JSON kind: it reads
// spec.size as a string, where gadgets have an integer.
type sizeAsString struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		Size string `json:"size"`
	} `json:"spec"`
}

func (g *sizeAsString) DeepCopyObject() runtime.Object { return informers.DeepCopyView(g) }

// TestUndecodableCacheIsUnhealthy: a view of the wrong JSON kind
// (sizeAsString) over gadgets whose spec keeps any field, so that nothing
// but their decoding can find the mistake. With 199 of 200 gadgets
// undecodable, WaitForSync returns an UndecodableTypeError naming the
// field, the view and the counts, and ReadyCheck and LastError fail with
// it; the same once the cache has synced, when writes make most gadgets
// undecodable, until enough are fixed. One bad gadget among 100 good ones
// leaves WaitForSync and readiness green.
func TestUndecodableCacheIsUnhealthy(t *testing.T) {
	env, _, ns, ctx := sharedServer(t, 4*time.Minute)
	dyn, err := dynamic.NewForConfig(env.Config())
	require.NoError(t, err)
	group := strings.ToLower(strings.ReplaceAll(ns, "-", "")) + ".unhealthy.example.com"
	gvr := createLooseGadgetCRD(t, dyn, ctx, group)
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)

	// start creates the gadgets of sizes in namespace ns, named
	// <prefix>-NNN, and starts an informer of sizeAsString over them.
	start := func(t *testing.T, prefix string, sizes []any) (*informers.Factory, *informers.SharedInformer[*sizeAsString], dynamic.ResourceInterface) {
		t.Helper()
		space := testutil.Namespace(t, clientset(t, env.Config()))
		gadgets := dyn.Resource(gvr).Namespace(space)
		for n, size := range sizes {
			_, err := gadgets.Create(ctx, looseGadget(group, space, fmt.Sprintf("%s-%03d", prefix, n), size), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: env.Config(), Tuning: informers.Tuning{Namespace: informers.Set(space), Backoff: informers.Set(fastBackoff)}})
		inf := informers.InformerWith(f, informers.Options[*sizeAsString]{Resource: gvr, Tuning: informers.Tuning{OnError: informers.Set(func(error) {})}})
		require.NoError(t, inf.LastError())
		testutil.StartFactory(t, f)
		return f, inf, gadgets
	}
	// unhealthy checks that f's informer inf says failed of objects
	// gadgets fail at spec.size.
	unhealthy := func(t *testing.T, f *informers.Factory, inf *informers.SharedInformer[*sizeAsString], failed, objects int) {
		t.Helper()
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var typ *informers.UndecodableTypeError
		require.ErrorAs(t, informers.WaitForSync(wait, f), &typ)
		t.Logf("WaitForSync: %v", typ)
		assert.NoError(t, wait.Err(), "WaitForSync returned at once")
		assert.Equal(t, "spec.size", typ.Field)
		assert.Equal(t, "*integration.sizeAsString", typ.Type)
		assert.Equal(t, []int{failed, failed, objects}, []int{typ.Failed, typ.Undecodable, typ.Objects})
		assert.ErrorContains(t, typ, fmt.Sprintf("%d of %d objects cannot be decoded at spec.size: *integration.sizeAsString does not fit the resource", failed, objects))
		require.ErrorAs(t, informers.ReadyCheck(inf)(req), &typ)
		require.ErrorAs(t, informers.ReadyCheck(f)(req), &typ)
		require.ErrorAs(t, inf.LastError(), &typ)
	}
	healthy := func(t *testing.T, f *informers.Factory, inf *informers.SharedInformer[*sizeAsString]) {
		t.Helper()
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, informers.WaitForSync(wait, f))
		require.NoError(t, informers.ReadyCheck(inf)(req))
		require.NoError(t, informers.ReadyCheck(f)(req))
		require.NoError(t, inf.LastError())
	}
	// resize patches the size of gadgets first to last-1 to size.
	resize := func(t *testing.T, gadgets dynamic.ResourceInterface, prefix string, first, last int, size any) {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"size": size}})
		require.NoError(t, err)
		for n := first; n < last; n++ {
			_, err := gadgets.Patch(ctx, fmt.Sprintf("%s-%03d", prefix, n), types.MergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err)
		}
	}

	t.Run("at-sync", func(t *testing.T) {
		sizes := []any{"big"}
		for n := range 199 {
			sizes = append(sizes, n)
		}
		f, inf, _ := start(t, "g", sizes)
		unhealthy(t, f, inf, 199, 200)
		assert.True(t, inf.HasSynced(), "the cache synced all the same")
		assert.Equal(t, 1, inf.Lister().Len(), "the gadget that decodes is cached")
		assert.Equal(t, 199, inf.Stats().Undecodable)
	})

	t.Run("after-sync", func(t *testing.T) {
		sizes := make([]any, 200)
		for n := range sizes {
			sizes[n] = fmt.Sprintf("s%d", n)
		}
		f, inf, gadgets := start(t, "g", sizes)
		healthy(t, f, inf)
		require.Equal(t, 200, inf.Lister().Len())

		// Writes make 150 of the 200 undecodable.
		resize(t, gadgets, "g", 0, 150, 7)
		testutil.EventuallyWithin(t, 30*time.Second, func() bool { return inf.Stats().Undecodable == 150 }, "150 gadgets undecodable")
		unhealthy(t, f, inf, 150, 200)
		assert.Equal(t, 200, inf.Lister().Len(), "their last good states are kept")

		// 100 fixed: 50 of 200 is a few bad objects, not a bad type.
		resize(t, gadgets, "g", 0, 100, "fixed")
		testutil.EventuallyWithin(t, 30*time.Second, func() bool { return inf.Stats().Undecodable == 50 }, "50 gadgets undecodable")
		healthy(t, f, inf)
	})

	t.Run("one-among-many", func(t *testing.T) {
		sizes := []any{7}
		for n := range 100 {
			sizes = append(sizes, fmt.Sprintf("s%d", n))
		}
		f, inf, _ := start(t, "g", sizes)
		healthy(t, f, inf)
		assert.Equal(t, 100, inf.Lister().Len())
		assert.Equal(t, 1, inf.Stats().Undecodable)
	})
}
