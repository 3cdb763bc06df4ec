package informers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

var replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind()

// ownedPod is a pod in ns controlled by the ReplicaSet owner, if set.
func ownedPod(ns, name, owner string) *corev1.Pod {
	p := pod(ns, name, nil)
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-a-controller"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, Controller: ptr.To(true)},
		}
	}
	return p
}

// drain returns the keys queued in q, without waiting.
func drain[K comparable](q workqueue.TypedInterface[K]) []K {
	var keys []K
	for q.Len() > 0 {
		k, _ := q.Get()
		keys = append(keys, k)
		q.Done(k)
	}
	return keys
}

func TestEnqueueHandlers(t *testing.T) {
	src := newPodSource()
	mustAdd(t, src, ownedPod("a", "web-1", "web"), ownedPod("b", "web-1", "web"), ownedPod("a", "lone", ""))
	inf, err := informers.NewInformer(src.ListWatch(""), informers.Options[*corev1.Pod]{
		Tuning:   informers.Tuning{Backoff: informers.Set(fastBackoff)},
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{"controller": informers.IndexByController[*corev1.Pod](replicaSetKind)},
	})
	require.NoError(t, err)
	self := workqueue.NewTyped[types.NamespacedName]()
	owners := workqueue.NewTyped[types.NamespacedName]()
	nodes := workqueue.NewTyped[string]()
	t.Cleanup(func() { self.ShutDown(); owners.ShutDown(); nodes.ShutDown() })
	regs := make([]informers.Syncer, 0, 4)
	for _, h := range []informers.Handler[*corev1.Pod]{
		informers.Enqueue[*corev1.Pod](self),
		informers.EnqueueOwner[*corev1.Pod](owners, replicaSetKind),
		informers.EnqueueMapped(nodes, func(p *corev1.Pod) []string {
			if p.Spec.NodeName == "" {
				return nil
			}
			return []string{p.Spec.NodeName}
		}),
	} {
		reg, err := inf.AddHandler(h)
		require.NoError(t, err)
		regs = append(regs, reg)
	}
	testutil.Run(t, inf)
	ctx := testutil.Context(t, 10*time.Second)
	require.NoError(t, informers.WaitForSync(ctx, append(regs, inf)...))

	assert.ElementsMatch(t, []types.NamespacedName{{Namespace: "a", Name: "web-1"}, {Namespace: "b", Name: "web-1"}, {Namespace: "a", Name: "lone"}}, drain(self))
	assert.ElementsMatch(t, []types.NamespacedName{{Namespace: "a", Name: "web"}, {Namespace: "b", Name: "web"}}, drain(owners),
		"owners are namespace-qualified; the pod without a controller enqueues nothing")

	// The owner index: namespace-qualified values.
	idx, ok := inf.Index("controller")
	require.True(t, ok)
	assert.Equal(t, []string{"a/web-1"}, names(idx.List("a/web")))

	// An update that moves a pod to a node enqueues the node; one that
	// moves it off enqueues it again (the old object's key).
	moved := ownedPod("a", "lone", "")
	moved.Spec.NodeName = "n1"
	_, err = src.Update(moved)
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return nodes.Len() == 1 && self.Len() == 1 }, "node and pod enqueued")
	assert.Equal(t, []string{"n1"}, drain(nodes))
	assert.Equal(t, []types.NamespacedName{{Namespace: "a", Name: "lone"}}, drain(self))
	_, err = src.Delete("a", "lone")
	require.NoError(t, err)
	testutil.Eventually(t, func() bool { return self.Len() == 1 && nodes.Len() == 1 }, "the delete enqueues the pod and its node")
	assert.Equal(t, []types.NamespacedName{{Namespace: "a", Name: "lone"}}, drain(self))
	assert.Equal(t, []string{"n1"}, drain(nodes))
}

func TestKeyOfAndControllerOf(t *testing.T) {
	p := ownedPod("a", "web-1", "web")
	assert.Equal(t, types.NamespacedName{Namespace: "a", Name: "web-1"}, informers.KeyOf(p))
	key, ok := informers.ControllerOf(p, replicaSetKind)
	require.True(t, ok)
	assert.Equal(t, "a/web", key.String())
	_, ok = informers.ControllerOf(p, appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind())
	assert.False(t, ok, "another kind")
	_, ok = informers.ControllerOf(ownedPod("a", "x", ""), replicaSetKind)
	assert.False(t, ok, "no controller")
}

// Nil inputs are errors, not panics.
func TestNilInputs(t *testing.T) {
	var nilInformer *informers.SharedInformer[*corev1.Pod]
	err := informers.WaitForSync(context.Background(), nilInformer, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "syncer 0 is nil")
	assert.Contains(t, err.Error(), "syncer 1 is nil")
	assert.ErrorContains(t, informers.Informer[*corev1.Pod](nil).LastError(), "nil Factory")
}
