package integration

import (
	"fmt"
	"reflect"
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
			opts := informers.FactoryOptions{Namespace: ns, Backoff: fastBackoff}
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
			require.NoError(t, f.WaitForSync(ctx))

			compare := func(stage string) {
				t.Helper()
				testutil.EventuallyWithin(t, time.Minute, func() bool {
					return sameVersions(pods.Lister().List(labels.Everything()), theirPods.GetStore().List()) &&
						sameVersions(maps.Lister().List(labels.Everything()), theirMaps.GetStore().List())
				}, "%s: the caches hold the same versions", stage)
				sameObjects(t, stage, pods.Lister().Namespace(ns).Get, theirPods.GetStore().List())
				sameObjects(t, stage, maps.Lister().Namespace(ns).Get, theirMaps.GetStore().List())
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

// sameObjects checks that get finds every object of theirs, client-go's
// cache, equal.
func sameObjects[T metav1.Object](t *testing.T, stage string, get func(string) (T, error), theirs []any) {
	t.Helper()
	for _, o := range theirs {
		want := o.(metav1.Object)
		got, err := get(want.GetName())
		require.NoError(t, err)
		require.True(t, reflect.DeepEqual(want, got), "%s: %s:\nclient-go: %#v\nours: %#v", stage, want.GetName(), want, got)
	}
}
