package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The copies follow their originals: created, updated, deleted, and put
// back when deleted behind the controller's back.
func TestCopies(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ns := cluster.Namespace(t)
	ctx := exampletest.Context(t)
	p := exampletest.Run(t, run, cluster.Config, options{Namespace: ns})
	p.EventuallyPrints("copying")

	cms := cs.CoreV1().ConfigMaps(ns)
	copyData := func() (map[string]string, bool) {
		cm, err := cms.Get(ctx, "settings"+suffix, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		require.NoError(t, err)
		return cm.Data, true
	}
	_, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{copyLabel: "true"}},
		Data:       map[string]string{"mode": "a"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Eventually(func() bool { d, ok := copyData(); return ok && d["mode"] == "a" }, "copy created")

	orig, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	orig.Data["mode"] = "b"
	_, err = cms.Update(ctx, orig, metav1.UpdateOptions{})
	require.NoError(t, err)
	p.Eventually(func() bool { d, ok := copyData(); return ok && d["mode"] == "b" }, "copy updated")

	require.NoError(t, cms.Delete(ctx, "settings"+suffix, metav1.DeleteOptions{}))
	p.Eventually(func() bool { d, ok := copyData(); return ok && d["mode"] == "b" }, "copy put back")

	require.NoError(t, cms.Delete(ctx, "settings", metav1.DeleteOptions{}))
	p.Eventually(func() bool { _, ok := copyData(); return !ok }, "copy deleted")
	_, err = cms.Get(ctx, "other"+suffix, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "no copy of an unlabelled ConfigMap")
}
