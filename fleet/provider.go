package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
)

// Provider finds clusters and attaches them to a Target, detaching those
// that go, until ctx ends; clusters it attached are detached then too.
// Static and Secrets are providers.
type Provider interface {
	Run(ctx context.Context, t Target) error
}

// Target is what a Provider attaches clusters to: a *Fleet, or a
// *Sharded fleet that attaches only this replica's share.
type Target interface {
	Attach(ctx context.Context, name string, c Cluster) error
	Detach(ctx context.Context, name string) error
}

var (
	_ Target = (*Fleet)(nil)
	_ Target = (*Sharded)(nil)
)

// Static is a Provider of a fixed set of clusters, by name; see
// Kubeconfig for clusters declared in kubeconfig files.
type Static map[string]Cluster

// Run attaches every cluster of s, then waits until ctx ends, which
// detaches them. It returns at once, with the errors of the clusters it
// could not attach, if there are any.
func (s Static) Run(ctx context.Context, t Target) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s)) {
		if err := t.Attach(ctx, name, s[name]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Kubeconfig returns the cluster of context kubeContext ("" for the
// current context) of the kubeconfig file at path, with the loading
// rules of kubectl (path "" means $KUBECONFIG or ~/.kube/config).
func Kubeconfig(path, kubeContext string) (Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return Cluster{}, fmt.Errorf("fleet: kubeconfig %q context %q: %w", path, kubeContext, err)
	}
	return Cluster{RESTConfig: cfg}, nil
}
