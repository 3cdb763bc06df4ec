package informers_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubetyped/informers"
)

func TestLister(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src,
		pod("a", "web-0", map[string]string{"app": "web"}),
		pod("a", "web-1", map[string]string{"app": "web"}),
		pod("a", "db-0", map[string]string{"app": "db"}),
		pod("b", "web-0", map[string]string{"app": "web"}),
	)
	inf := runSynced(t, src)
	l := inf.Lister()
	web := labels.SelectorFromSet(labels.Set{"app": "web"})

	tests := []struct {
		name string
		got  func() []*corev1.Pod
		want []string
	}{
		{"all", func() []*corev1.Pod { return l.List(labels.Everything()) }, []string{"a/db-0", "a/web-0", "a/web-1", "b/web-0"}},
		{"nil selector", func() []*corev1.Pod { return l.List(nil) }, []string{"a/db-0", "a/web-0", "a/web-1", "b/web-0"}},
		{"selector", func() []*corev1.Pod { return l.List(web) }, []string{"a/web-0", "a/web-1", "b/web-0"}},
		{"namespace", func() []*corev1.Pod { return l.Namespace("a").List(labels.Everything()) }, []string{"a/db-0", "a/web-0", "a/web-1"}},
		{"namespace and selector", func() []*corev1.Pod { return l.Namespace("a").List(web) }, []string{"a/web-0", "a/web-1"}},
		{"empty namespace", func() []*corev1.Pod { return l.Namespace("zzz").List(nil) }, []string{}},
		{"all iterator", func() []*corev1.Pod { return slices.Collect(l.All()) }, []string{"a/db-0", "a/web-0", "a/web-1", "b/web-0"}},
		{"select iterator", func() []*corev1.Pod { return slices.Collect(l.Select(web)) }, []string{"a/web-0", "a/web-1", "b/web-0"}},
		{"namespace iterator", func() []*corev1.Pod { return slices.Collect(l.Namespace("b").All()) }, []string{"b/web-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, names(tt.got()))
		})
	}

	p, err := l.Namespace("b").Get("web-0")
	require.NoError(t, err)
	assert.Equal(t, "b", p.Namespace)
	_, err = l.Namespace("b").Get("nope")
	require.True(t, apierrors.IsNotFound(err))
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, "pods", status.Status().Details.Kind)
	_, err = l.Get("web-0")
	assert.ErrorAs(t, err, new(*informers.ScopeError), "cluster-scoped Get does not see namespaced objects")
	assert.Equal(t, 4, l.Len())
	nsIndex, ok := inf.Index(informers.NamespaceIndex)
	require.True(t, ok)
	nss := nsIndex.Values()
	slices.Sort(nss)
	assert.Equal(t, []string{"a", "b"}, nss)
	assert.Len(t, nsIndex.List("a"), 3)
	_, ok = inf.Index("nope")
	assert.False(t, ok)
	assert.Equal(t, 3, l.Namespace("a").Len())

	// Stopping early releases the buffer; reading inside the loop is fine.
	n := 0
	for p := range l.All() {
		_, err := l.Namespace(p.Namespace).Get(p.Name)
		require.NoError(t, err)
		n++
		if n == 2 {
			break
		}
	}
	assert.Equal(t, 2, n)
}

// Get in the wrong scope says so instead of answering NotFound for an
// object that is cached.
func TestListerWrongScope(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, pod("a", "web", nil))
	inf := runSynced(t, src)

	_, err := inf.Lister().Get("web")
	var scope *informers.ScopeError
	require.ErrorAs(t, err, &scope)
	assert.True(t, scope.Namespaced)
	assert.Contains(t, err.Error(), "use Lister().Namespace(ns).Get")
	assert.False(t, apierrors.IsNotFound(err))

	_, err = inf.Lister().Namespace("b").Get("web")
	assert.True(t, apierrors.IsNotFound(err), "a namespace without the object: NotFound")
}
