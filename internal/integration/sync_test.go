package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// parallel runs fn for 0..n-1 on a few goroutines.
func parallel(n, workers int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func testPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "sync"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/app:1"}}},
	}
}

func serverPods(t *testing.T, cs kubernetes.Interface, ns string) []metav1.Object {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return metaObjects(l.Items)
}

func serverConfigMaps(t *testing.T, cs kubernetes.Interface, ns string) []metav1.Object {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return metaObjects(l.Items)
}

// metaObjects returns the objects of a list's items.
func metaObjects[T any, P interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// The informers sync 5 000 objects, then follow a storm of creates, updates
// and deletes: every handler sees each object's events in order and ends on
// its final state, and the caches equal the server's lists.
func TestSyncAndFollow(t *testing.T) {
	_, cs, ns, ctx := sharedServer(t, 5*time.Minute)
	const pods, cms = 2500, 2500
	require.NoError(t, parallel(pods+cms, 16, func(i int) error {
		if i < pods {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(ns, fmt.Sprintf("pod-%d", i)), metav1.CreateOptions{})
			return err
		}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)},
			Data:       map[string]string{"v": "0"},
		}, metav1.CreateOptions{})
		return err
	}))

	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}})
	podInf := informers.Informer[*corev1.Pod](f)
	cmInf := informers.Informer[*corev1.ConfigMap](f)
	podSeen, cmSeen := newTracker[*corev1.Pod](), newTracker[*corev1.ConfigMap]()
	_, err := podInf.AddHandler(podSeen)
	require.NoError(t, err)
	_, err = cmInf.AddHandler(cmSeen)
	require.NoError(t, err)
	start := time.Now()
	testutil.StartFactory(t, f)
	require.NoError(t, informers.WaitForSync(ctx, f))
	t.Logf("synced %d objects in %v (watch-list: %v)", pods+cms, time.Since(start), podInf.UsesWatchList())
	assert.Equal(t, pods, podInf.Lister().Len())
	assert.Equal(t, cms, cmInf.Lister().Len())

	// A storm of changes on both resources, several per object.
	r := rand.New(rand.NewPCG(7, 7))
	ops := make([]int, 3000)
	for i := range ops {
		ops[i] = r.IntN(cms)
	}
	require.NoError(t, parallel(len(ops), 16, func(i int) error {
		name := fmt.Sprintf("cm-%d", pods+ops[i])
		switch i % 10 {
		case 0:
			err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
			if ignoreRaces(err) != nil {
				return err
			}
			return ignoreRaces(cs.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("pod-%d", ops[i]), metav1.DeleteOptions{}))
		case 1:
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
			return ignoreRaces(err)
		default:
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return ignoreRaces(err)
			}
			cm.Data = map[string]string{"v": fmt.Sprint(i)}
			_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			return ignoreRaces(err)
		}
	}))

	testutil.EventuallyWithin(t, time.Minute, func() bool {
		ok, _ := cmSeen.converged(serverConfigMaps(t, cs, ns))
		return ok
	}, "configmap handler converged")
	testutil.EventuallyWithin(t, time.Minute, func() bool {
		ok, _ := podSeen.converged(serverPods(t, cs, ns))
		return ok
	}, "pod handler converged")
	assert.Equal(t, len(serverConfigMaps(t, cs, ns)), cmInf.Lister().Len())
	assert.Equal(t, len(serverPods(t, cs, ns)), podInf.Lister().Len())
	for _, o := range serverConfigMaps(t, cs, ns) {
		got, err := cmInf.Lister().Namespace(ns).Get(o.GetName())
		require.NoError(t, err)
		require.Equal(t, o.GetResourceVersion(), got.ResourceVersion)
	}
	assert.Zero(t, cmSeen.unknowns, "no relist was needed")
}
