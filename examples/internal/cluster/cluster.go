// Package cluster finds a cluster for the example programs to run against:
// the one $KUBECONFIG points at, or else a local control plane started on
// the spot.
//
// The local control plane is a real kube-apiserver and etcd, built from Go
// modules on first use (see internal/testenv), and nothing else: no nodes,
// no scheduler, no controller-manager. The examples need no more than the
// API server, but some things a cluster does for you do not happen there:
//
//   - pods are never scheduled or run: they stay Pending, and deleting one
//     removes it at once, as nothing waits for a kubelet;
//   - the ServiceAccount admission plugin is off, so pods need no
//     ServiceAccount (no controller would create the default one);
//   - a deleted namespace stays Terminating, with its contents, since the
//     namespace controller does not run: delete what is inside first.
package cluster

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testenv"
)

// Local reports whether Config starts a local control plane, which it does
// when $KUBECONFIG is not set. Examples then make something happen
// themselves, since nobody else acts on that cluster.
func Local() bool { return os.Getenv("KUBECONFIG") == "" }

// Config returns a client configuration and a function that releases the
// cluster when the program is done with it.
//
// With $KUBECONFIG set, it loads it as kubectl does and stop does nothing.
// Otherwise it starts a local kube-apiserver and etcd, reporting progress
// on stderr, and writes a kubeconfig for kubectl; stop ends both processes
// and removes their files. ctx bounds the start (the build, on first use,
// takes several minutes): cancel it, with Ctrl-C say, to give up.
func Config(ctx context.Context) (cfg *rest.Config, stop func(), err error) {
	return ConfigWith(ctx, testenv.Options{})
}

// ConfigWith is Config with options for the local control plane, such as
// feature gates; they do not apply to the cluster $KUBECONFIG names.
func ConfigWith(ctx context.Context, opts testenv.Options) (cfg *rest.Config, stop func(), err error) {
	if !Local() {
		rules := clientcmd.NewDefaultClientConfigLoadingRules() // honours $KUBECONFIG
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, nil, fmt.Errorf("loading $KUBECONFIG: %w", err)
		}
		return cfg, func() {}, nil
	}

	fmt.Fprintln(os.Stderr, "no KUBECONFIG: starting a local kube-apiserver and etcd "+
		"(the first run builds them from source, which takes several minutes)…")
	start := time.Now()
	env, err := testenv.Start(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("starting a local control plane: %w", err)
	}
	cfg = env.Config()
	dir, err := writeKubeconfig(cfg)
	if err != nil {
		env.Stop()
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "local control plane ready in %v; for kubectl, in another shell:\n\texport KUBECONFIG=%s\n",
		time.Since(start).Round(100*time.Millisecond), filepath.Join(dir, "kubeconfig"))
	stop = func() {
		fmt.Fprintln(os.Stderr, "stopping the local control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.RemoveAll(dir)
	}
	return cfg, stop, nil
}

// Run is an example's main: it calls run with a cluster from Config and a
// context that Ctrl-C or SIGTERM cancels, and that ends after duration if
// it is positive (counted once the cluster is up: a first run builds it).
// It releases the cluster when run returns, and returns run's error.
func Run(duration time.Duration, run func(ctx context.Context, cfg *rest.Config) error) error {
	return RunWith(duration, testenv.Options{}, run)
}

// RunWith is Run with options for the local control plane.
func RunWith(duration time.Duration, opts testenv.Options, run func(ctx context.Context, cfg *rest.Config) error) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cfg, stop, err := ConfigWith(ctx, opts)
	if err != nil {
		return err
	}
	defer stop()
	if duration > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, duration)
		defer cancelTimeout()
	}
	return run(ctx, cfg)
}

// writeKubeconfig writes cfg as a kubeconfig file in a new temporary
// directory and returns the directory.
func writeKubeconfig(cfg *rest.Config) (string, error) {
	dir, err := os.MkdirTemp("", "informers-example-")
	if err != nil {
		return "", err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*kc, filepath.Join(dir, "kubeconfig")); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("writing a kubeconfig: %w", err)
	}
	return dir, nil
}

// Shutdown stops the factory's informers and waits, for a while, for their
// handlers to return.
func Shutdown(f *informers.Factory) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Shutdown(ctx); err != nil {
		log.Print(err) // names the informers whose handlers are stuck
	}
}
