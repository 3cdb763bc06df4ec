package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestGreetings(t *testing.T) {
	cluster := exampletest.Shared(t)
	ns := cluster.Namespace(t)
	dyn := dynamic.NewForConfigOrDie(cluster.Config)
	ctx := exampletest.Context(t)

	// run creates the CustomResourceDefinition.
	p := exampletest.Run(t, run, cluster.Config, options{Workers: 2})
	p.EventuallyPrints("watching greetings")

	client := dyn.Resource(greetings).Namespace(ns)
	// status returns the greeting's status.message and observedGeneration.
	status := func(name string) (string, int64) {
		u, err := client.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return msg, gen
	}
	is := func(name, wantMsg string, wantGen int64) func() bool {
		return func() bool { msg, gen := status(name); return msg == wantMsg && gen == wantGen }
	}

	_, err := client.Create(ctx, newGreeting(ns, "hello", "world"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.Create(ctx, newGreeting(ns, "team", "gophers"), metav1.CreateOptions{})
	require.NoError(t, err)
	p.Eventually(is("hello", "Hello, world!", 1), "hello's status is written")
	p.Eventually(is("team", "Hello, gophers!", 1), "team's status is written")
	assert.Contains(t, p.Output(), "(unstructured informer) "+ns+"/hello is new, for \"world\"")

	_, err = client.Patch(ctx, "hello", types.MergePatchType, []byte(`{"spec":{"name":"Kubernetes"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	p.Eventually(is("hello", "Hello, Kubernetes!", 2), "hello's status follows its spec")

	require.NoError(t, client.Delete(ctx, "team", metav1.DeleteOptions{}))
	p.EventuallyPrints(ns + "/team deleted; it said \"Hello, gophers!\"")
}
