//go:build k8s_v0_37

// BenchmarkReadYourWrites compares with controller-runtime v0.25's
// read-your-writes client (client.CacheOptions.EnableReadYourWritesConsistency),
// which v0.24, the version the adapter requires, does not have: this file
// builds only with the k8s_v0_37 tag, as consistency_test.go.

package controllerruntime_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/internal/testenv"
)

// rywObjects is how many config maps BenchmarkReadYourWrites writes in
// turn.
const rywObjects = 20

// rywReader writes the config map key with data i and reads it back;
// it returns the version written, what the read returned, and when the
// write returned.
type rywReader func(ctx context.Context, key types.NamespacedName, i int) (written, read string, wroteAt time.Time, err error)

// BenchmarkReadYourWrites measures what reading one's own write costs: a
// loop updates one of 20 config maps in a namespace of a real
// kube-apiserver and reads it back at once, from a cache. p50-µs and
// p99-µs are the time from the write's return to the read's; stale/op the
// share of reads that did not return the version written; ns/op includes
// the write.
//
//	read=lister           our informer's lister, as it is: no wait
//	read=tracker          informers.Tracker: Wrote after the write, Get
//	read=cr-consistent    controller-runtime's client with
//	                      EnableReadYourWritesConsistency over our cache
//	read=cr-consistent-cr the same over controller-runtime's own cache
//
// All four run on one control plane (internal/testenv), one after the
// other.
func BenchmarkReadYourWrites(b *testing.B) {
	env := testenv.Shared(b)
	cs := kubernetes.NewForConfigOrDie(env.Config())
	for _, c := range []struct {
		name  string
		setup func(b *testing.B, ctx context.Context, ns string) rywReader
	}{
		{"lister", func(b *testing.B, ctx context.Context, ns string) rywReader {
			inf := rywInformer(b, ctx, cs, ns)
			return func(ctx context.Context, key types.NamespacedName, i int) (string, string, time.Time, error) {
				cm, err := rywUpdate(ctx, cs, key, i)
				if err != nil {
					return "", "", time.Time{}, err
				}
				wrote := time.Now()
				got, err := inf.Lister().Namespace(key.Namespace).Get(key.Name)
				if err != nil {
					return cm.ResourceVersion, "", wrote, nil // not cached yet: stale
				}
				return cm.ResourceVersion, got.ResourceVersion, wrote, nil
			}
		}},
		{"tracker", func(b *testing.B, ctx context.Context, ns string) rywReader {
			tr := informers.NewTracker(rywInformer(b, ctx, cs, ns), 0)
			return func(ctx context.Context, key types.NamespacedName, i int) (string, string, time.Time, error) {
				cm, err := rywUpdate(ctx, cs, key, i)
				if err != nil {
					return "", "", time.Time{}, err
				}
				wrote := time.Now()
				if err := tr.Wrote(key, cm); err != nil {
					return "", "", wrote, err
				}
				got, err := tr.Get(ctx, key)
				if err != nil {
					return "", "", wrote, err
				}
				return cm.ResourceVersion, got.ResourceVersion, wrote, nil
			}
		}},
		{"cr-consistent", func(b *testing.B, ctx context.Context, ns string) rywReader {
			return rywConsistentClient(b, ctx, env, ns, controllerruntime.NewCache)
		}},
		{"cr-consistent-cr", func(b *testing.B, ctx context.Context, ns string) rywReader {
			return rywConsistentClient(b, ctx, env, ns, crcache.New)
		}},
	} {
		b.Run("read="+c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ns := rywNamespace(b, ctx, cs)
			readBack := c.setup(b, ctx, ns)
			lat := make([]time.Duration, 0, 1024)
			stale := 0
			i := 0
			for b.Loop() {
				key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("cm-%d", i%rywObjects)}
				written, read, wroteAt, err := readBack(ctx, key, i)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(wroteAt))
				if read != written {
					stale++
				}
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(percentile(lat, 50).Microseconds()), "p50-µs")
			b.ReportMetric(float64(percentile(lat, 99).Microseconds()), "p99-µs")
			b.ReportMetric(float64(stale)/float64(len(lat)), "stale/op")
		})
	}
}

// percentile returns the p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// rywNamespace creates a namespace with the benchmark's config maps,
// deleted at the end.
func rywNamespace(b *testing.B, ctx context.Context, cs kubernetes.Interface) string {
	b.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ryw-"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	for n := range rywObjects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", n)}}
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return ns.Name
}

// rywUpdate writes data i to the config map key, unconditionally.
func rywUpdate(ctx context.Context, cs kubernetes.Interface, key types.NamespacedName, i int) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name}, Data: map[string]string{"i": strconv.Itoa(i)}}
	return cs.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
}

// rywInformer returns a synced informer of the config maps of ns, run
// until ctx ends.
func rywInformer(b *testing.B, ctx context.Context, cs kubernetes.Interface, ns string) *informers.SharedInformer[*corev1.ConfigMap] {
	b.Helper()
	f := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
	inf := informers.Informer[*corev1.ConfigMap](f)
	f.Start(ctx)
	b.Cleanup(func() { _ = f.Shutdown(context.Background()) })
	if err := informers.WaitForSync(ctx, f); err != nil {
		b.Fatal(err)
	}
	return inf
}

// rywConsistentClient returns a reader through controller-runtime's
// client with EnableReadYourWritesConsistency, over the cache newCache
// makes for namespace ns, run until ctx ends.
func rywConsistentClient(b *testing.B, ctx context.Context, env *testenv.Env, ns string, newCache crcache.NewCacheFunc) rywReader {
	b.Helper()
	cfg := env.Config()
	c, err := newCache(cfg, crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	b.Cleanup(func() { <-done })
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("cache not synced")
	}
	cl, err := client.New(cfg, client.Options{Cache: &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		b.Fatal(err)
	}
	// The first read registers the consistency handler and waits for it.
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cm-0"}, &corev1.ConfigMap{}); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, key types.NamespacedName, i int) (string, string, time.Time, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{"i": strconv.Itoa(i)}}
		if err := cl.Update(ctx, cm); err != nil {
			return "", "", time.Time{}, err
		}
		wrote := time.Now()
		var got corev1.ConfigMap
		if err := cl.Get(ctx, key, &got); err != nil {
			return "", "", wrote, err
		}
		return cm.ResourceVersion, got.ResourceVersion, wrote, nil
	}
}
