package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestTeams(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ctx := exampletest.Context(t)
	first, second := cluster.Namespace(t), cluster.Namespace(t)
	team := first // a label value no other test's namespace has
	require.NoError(t, setTeam(ctx, cs, first, `"`+team+`"`))
	for _, ns := range []string{first, second} {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	p := exampletest.Run(t, run, cluster.Config, options{Team: team})
	has := func(s string) bool { return strings.Contains(p.Output(), s) }
	p.Eventually(func() bool { return has("serving the namespaces labelled team=" + team) }, "synced")
	require.True(t, has("serving "+first+"/settings ("+first+" has 1)"), "the labelled namespace is served")
	require.False(t, has(second+"/settings"), "the other is not")

	t.Log("a namespace that gains the label enters")
	require.NoError(t, setTeam(ctx, cs, second, `"`+team+`"`))
	p.Eventually(func() bool { return has("serving " + second + "/settings (" + second + " has 1)") }, second+" entered")

	t.Log("a namespace that loses it leaves: its config maps are not deleted on the server")
	require.NoError(t, setTeam(ctx, cs, first, "null"))
	p.Eventually(func() bool { return has("left with its namespace " + first + "/settings (" + first + " has 0)") }, first+" left")
	_, err := cs.CoreV1().ConfigMaps(first).Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)

	t.Log("a config map deleted in a served namespace is deleted")
	require.NoError(t, cs.CoreV1().ConfigMaps(second).Delete(ctx, "settings", metav1.DeleteOptions{}))
	p.Eventually(func() bool { return has("deleted " + second + "/settings (" + second + " has 0)") }, "deleted")
}
