package integration

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// A custom resource whose CRD is deleted while its informers run, then
// installed again: the informers, typed and unstructured, deliver a delete
// of every object as the server removes them, report the resource gone,
// and sync the objects of the new CRD once it is served; the caches and
// the handlers' views equal the server's objects at each settled point,
// and no object is added twice without a delete between.
func TestCRDDeletedAndInstalledAgain(t *testing.T) {
	testutil.NoLeaks(t)
	// A group of its own: a CRD of an earlier run may still be going.
	group := "lifecycle-" + strings.ToLower(rand.Text()[:8]) + ".example.com"
	g := gadgetsIn(t, group, 4*time.Minute)
	resource := g.dyn.Resource(g.gvr).Namespace(g.ns)
	create := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			obj := gadget(g.ns, fmt.Sprintf("%s-%d", prefix, i), int64(i))
			obj.SetAPIVersion(g.gv.String())
			_, err := resource.Create(g.ctx, obj, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	create("a", 6)
	create("b", 2)

	f := informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: g.env.Config(), Scheme: g.scheme, Tuning: informers.Tuning{Namespace: informers.Set(g.ns), Backoff: informers.Set(fastBackoff)}})
	typed := informers.Informer[*Gadget](f)
	untyped := informers.InformerWith(f, informers.Options[*unstructured.Unstructured]{Resource: g.gvr})
	typedView, untypedView := newTracker[*Gadget](), newTracker[*unstructured.Unstructured]()
	_, err := typed.AddHandler(typedView)
	require.NoError(t, err)
	_, err = untyped.AddHandler(untypedView)
	require.NoError(t, err)
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(g.ctx, f))

	// converged waits until both caches and both handlers' views hold
	// exactly the server's objects.
	converged := func(when string) {
		t.Helper()
		var why string
		check := func() bool {
			var server []metav1.Object
			l, err := resource.List(g.ctx, metav1.ListOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				why = err.Error()
				return false
			default:
				for i := range l.Items {
					server = append(server, &l.Items[i])
				}
			}
			for _, c := range []struct {
				name   string
				cached int
				view   func([]metav1.Object) (bool, string)
			}{
				{"typed", typed.Lister().Len(), typedView.converged},
				{"unstructured", untyped.Lister().Len(), untypedView.converged},
			} {
				if ok, w := c.view(server); !ok || c.cached != len(server) {
					why = fmt.Sprintf("%s: %d cached of %d; handler: %s", c.name, c.cached, len(server), w)
					return false
				}
			}
			return true
		}
		for deadline := time.Now().Add(time.Minute); !check(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the caches and handlers do not equal the server within a minute: %s", when, why)
			}
		}
	}
	converged("synced")

	crds := g.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	require.NoError(t, crds.Delete(g.ctx, "gadgets."+group, metav1.DeleteOptions{}))
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		_, err := crds.Get(g.ctx, "gadgets."+group, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the CRD is gone")
	converged("the CRD deleted")
	for _, inf := range []informers.AnyInformer{typed, untyped} {
		testutil.EventuallyWithin(t, time.Minute, func() bool { return apierrors.IsNotFound(inf.LastError()) },
			"%s says the resource is not served", inf)
	}

	createGadgetCRDIn(t, g.dyn, g.ctx, group)
	create("a", 3) // the names of deleted objects, new objects
	converged("the CRD installed again")
}
