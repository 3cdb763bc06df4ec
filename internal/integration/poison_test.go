package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			require.NoError(t, f.WaitForSync(syncCtx))
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
