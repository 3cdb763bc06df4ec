package informers_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

// TestNewNamespaceSelectedInformer runs a namespace-selected informer made
// outside a Factory, over list-watches of its own, in both ways of
// watching: namespaces enter and leave as with a Factory.
func TestNewNamespaceSelectedInformer(t *testing.T) {
	for _, mode := range []informers.NamespaceMode{informers.NamespaceModeClusterWide, informers.NamespaceModePerNamespace} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newNamespaceCluster()
			c.label(t, "a1", "a")
			c.label(t, "b1", "b")
			mustAdd(t, c.pods, pod("a1", "p", nil), pod("b1", "p", nil))
			namespaces, err := informers.NewInformer(c.namespaces.ListWatch(""), informers.Options[*corev1.Namespace]{})
			require.NoError(t, err)
			lwFor := func(ns string) (*informers.ListWatch[*corev1.Pod, *corev1.PodList], error) {
				return c.pods.ListWatch(ns), nil
			}
			inf, err := informers.NewNamespaceSelectedInformer(lwFor, namespaces, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), NamespaceMode: informers.Set(mode)}})
			require.NoError(t, err)
			m := newMirror()
			reg, err := inf.AddHandler(m)
			require.NoError(t, err)
			testutil.Run(t, namespaces)
			testutil.Run(t, inf)
			require.NoError(t, informers.WaitForSync(testutil.Context(t, 10*time.Second), reg))
			m.markSynced()
			requireConverges(t, c, inf, m, "a1 selected")
			assert.Equal(t, mode, inf.NamespaceMode())

			c.label(t, "b1", "a")
			requireConverges(t, c, inf, m, "b1 entered")
			c.label(t, "a1", "")
			requireConverges(t, c, inf, m, "a1 left")
			assert.Equal(t, 1, m.left, "a1/p left the selection")
		})
	}
}

func TestNewNamespaceSelectedInformerRejects(t *testing.T) {
	c := newNamespaceCluster()
	namespaces, err := informers.NewInformer(c.namespaces.ListWatch(""), informers.Options[*corev1.Namespace]{})
	require.NoError(t, err)
	lwFor := func(ns string) (*informers.ListWatch[*corev1.Pod, *corev1.PodList], error) {
		return c.pods.ListWatch(ns), nil
	}
	for _, tc := range []struct {
		name       string
		lwFor      func(string) (*informers.ListWatch[*corev1.Pod, *corev1.PodList], error)
		namespaces *informers.SharedInformer[*corev1.Namespace]
		opts       informers.Options[*corev1.Pod]
		want       string
	}{
		{"no selector", lwFor, namespaces, informers.Options[*corev1.Pod]{}, "NamespaceSelector is empty"},
		{"no Namespace informer", lwFor, nil, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}}, "needs list-watches and a Namespace informer"},
		{"a namespace", lwFor, namespaces, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), Namespace: informers.Set("a1")}}, "Options.Namespace"},
		{"a selector that does not parse", lwFor, namespaces, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team in a")}}, "team in a"},
		{"list-watch fails", func(string) (*informers.ListWatch[*corev1.Pod, *corev1.PodList], error) {
			return nil, errors.New("no client")
		},
			namespaces, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}}, "no client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := informers.NewNamespaceSelectedInformer(tc.lwFor, tc.namespaces, tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
