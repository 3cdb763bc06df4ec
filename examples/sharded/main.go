// Sharded runs three replicas of a small controller that share the config
// maps of a namespace: each caches and handles about a third of them,
// chosen by the hash of their UIDs, and prints how many it owns. The
// replicas find each other through Leases (package membership); after a
// while one of them is killed, and the two others take over its range
// once its Lease has expired.
//
//	go run ./examples/sharded                    # until Ctrl-C
//	go run ./examples/sharded -kill-after 15s -duration 40s
//
// Without $KUBECONFIG it starts a local kube-apiserver with the
// ShardedListAndWatch feature gate on, so the server sends each replica
// only its shard; on a cluster without the gate, the replicas filter on
// their side and own the same objects (each prints which filter is in
// effect).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/examples/internal/cluster"
	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/membership"
	"github.com/kubetyped/informers/shard"
)

type options struct {
	Replicas      int           // replicas to run
	Objects       int           // config maps to create
	LeaseDuration time.Duration // of the membership Leases
	KillAfter     time.Duration // when to kill the last replica; 0 never
}

func main() {
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	o := options{}
	flag.IntVar(&o.Replicas, "replicas", 3, "replicas of the controller")
	flag.IntVar(&o.Objects, "objects", 300, "config maps to share")
	flag.DurationVar(&o.LeaseDuration, "lease-duration", 5*time.Second, "how long a replica that stopped renewing keeps its range")
	flag.DurationVar(&o.KillAfter, "kill-after", 10*time.Second, "kill the last replica after this long; 0 never")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("sharded: ")

	gates := testenv.Options{FeatureGates: map[string]bool{"ShardedListAndWatch": true}}
	err := cluster.RunWith(*duration, gates, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run creates the config maps in a new namespace, runs the replicas until
// ctx ends, and deletes what it created.
func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	logger := log.New(out, "", log.Ltime)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sharded-"}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer cleanUp(cs, ns.Name)
	for i := range o.Objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	logger.Printf("%d config maps in namespace %s, shared by %d replicas", o.Objects, ns.Name, o.Replicas)

	var wg sync.WaitGroup
	errs := make([]error, o.Replicas)
	kills := make([]func(), o.Replicas)
	for i := range o.Replicas {
		rctx, kill := context.WithCancel(ctx)
		r := &replica{name: fmt.Sprintf("replica-%d", i), log: logger}
		kills[i] = func() { r.dead.Store(true); kill() }
		wg.Go(func() { errs[i] = r.run(rctx, cfg, ns.Name, o.LeaseDuration) })
	}
	if o.KillAfter > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(o.KillAfter):
			logger.Printf("killing replica-%d: its connection drops and it stops; its Lease expires in %v", o.Replicas-1, o.LeaseDuration)
			kills[o.Replicas-1]()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// replica is one replica of the controller.
type replica struct {
	name string
	log  *log.Logger
	dead atomic.Bool // killed: every request fails, as if its node died
}

// run runs the replica until ctx ends.
func (r *replica) run(ctx context.Context, cfg *rest.Config, ns string, leaseDuration time.Duration) error {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &killable{next: rt, dead: &r.dead} }
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewFactoryWith(cs, informers.FactoryOptions{Tuning: informers.Tuning{Namespace: informers.Set(ns)}})
	// No ranges until the group assigns some.
	configMaps := informers.InformerWith(factory, informers.Options[*corev1.ConfigMap]{Shard: &shard.Shard{}})
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, err = configMaps.AddHandler(informers.HandlerFuncs[*corev1.ConfigMap]{
		OnAdd:    func(*corev1.ConfigMap, bool) { poke() },
		OnDelete: func(informers.Deleted[*corev1.ConfigMap]) { poke() }, // d.LeftShard: another replica owns it now
	})
	if err != nil {
		return err
	}
	// OnChange is called once the informer holds the new assignment, its
	// new shard synced: the count is then the new shard's, and no handler
	// event needs to follow for the loop below to see it.
	var (
		mu      sync.Mutex
		applied *membership.Assignment
	)
	member, err := membership.New(membership.Config{
		Client: cs, Namespace: ns, Group: "sharded", Identity: r.name,
		LeaseDuration: leaseDuration,
		OnChange: func(a membership.Assignment, err error) {
			if err == nil {
				mu.Lock()
				applied = &a
				mu.Unlock()
			}
			poke()
		},
	})
	if err != nil {
		return err
	}
	member.Follow(configMaps)
	factory.Start(ctx)
	defer cluster.Shutdown(factory)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if err := member.Run(ctx); err != nil {
			r.log.Printf("%s: %v", r.name, err)
		}
	})

	last := ""
	for {
		select {
		case <-ctx.Done():
			if r.dead.Load() {
				r.log.Printf("%s: killed", r.name)
			}
			return nil
		case <-changed:
		}
		mu.Lock()
		a := applied
		mu.Unlock()
		// Between an assignment and its OnChange the informer is
		// re-sharding: its count is neither the old shard's nor the new.
		// A handler event may come before OnChange: print only for the
		// assignment the informer holds.
		st := configMaps.Shard()
		if a != nil && st.Synced && slices.Equal(st.Shard.Ranges, shard.Shard{Ranges: a.Ranges}.Canonical().Ranges) {
			line := fmt.Sprintf("%s owns %d config maps (members %v, ranges %v, shard filter: %s)",
				r.name, configMaps.Lister().Len(), a.Members, a.Ranges, st.Filter)
			if line != last {
				last = line
				r.log.Print(line)
			}
		}
		select { // print at most every 200ms
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// killable fails every request once dead is set.
type killable struct {
	next http.RoundTripper
	dead *atomic.Bool
}

func (k *killable) RoundTrip(req *http.Request) (*http.Response, error) {
	if k.dead.Load() {
		return nil, errors.New("replica killed")
	}
	return k.next.RoundTrip(req)
}

// cleanUp deletes the config maps and the namespace.
func cleanUp(cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		log.Print(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		log.Print(err)
	}
}
