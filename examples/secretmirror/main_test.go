package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/examples/internal/exampletest"
	"github.com/kubetyped/informers/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestSecretMirror(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ctx := exampletest.Context(t)
	from := cluster.Namespace(t)
	to := from + "-mirrors" // created below, once the controller has failed for want of it

	p := exampletest.Run(t, run, cluster.Config, options{From: from, To: to, Workers: 2})
	p.EventuallyPrints("mirroring secrets")
	sources, mirrors := cs.CoreV1().Secrets(from), cs.CoreV1().Secrets(to)
	// mirrored returns the value of the mirror of name, or "" if there is none.
	mirrored := func(name string) string {
		s, err := mirrors.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		require.NoError(t, err)
		assert.Equal(t, from, s.Labels[sourceLabel])
		return string(s.Data["v"])
	}
	create := func(name, value string, labels map[string]string) {
		_, err := sources.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Data:       map[string][]byte{"v": []byte(value)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	patch := func(name, patch string) {
		_, err := sources.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	labelled := map[string]string{mirrorLabel: "true"}

	t.Log("the target namespace is missing: retried until it exists")
	create("a", "1", labelled)
	p.EventuallyPrints(from + "/a: namespaces \"" + to + "\" not found (retry 2)")
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: to}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), to, metav1.DeleteOptions{}) })
	p.Eventually(func() bool { return mirrored("a") == "1" }, "a is mirrored")

	t.Log("a change of data is copied")
	patch("a", `{"data":{"v":"Mg=="}}`) // "2"
	p.Eventually(func() bool { return mirrored("a") == "2" }, "a's change is mirrored")

	t.Log("unlabelled secrets are not mirrored, nor are secrets of the same name overwritten")
	create("unlabelled", "x", nil)
	_, err = mirrors.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "taken"}, StringData: map[string]string{"v": "mine"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	create("taken", "theirs", labelled)
	p.EventuallyPrints(from + "/taken: a secret not labelled as a mirror has the name")
	taken, err := mirrors.Get(ctx, "taken", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "mine", string(taken.Data["v"]))
	assert.Empty(t, taken.Labels)

	t.Log("a mirror deleted by hand comes back")
	create("b", "3", labelled)
	p.Eventually(func() bool { return mirrored("b") == "3" }, "b is mirrored")
	require.NoError(t, mirrors.Delete(ctx, "b", metav1.DeleteOptions{}))
	p.Eventually(func() bool { return strings.Count(p.Output(), "created "+to+"/b ") == 2 && mirrored("b") == "3" }, "b is mirrored again")

	t.Log("a mirror goes when its source loses the label or is deleted")
	patch("a", `{"metadata":{"labels":{"mirror":null}}}`)
	require.NoError(t, sources.Delete(ctx, "b", metav1.DeleteOptions{}))
	p.Eventually(func() bool { return mirrored("a") == "" && mirrored("b") == "" }, "a's and b's mirrors are deleted")

	list, err := mirrors.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"taken"}, names, "secrets left in %s", to)
}

// A source created and changed at once is reconciled twice in a row; the
// second pass must see the mirror the first created. Without waiting for
// its own writes, the controller often does not: it creates the mirror
// again, the server refuses, and the controller reports a foreign secret
// where there is none. With the Tracker, never.
func TestReadYourWritesPreventsDoubleCreate(t *testing.T) {
	cluster := exampletest.Shared(t)
	cs := cluster.Client
	ctx := exampletest.Context(t)
	const secrets = 30
	doubleCreates := map[bool]int{}
	for _, staleReads := range []bool{true, false} {
		from, to := cluster.Namespace(t), cluster.Namespace(t)
		p := exampletest.Run(t, run, cluster.Config, options{From: from, To: to, Workers: 2, StaleReads: staleReads})
		p.EventuallyPrints("mirroring secrets")
		sources := cs.CoreV1().Secrets(from)
		for i := range secrets {
			name := fmt.Sprintf("s-%d", i)
			_, err := sources.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mirrorLabel: "true"}},
				Data:       map[string][]byte{"v": []byte("0")},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			for v := 1; v <= 2; v++ {
				_, err := sources.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"stringData":{"v":"%d"}}`, v), metav1.PatchOptions{})
				require.NoError(t, err)
			}
		}
		p.Eventually(func() bool {
			list, err := cs.CoreV1().Secrets(to).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			done := 0
			for _, s := range list.Items {
				if string(s.Data["v"]) == "2" {
					done++
				}
			}
			return done == secrets
		}, "every secret mirrored with its last value")
		doubleCreates[staleReads] = strings.Count(p.Output(), "a secret not labelled as a mirror has the name")
		p.Stop()
	}
	t.Logf("%d secrets created and changed twice at once: %d second creates without waiting for the controller's own writes, %d with the Tracker",
		secrets, doubleCreates[true], doubleCreates[false])
	assert.Zero(t, doubleCreates[false])
}
