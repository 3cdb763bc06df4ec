package fleet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/informerstest"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestStaticAttachesUntilItsContextEnds(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	east, west := newTestCluster(t, pod("a", "p", "n")), newTestCluster(t, pod("a", "q", "n"))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- fleet.Static{"east": east.cluster(), "west": west.cluster()}.Run(runCtx, fl) }()
	eventually(t, func() bool { return slices.Equal(fl.Clusters(), []string{"east", "west"}) }, "both attached")
	require.NoError(t, informers.WaitForSync(ctx, fl))
	assert.Equal(t, 2, pods.Lister().Len())
	stop()
	require.NoError(t, <-done)
	eventually(t, func() bool { return len(fl.Clusters()) == 0 }, "detached when Run's context ended")
}

func TestKubeconfigPicksTheContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
current-context: east
clusters:
- name: east
  cluster: {server: "https://east.example:6443"}
- name: west
  cluster: {server: "https://west.example:6443"}
users:
- name: admin
  user: {token: secret}
contexts:
- name: east
  context: {cluster: east, user: admin}
- name: west
  context: {cluster: west, user: admin}
`), 0o600))
	tests := []struct{ context, host string }{
		{"", "https://east.example:6443"},
		{"west", "https://west.example:6443"},
	}
	for _, tt := range tests {
		c, err := fleet.Kubeconfig(path, tt.context)
		require.NoError(t, err)
		assert.Equal(t, tt.host, c.RESTConfig.Host)
	}
	_, err := fleet.Kubeconfig(path, "north")
	assert.ErrorContains(t, err, "north")
}

func TestSecretsAttachAndDetachAsTheyComeAndGo(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	members := map[string]testCluster{
		"east-v1": newTestCluster(t, pod("a", "east-1", "n")),
		"east-v2": newTestCluster(t, pod("a", "east-2", "n")),
		"west":    newTestCluster(t, pod("a", "west", "n")),
	}
	secrets := informerstest.NewSource[*corev1.Secret, *corev1.SecretList](corev1.Resource("secrets"))
	hub := informerstest.NewCluster()
	informerstest.Serve(hub, corev1.SchemeGroupVersion.WithResource("secrets"), secrets)
	secret := func(name, kubeconfig string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name}, Data: map[string][]byte{"kubeconfig": []byte(kubeconfig)}}
	}
	_, err := secrets.Add(secret("east", "east-v1"))
	require.NoError(t, err)

	fl := newFleet(t)
	pods := fleet.Informer[*corev1.Pod](fl)
	var errs testutil.Events
	p := &fleet.Secrets{
		Hub:       fleet.Cluster{Server: hub},
		Namespace: "clusters",
		Connect: func(_ string, kubeconfig []byte) (fleet.Cluster, error) {
			c, ok := members[string(kubeconfig)]
			if !ok {
				return fleet.Cluster{}, fmt.Errorf("unknown kubeconfig %q", kubeconfig)
			}
			return c.cluster(), nil
		},
		OnError: func(err error) { errs.Record(err.Error()) },
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- p.Run(runCtx, fl) }()

	names := func() []string { return keys(pods.Lister().All()) }
	eventually(t, func() bool { return slices.Equal(names(), []string{"east|a/east-1"}) }, "east attached")
	_, err = secrets.Add(secret("west", "west"))
	require.NoError(t, err)
	eventually(t, func() bool { return slices.Equal(names(), []string{"east|a/east-1", "west|a/west"}) }, "west attached")
	_, err = secrets.Update(secret("east", "east-v2"))
	require.NoError(t, err)
	eventually(t, func() bool { return slices.Equal(names(), []string{"east|a/east-2", "west|a/west"}) }, "east attached again")
	_, err = secrets.Delete("clusters", "west")
	require.NoError(t, err)
	eventually(t, func() bool { return slices.Equal(fl.Clusters(), []string{"east"}) }, "west detached")
	_, err = secrets.Add(secret("broken", "nowhere"))
	require.NoError(t, err)
	eventually(t, func() bool { return len(errs.List()) == 1 }, "the broken Secret reported")
	assert.Contains(t, errs.List()[0], "clusters/broken")

	stop()
	require.NoError(t, <-done)
	eventually(t, func() bool { return len(fl.Clusters()) == 0 }, "detached when Run's context ended")
}
