package main

import (
	"context"
	"io"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The hub's ConfigMap reaches both members, its changes too; a copy
// deleted on a member is put back; deleting the original deletes the
// copies. Three real control planes.
func TestMirrorsToEveryMember(t *testing.T) {
	hub := testenv.Shared(t)
	members := map[string]*rest.Config{"east": testenv.New(t, testenv.Options{}).Config(), "west": testenv.New(t, testenv.Options{}).Config()}
	p := exampletest.Start(t, func(ctx context.Context, out io.Writer) error {
		return run(ctx, hub.Config(), members, out)
	})
	p.EventuallyPrints("mirroring fleet-system/settings from the hub to east, west")

	ctx := context.Background()
	hubCMs := clientset(t, hub.Config()).CoreV1().ConfigMaps(namespace)
	_, err := clientset(t, hub.Config()).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	t.Cleanup(func() { _ = hubCMs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	copyOn := func(member string) (map[string]string, bool) {
		cm, err := clientset(t, members[member]).CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		return cm.Data, true
	}
	everywhere := func(want map[string]string) func() bool {
		return func() bool {
			for m := range members {
				if data, ok := copyOn(m); !ok || !maps.Equal(data, want) {
					return false
				}
			}
			return true
		}
	}

	_, err = hubCMs.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"replicas": "3"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Eventually(everywhere(map[string]string{"replicas": "3"}), "copies created")

	_, err = hubCMs.Patch(ctx, name, "application/merge-patch+json", []byte(`{"data":{"replicas":"5"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	p.Eventually(everywhere(map[string]string{"replicas": "5"}), "copies updated")

	require.NoError(t, clientset(t, members["east"]).CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{}))
	p.Eventually(everywhere(map[string]string{"replicas": "5"}), "east's copy put back")

	require.NoError(t, hubCMs.Delete(ctx, name, metav1.DeleteOptions{}))
	p.Eventually(func() bool {
		for m := range members {
			if _, ok := copyOn(m); ok {
				return false
			}
		}
		return true
	}, "copies deleted")
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}
