// Copier is a controller-runtime controller whose manager runs on the
// cache of github.com/kubetyped/informers: the manager's options differ
// from a stock manager's by one line, NewCache.
//
// It keeps, for every ConfigMap labelled copy=true, a ConfigMap named
// <name>-copy with the same data, and deletes the copy when the original
// goes.
//
//	(cd examples/controllerruntime && go run . -namespace team-a)
//
// Without $KUBECONFIG it runs against a local control plane (see
// examples/internal/cluster).
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/examples/internal/cluster"
)

const (
	copyLabel = "copy"
	suffix    = "-copy"
)

type options struct {
	Namespace string // "" for all
}

func main() {
	var o options
	flag.StringVar(&o.Namespace, "namespace", "", "namespace to watch; all if empty")
	duration := flag.Duration("duration", 0, "stop after this long; 0 runs until Ctrl-C")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("copier: ")
	err := cluster.Run(*duration, func(ctx context.Context, cfg *rest.Config) error {
		return run(ctx, cfg, os.Stdout, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run runs the manager until ctx ends.
func run(ctx context.Context, cfg *rest.Config, out io.Writer, o options) error {
	logger := log.New(out, "", log.Ltime)
	var namespaces map[string]cache.Config
	if o.Namespace != "" {
		namespaces = map[string]cache.Config{o.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache: controllerruntime.NewCache, // the one line: the manager's cache is ours
		Cache:    cache.Options{DefaultNamespaces: namespaces},
		Metrics:  metricsserver.Options{BindAddress: "0"},
		Logger:   logr.Discard(),
		// Tests run the program more than once in a process.
		Controller: config.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return err
	}
	r := &copier{client: mgr.GetClient(), log: logger}
	err = builder.ControllerManagedBy(mgr).Named("copier").
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[copyLabel] == "true"
		}))).
		// A copy changed or deleted behind our back: reconcile its original.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name, ok := strings.CutSuffix(o.GetName(), suffix)
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Complete(r)
	if err != nil {
		return err
	}
	logger.Printf("copying ConfigMaps labelled %s=true (Ctrl-C to stop)", copyLabel)
	return mgr.Start(ctx)
}

func ptrTo[V any](v V) *V { return &v }

// copier reconciles one original ConfigMap.
type copier struct {
	client client.Client // reads from the cache, writes to the server
	log    *log.Logger
}

func (c *copier) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	copyKey := types.NamespacedName{Namespace: req.Namespace, Name: req.Name + suffix}
	var orig, cp corev1.ConfigMap
	err := c.client.Get(ctx, req.NamespacedName, &orig)
	gone := apierrors.IsNotFound(err) || err == nil && orig.Labels[copyLabel] != "true"
	if err != nil && !gone {
		return reconcile.Result{}, err
	}
	err = c.client.Get(ctx, copyKey, &cp)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	switch {
	case gone && exists:
		err = client.IgnoreNotFound(c.client.Delete(ctx, &cp))
		c.logResult(err, "deleted %s", copyKey)
	case gone:
	case !exists:
		cp = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: copyKey.Namespace, Name: copyKey.Name}, Data: orig.Data}
		err = c.client.Create(ctx, &cp)
		c.logResult(err, "created %s", copyKey)
	case !maps.Equal(cp.Data, orig.Data):
		cp.Data = orig.Data // cp is the cache's deep copy: ours to change
		err = c.client.Update(ctx, &cp)
		c.logResult(err, "updated %s", copyKey)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil // the cache is behind
	}
	return reconcile.Result{}, err
}

func (c *copier) logResult(err error, format string, args ...any) {
	if err == nil {
		c.log.Printf(format, args...)
	}
}
