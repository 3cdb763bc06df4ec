package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// fixtureOptions say how many objects -local creates, over how many
// namespaces, how many at once.
type fixtureOptions struct {
	objects, namespaces, workers int
}

// fixture creates objects of one resource in the local control plane.
type fixture struct {
	gvr    schema.GroupVersionResource
	create func(ctx context.Context, cfg *rest.Config, o fixtureOptions, p progress) error
}

// fixtures are the resources -local can fill: realistic pods, config
// maps, and a custom resource modelled on Argo CD's Application.
var fixtures = []fixture{
	{corev1.SchemeGroupVersion.WithResource("pods"), createPods},
	{corev1.SchemeGroupVersion.WithResource("configmaps"), createConfigMaps},
	{bf.ApplicationResource, createApplications},
}

// fixtureFor returns the fixture of r.
func fixtureFor(r resource) (fixture, error) {
	var names []string
	for _, f := range fixtures {
		if f.gvr == r.gvr {
			return f, nil
		}
		names = append(names, gvrString(f.gvr))
	}
	return fixture{}, fmt.Errorf("-local creates %s; it has no fixture of %s", strings.Join(names, ", "), gvrString(r.gvr))
}

// namespaceName is the name of the i-th namespace of a fixture, as
// benchfixtures.PodList names them.
func namespaceName(i int) string { return fmt.Sprintf("team-%02d", i) }

// createNamespaces creates the fixture's namespaces.
func createNamespaces(ctx context.Context, cs kubernetes.Interface, o fixtureOptions, p progress) error {
	return createAll(ctx, "namespaces", o.namespaces, o.workers, p, func(ctx context.Context, i int) error {
		return bf.CreateNamespace(ctx, cs, namespaceName(i))
	})
}

// createPods creates realistic pods (benchfixtures.PodList: two
// containers, probes, volumes, a running status), about 30 to a node, as
// a ReplicaSet controller and a kubelet would: each pod without its
// status, which is then written through pods/status, so that the server
// records both writers in managedFields. The local control plane admits
// pods without a ServiceAccount (testenv disables that admission plugin).
func createPods(ctx context.Context, cfg *rest.Config, o fixtureOptions, p progress) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := createNamespaces(ctx, cs, o, p); err != nil {
		return err
	}
	pods := bf.NewPodList(o.objects, bf.PodOptions{Namespaces: o.namespaces, Nodes: max(1, o.objects/30), Seed: 1})
	return createAll(ctx, "pods", o.objects, o.workers, p, func(ctx context.Context, i int) error {
		return bf.CreatePod(ctx, cs, pods.Pod(i))
	})
}

// createConfigMaps creates config maps as a Helm chart leaves them: a
// configuration file of about 1 KB with labels and annotations.
func createConfigMaps(ctx context.Context, cfg *rest.Config, o fixtureOptions, p progress) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := createNamespaces(ctx, cs, o, p); err != nil {
		return err
	}
	return createAll(ctx, "configmaps", o.objects, o.workers, p, func(ctx context.Context, i int) error {
		cm := configMap(i, namespaceName(i%o.namespaces))
		_, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}

// configMap returns the i-th config map of the fixture, in namespace ns.
func configMap(i int, ns string) *corev1.ConfigMap {
	app := fmt.Sprintf("svc-%03d", i%100)
	var conf strings.Builder
	fmt.Fprintf(&conf, "server:\n  port: 8080\n  name: %s\n  replica: %d\n", app, i)
	for k := range 12 {
		fmt.Fprintf(&conf, "feature_%02d:\n  enabled: %t\n  rollout: %d%%\n  owner: team-%d\n", k, (i+k)%3 == 0, (i*7+k)%100, k%10)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-config-%06d", app, i),
			Namespace: ns,
			Labels: map[string]string{
				"app.kubernetes.io/name":       app,
				"app.kubernetes.io/instance":   app + "-prod",
				"app.kubernetes.io/managed-by": "Helm",
				"helm.sh/chart":                app + "-1.4.2",
			},
			Annotations: map[string]string{"meta.helm.sh/release-name": app + "-prod", "meta.helm.sh/release-namespace": ns},
		},
		Data: map[string]string{"config.yaml": conf.String(), "LOG_LEVEL": "info"},
	}
}

// createApplications installs the CustomResourceDefinition of
// benchfixtures' Application (Argo CD's, a subset) and creates
// applications, status included, posted as JSON.
func createApplications(ctx context.Context, cfg *rest.Config, o fixtureOptions, p progress) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := bf.CreateApplicationCRD(ctx, dyn); err != nil {
		return err
	}
	if err := createNamespaces(ctx, cs, o, p); err != nil {
		return err
	}
	return createAll(ctx, "applications", o.objects, o.workers, p, func(ctx context.Context, i int) error {
		a := bf.NewApplication(i, 1)
		a.Namespace, a.UID, a.ResourceVersion = namespaceName(i%o.namespaces), types.UID(""), ""
		body, err := json.Marshal(a)
		if err != nil {
			return err
		}
		path := fmt.Sprintf("/apis/%s/namespaces/%s/%s", bf.ApplicationGV, a.Namespace, bf.ApplicationResource.Resource)
		return cs.CoreV1().RESTClient().Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	})
}

// fixtureProgressInterval is how often createAll says how far it is.
const fixtureProgressInterval = 5 * time.Second

// createAll calls create for every i below n, at most workers at a time,
// printing progress, and returns the first error, which stops it.
func createAll(ctx context.Context, what string, n, workers int, p progress, create func(ctx context.Context, i int) error) error {
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	var done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(fixtureProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d := done.Load()
				p.printf("created %d/%d %s (%.0f/s)", d, n, what, float64(d)/time.Since(start).Seconds())
			}
		}
	})
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := create(gctx, i); err != nil {
				return fmt.Errorf("creating %s number %d: %w", what, i, err)
			}
			done.Add(1)
			return nil
		})
	}
	err := g.Wait()
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	p.printf("created %d %s in %v", n, what, time.Since(start).Round(time.Millisecond))
	return nil
}
