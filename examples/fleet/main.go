// Fleet mirrors one ConfigMap from a hub cluster to every member cluster
// of a fleet, and keeps the copies equal to it: a copy changed or deleted
// on a member is put back, and the copies are deleted with the original.
//
//	go run ./examples/fleet
//
// It has the shape of a controller over many clusters: one informer on
// the hub, one fleet informer whose handler receives the cluster of each
// event, and a work queue of cluster names; the worker reads the hub's
// cache and the member's through the fleet lister, by (cluster,
// namespace, name), and writes through that member's clientset. A member
// that is down or refuses the copy is reported by name and retried; the
// others go on.
//
// Without $KUBECONFIG it starts three local control planes (a hub and the
// members east and west; see internal/testenv), and plays a short
// scenario: the ConfigMap is created on the hub, changed, and deleted.
// With $KUBECONFIG, -hub and -members name the contexts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/internal/testenv"
)

// The ConfigMap mirrored, in the same namespace on every cluster.
const (
	namespace = "fleet-system"
	name      = "settings"
)

func main() {
	hubContext := flag.String("hub", "", "with $KUBECONFIG: the hub's context; \"\" for the current one")
	memberContexts := flag.String("members", "", "with $KUBECONFIG: the members' contexts, comma-separated")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("fleet: ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := mainErr(ctx, *hubContext, *memberContexts); err != nil {
		log.Fatal(err)
	}
}

func mainErr(ctx context.Context, hubContext, memberContexts string) error {
	if os.Getenv("KUBECONFIG") != "" {
		hub, err := fleet.Kubeconfig("", hubContext)
		if err != nil {
			return err
		}
		members := map[string]*rest.Config{}
		for _, c := range strings.Split(memberContexts, ",") {
			if c == "" {
				continue
			}
			m, err := fleet.Kubeconfig("", c)
			if err != nil {
				return err
			}
			members[c] = m.RESTConfig
		}
		return run(ctx, hub.RESTConfig, members, os.Stdout)
	}
	log.Print("starting three local control planes: hub, east and west (the first run builds them)")
	envs := map[string]*testenv.Env{}
	for _, c := range []string{"hub", "east", "west"} {
		env, err := testenv.Start(ctx, testenv.Options{})
		if err != nil {
			return err
		}
		defer env.Stop()
		envs[c] = env
	}
	go demo(ctx, envs["hub"].Config(), os.Stdout)
	return run(ctx, envs["hub"].Config(), map[string]*rest.Config{"east": envs["east"].Config(), "west": envs["west"].Config()}, os.Stdout)
}

// run mirrors the hub's ConfigMap to the members until ctx ends.
func run(ctx context.Context, hub *rest.Config, members map[string]*rest.Config, out io.Writer) error {
	logger := log.New(out, "", log.Ltime)
	hubClient, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return err
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	enqueueAll := func() {
		for c := range members {
			queue.Add(c)
		}
	}

	// The hub's original: any change concerns every member.
	hubFactory := informers.NewFactory(hubClient)
	selected := informers.Options[*corev1.ConfigMap]{Tuning: informers.Tuning{Namespace: informers.Set(namespace)}, FieldSelector: "metadata.name=" + name}
	original := informers.InformerWith(hubFactory, selected)
	if _, err := original.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{
		OnAdd:    func(*corev1.ConfigMap, bool) { enqueueAll() },
		OnUpdate: func(_, _ *corev1.ConfigMap) { enqueueAll() },
		OnDelete: func(informers.Deleted[*corev1.ConfigMap]) { enqueueAll() },
	}); err != nil {
		return err
	}

	// The copies: a change on a member concerns that member.
	fl := fleet.New(fleet.Options{})
	copies := fleet.InformerWith(fl, selected)
	if _, err := copies.AddHandler(fleet.HandlerFuncs[*corev1.ConfigMap]{
		OnAdd:    func(c string, _ *corev1.ConfigMap, _ bool) { queue.Add(c) },
		OnUpdate: func(c string, _, _ *corev1.ConfigMap) { queue.Add(c) },
		OnDelete: func(c string, _ informers.Deleted[*corev1.ConfigMap]) { queue.Add(c) },
	}); err != nil {
		return err
	}
	clients := map[string]kubernetes.Interface{}
	for _, c := range slices.Sorted(maps.Keys(members)) {
		if clients[c], err = kubernetes.NewForConfig(members[c]); err != nil {
			return err
		}
		if err := fl.Attach(ctx, c, fleet.Cluster{RESTConfig: members[c]}); err != nil {
			return err
		}
	}
	hubFactory.Start(ctx)
	defer hubFactory.Shutdown(context.WithoutCancel(ctx))
	defer fl.Shutdown(context.WithoutCancel(ctx))
	if err := informers.WaitForSync(ctx, original); err != nil {
		return err
	}
	if err := informers.WaitForSync(ctx, fl); err != nil {
		logger.Printf("not every member synced, going on with the others: %v", err)
	}
	logger.Printf("mirroring %s/%s from the hub to %s", namespace, name, strings.Join(fl.Clusters(), ", "))
	enqueueAll()

	done := make(chan struct{})
	go func() {
		defer close(done)
		m := &mirror{original: original.Lister(), copies: copies.Lister(), clients: clients, log: logger}
		for {
			c, shutdown := queue.Get()
			if shutdown {
				return
			}
			if err := m.reconcile(ctx, c); err != nil && ctx.Err() == nil {
				logger.Printf("%s: %v; retrying", c, err)
				queue.AddRateLimited(c)
			} else {
				queue.Forget(c)
			}
			queue.Done(c)
		}
	}()
	<-ctx.Done()
	queue.ShutDown()
	<-done
	return nil
}

