// Command controlplane builds the test control plane (kube-apiserver and
// etcd, from pinned Go modules) ahead of the tests, with visible progress,
// or runs one for manual experiments:
//
//	go run ./internal/testenv/cmd/controlplane build
//	go run ./internal/testenv/cmd/controlplane run   # prints a kubeconfig; Ctrl-C stops it
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
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
		fmt.Fprintln(os.Stderr, "usage: controlplane build|run")
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
	fmt.Printf("control plane running; export KUBECONFIG=%s\nCtrl-C stops it.\n", path)
	<-ctx.Done()
	return nil
}
