package main

import (
	"context"
	"io"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/examples/internal/podcounttest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestPodCount(t *testing.T) {
	podcounttest.Check(t, configMapName, func(ctx context.Context, cfg *rest.Config, out io.Writer, namespace string) error {
		return run(ctx, cfg, out, options{Namespace: namespace, Workers: 2})
	})
}
