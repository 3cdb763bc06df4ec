package integration

import (
	"cmp"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// Pods and config maps through a factory whose client is configured for
// JSON, by a rest.Config or a clientset, are decoded by the library's JSON
// decoder (their equal labels shared) and equal what client-go's informers
// of a JSON client cache: after the initial sync and after updates that
// arrive as JSON watch events.
func TestBuiltInsInJSONCachedAsClientGoCaches(t *testing.T) {
	env, cs, ns, ctx := sharedServer(t, 3*time.Minute)
	createLabeled(t, env, ns, 10)
	for i := range 6 {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(ns, fmt.Sprint("pod-", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}

	jsonConfig := func(w *wire) *rest.Config {
		cfg := env.Config()
		cfg.ContentType = "application/json"
		cfg.WrapTransport = w.wrap
		return cfg
	}
	theirWire := &wire{}
	theirClient := clientset(t, jsonConfig(theirWire))
	theirs := clientgoinformers.NewSharedInformerFactoryWithOptions(theirClient, 0, clientgoinformers.WithNamespace(ns))
	theirPods, theirMaps := theirs.Core().V1().Pods().Informer(), theirs.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	theirs.Start(stop)
	t.Cleanup(func() { close(stop); theirs.Shutdown() })
	require.True(t, cache.WaitForCacheSync(ctx.Done(), theirPods.HasSynced, theirMaps.HasSynced))

	for _, through := range []string{"rest.Config", "clientset"} {
		t.Run(through, func(t *testing.T) {
			w := &wire{}
			opts := informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns), Backoff: informers.Set(fastBackoff)}}
			var client kubernetes.Interface
			if through == "clientset" {
				client = clientset(t, jsonConfig(w))
			} else {
				opts.RESTConfig = jsonConfig(w)
			}
			f := informers.NewFactoryWith(client, opts)
			pods := informers.Informer[*corev1.Pod](f)
			maps := informers.Informer[*corev1.ConfigMap](f)
			testutil.StartFactory(t, f)
			require.NoError(t, informers.WaitForSync(ctx, f))

			// compare waits until both caches hold the server's pods and
			// config maps, at its versions, and equal, read from one
			// snapshot of client-go's caches at a time (a delete that
			// reaches one informer before the other must not fail it).
			compare := func(stage string) {
				t.Helper()
				serverPods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				require.NoError(t, err)
				serverMaps, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				require.NoError(t, err)
				waitSame(t, stage, func() string {
					theirP, theirM := theirPods.GetStore().List(), theirMaps.GetStore().List()
					if !sameVersions(pointers(serverPods.Items), theirP) || !sameVersions(pointers(serverMaps.Items), theirM) {
						return "client-go's caches are not at the server's versions"
					}
					return cmp.Or(differsFromClientGo("pod", pods.Lister().List(labels.Everything()), pods.Lister().Namespace(ns).Get, theirP),
						differsFromClientGo("config map", maps.Lister().List(labels.Everything()), maps.Lister().Namespace(ns).Get, theirM))
				})
			}
			compare("initial sync")
			a, b := pair(t, maps.Lister().List(labels.Everything()))
			assert.Equal(t, fmt.Sprintf("%p", a.Labels), fmt.Sprintf("%p", b.Labels), "labels shared by the library's decoder")

			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
			require.NoError(t, err)
			cm.Data["config.yaml"] = "replicas: 5 " + through
			_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			require.NoError(t, err)
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, "pod-0", metav1.GetOptions{})
			require.NoError(t, err)
			pod.Labels["through"] = strings.ReplaceAll(through, ".", "-")
			_, err = cs.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, fmt.Sprint("pod-", 5), metav1.DeleteOptions{}))
			_, err = cs.CoreV1().Pods(ns).Create(ctx, testPod(ns, "pod-5"), metav1.CreateOptions{})
			require.NoError(t, err)
			compare("after updates")

			checked := 0
			for _, ex := range w.exchanges() {
				if ex.status == 200 && (pathEndsWithURL(ex.url, "pods") || pathEndsWithURL(ex.url, "configmaps")) {
					assert.True(t, strings.HasPrefix(ex.contentType, "application/json"), "%s: %s", ex.url, ex.contentType)
					checked++
				}
			}
			assert.GreaterOrEqual(t, checked, 2, "lists or watch-lists of both resources")
		})
	}
}

// pointers returns pointers to the items of a list.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
