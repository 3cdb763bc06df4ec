package clientgo_test

import (
	"cmp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/clientgo"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// The dynamic factory view serves what client-go's dynamic informer
// factory serves, from the same server, through the same interface.
func TestDynamicFactoryAsClientGos(t *testing.T) {
	srv, err := bf.NewApplicationServer(40, 15, true)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	// The fixture's server lists and watches; it streams no watch-list.
	require.NoError(t, bf.SetClientGoWatchList(false))
	t.Cleanup(func() { require.NoError(t, bf.SetClientGoWatchList(true)) })
	stop := make(chan struct{})

	ours := clientgo.DynamicFactory(informers.NewFactoryWith(nil, informers.FactoryOptions{RESTConfig: srv.Config(), Tuning: informers.Tuning{DisableWatchList: informers.Set(true)}}))
	theirs := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(srv.Config()), 0)
	var lists [2][]runtime.Object
	for i, f := range []dynamicinformer.DynamicSharedInformerFactory{ours, theirs} {
		inf := f.ForResource(bf.ApplicationResource)
		var added atomic.Int32
		_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { added.Add(1) }})
		require.NoError(t, err)
		f.Start(stop)
		require.Equal(t, map[bool]int{true: 1}, countValues(f.WaitForCacheSync(stop)))
		l, err := inf.Lister().List(labels.Everything())
		require.NoError(t, err)
		require.Len(t, l, 40)
		slices.SortFunc(l, func(a, b runtime.Object) int {
			return cmp.Compare(a.(*unstructured.Unstructured).GetName(), b.(*unstructured.Unstructured).GetName())
		})
		lists[i] = l
		require.Eventually(t, func() bool { return added.Load() == 40 }, 10*time.Second, time.Millisecond, "every object added")
		one, err := inf.Lister().ByNamespace(l[0].(*unstructured.Unstructured).GetNamespace()).Get(l[0].(*unstructured.Unstructured).GetName())
		require.NoError(t, err)
		require.Same(t, l[0], one)
	}
	require.Equal(t, lists[1], lists[0])
	close(stop)
	ours.Shutdown()
	theirs.Shutdown()
	ours.Shutdown() // again: nothing to do
}

func countValues[K comparable](m map[K]bool) map[bool]int {
	c := map[bool]int{}
	for _, v := range m {
		c[v]++
	}
	return c
}
