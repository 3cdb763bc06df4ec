// Command controlplane builds the test control plane (kube-apiserver and
// etcd, from pinned Go modules) ahead of the tests, with visible progress,
// runs one for manual experiments, or lists the kube-apiserver versions
// pinned:
//
//	go run ./internal/testenv/cmd/controlplane build
//	go run ./internal/testenv/cmd/controlplane run       # prints a kubeconfig; Ctrl-C stops it
//	go run ./internal/testenv/cmd/controlplane versions  # 1.34 1.35 1.36 1.37
//
// INFORMERS_KUBE_VERSION=1.34 selects an older kube-apiserver than the
// newest, for build and run as for the tests.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/testenv"
)

func main() {
	klog.InitFlags(nil)
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: controlplane build|run|versions")
		fmt.Fprintf(os.Stderr, "%s selects the kube-apiserver version (default: the newest)\n", testenv.EnvKubeVersion)
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch flag.Arg(0) {
	case "build":
		err = build(ctx)
	case "run":
		err = run(ctx)
	case "versions":
		err = versions()
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func build(ctx context.Context) error {
	start := time.Now()
	bins, err := testenv.Build(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("kube-apiserver: %s\netcd: %s\n(%v)\n", bins.KubeAPIServer, bins.Etcd, time.Since(start).Round(time.Millisecond))
	return nil
}

func versions() error {
	vs, err := testenv.KubeVersions()
	if err != nil {
		return err
	}
	fmt.Println(strings.Join(vs, " "))
	return nil
}

func run(ctx context.Context) error {
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	cfg := env.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	path := filepath.Join(env.Dir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return err
	}
	fmt.Printf("control plane running, kube-apiserver %s; export KUBECONFIG=%s\nCtrl-C stops it.\n", env.Server().Version, path)
	<-ctx.Done()
	return nil
}
