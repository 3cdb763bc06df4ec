package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubetyped/informers/internal/testenv"
)

// target is the cluster the children sync from: a kubeconfig's, or the
// local control plane of -local.
type target struct {
	host       string
	kubeconfig string // the file the children load; "" for clientcmd's default rules
	config     *rest.Config
	env        *testenv.Env // with -local
	dir        string       // with -local: holds the kubeconfig
}

// connect returns the cluster o names. With -local it starts the local
// control plane and creates the fixture of res in it first.
func connect(ctx context.Context, o options, res resource, p progress) (*target, error) {
	if !o.local {
		cfg, err := loadConfig(o.kubeconfig, o.context, float32(o.qps), o.burst, "parent")
		if err != nil {
			return nil, err
		}
		return &target{host: cfg.Host, kubeconfig: o.kubeconfig, config: cfg}, nil
	}
	fx, err := fixtureFor(res)
	if err != nil {
		return nil, err
	}
	p.printf("starting a local kube-apiserver and etcd (the first run builds them from Go modules: several minutes)")
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return nil, fmt.Errorf("starting the local control plane: %w", err)
	}
	t := &target{env: env, config: env.Config()}
	t.host = t.config.Host
	p.printf("local control plane ready at %s in %v", t.host, time.Since(start).Round(time.Millisecond))
	if t.dir, err = os.MkdirTemp("", "coldstart-*"); err != nil {
		t.close()
		return nil, err
	}
	t.kubeconfig = filepath.Join(t.dir, "kubeconfig")
	if err := writeKubeconfig(t.kubeconfig, t.config); err != nil {
		t.close()
		return nil, err
	}
	if err := fx.create(ctx, t.config, fixtureOptions{objects: o.objects, namespaces: o.namespaces, workers: o.workers}, p); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// close stops the local control plane, if any, and removes its files.
func (t *target) close() {
	if t.env != nil {
		t.env.Stop()
	}
	if t.dir != "" {
		os.RemoveAll(t.dir)
	}
}

// settle readies the cluster for the next implementation: with -local it
// has kube-apiserver collect its garbage, as the benchmarks do between two
// syncs, so that each sync starts from the same server heap and none pays
// for the garbage of the fixture's creation or of the sync before. A
// user's cluster is left alone.
func (t *target) settle(ctx context.Context) error {
	if t.env == nil {
		return nil
	}
	return t.env.CollectAPIServerGarbage(ctx)
}

// describe completes res from discovery: its kind, whether the server
// lists and watches it, and about how many objects it has.
func (t *target) describe(ctx context.Context, res *resource) error {
	dc, err := discovery.NewDiscoveryClientForConfig(t.config)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion(res.gvr.GroupVersion().String())
	if err != nil {
		return fmt.Errorf("discovering %s: %w", res.gvr.GroupVersion(), err)
	}
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == res.gvr.Resource })
	if i < 0 {
		return fmt.Errorf("the server does not serve %s", gvrString(res.gvr))
	}
	api := list.APIResources[i]
	for _, verb := range []string{"list", "watch"} {
		if !slices.Contains(api.Verbs, verb) {
			return fmt.Errorf("%s cannot be %sed: its verbs are %v", gvrString(res.gvr), verb, api.Verbs)
		}
	}
	res.kind = api.Kind

	// One object and the count of the others, as the server estimates it:
	// a check that we may list, at the cost of one small request.
	mc, err := metadata.NewForConfig(t.config)
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	one, err := mc.Resource(res.gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("listing %s: %w", gvrString(res.gvr), err)
	}
	res.expected = len(one.Items)
	if n := one.RemainingItemCount; n != nil {
		res.expected += int(*n)
	}
	return nil
}

// loadConfig loads the client configuration of kubeconfig (clientcmd's
// default rules if ""), in context (the current one if ""), with the
// given client-side rate limits, for the user agent "coldstart/"+who.
func loadConfig(kubeconfig, context string, qps float32, burst int, who string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no cluster: set KUBECONFIG or -kubeconfig, or run with -local")
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + " coldstart/" + who
	return cfg, nil
}

// writeKubeconfig writes a kubeconfig of cfg, a bearer-token
// configuration, to path, readable by its owner only.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the local cluster's kubeconfig: %w", err)
	}
	return os.Chmod(path, 0o600)
}
