package testenv_test

import (
	"context"
	"fmt"
	"log"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers/internal/testenv"
)

// An example program runs against its own control plane. The first run
// builds kube-apiserver and etcd, reporting progress on stderr.
func ExampleStart() {
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer env.Stop()

	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		log.Fatal(err)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, ns := range nss.Items {
		fmt.Println(ns.Name)
	}
}