// mirror makes a member's copy equal to the hub's original.
type mirror struct {
	original informers.Lister[*corev1.ConfigMap]
	copies   fleet.Lister[*corev1.ConfigMap]
	clients  map[string]kubernetes.Interface
	log      *log.Logger
}

func (m *mirror) reconcile(ctx context.Context, cluster string) error {
	cms := m.clients[cluster].CoreV1().ConfigMaps(namespace)
	want, err := m.original.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		want = nil
	} else if err != nil {
		return err
	}
	have, err := m.copies.Get(fleet.Key{Cluster: cluster, Namespace: namespace, Name: name})
	if apierrors.IsNotFound(err) {
		have = nil
	} else if err != nil {
		return err
	}
	switch {
	case want == nil && have == nil:
		return nil
	case want == nil:
		err := cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &have.UID}})
		if err == nil || apierrors.IsNotFound(err) {
			m.log.Printf("%s: deleted the copy", cluster)
			return nil
		}
		return err
	case have == nil:
		if err := ensureNamespace(ctx, m.clients[cluster]); err != nil {
			return err
		}
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: want.Data}, metav1.CreateOptions{})
		if err == nil {
			m.log.Printf("%s: created the copy: %s", cluster, describe(want.Data))
		}
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache will show it; its event requeues the cluster
		}
		return err
	case !maps.Equal(want.Data, have.Data):
		update := have.DeepCopy()
		update.Data = want.Data
		_, err := cms.Update(ctx, update, metav1.UpdateOptions{})
		if err == nil {
			m.log.Printf("%s: updated the copy: %s", cluster, describe(want.Data))
		}
		if apierrors.IsConflict(err) {
			return nil // a newer copy is on its way to the cache
		}
		return err
	}
	return nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// describe spells data as "k=v, ...", sorted.
func describe(data map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		kv = append(kv, k+"="+data[k])
	}
	return strings.Join(kv, ", ")
}

// demo plays a scenario on the hub: the original created, changed, then
// deleted.
func demo(ctx context.Context, hub *rest.Config, out io.Writer) {
	logger := log.New(out, "demo: ", log.Ltime)
	cs, err := kubernetes.NewForConfig(hub)
	if err != nil {
		logger.Print(err)
		return
	}
	cms := cs.CoreV1().ConfigMaps(namespace)
	steps := []struct {
		what string
		do   func() error
	}{
		{"creating the original on the hub", func() error {
			if err := ensureNamespace(ctx, cs); err != nil {
				return err
			}
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"replicas": "3"}}, metav1.CreateOptions{})
			return err
		}},
		{"changing the original", func() error {
			_, err := cms.Patch(ctx, name, "application/merge-patch+json", []byte(`{"data":{"replicas":"5"}}`), metav1.PatchOptions{})
			return err
		}},
		{"deleting the original", func() error { return cms.Delete(ctx, name, metav1.DeleteOptions{}) }},
	}
	for _, s := range steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(3 * time.Second): // pacing for a reader, not synchronisation
		}
		logger.Print(s.what)
		if err := s.do(); err != nil {
			logger.Print(errors.Join(fmt.Errorf("%s", s.what), err))
		}
	}
}
