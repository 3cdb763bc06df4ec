package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/internal/testutil"
)

// nodeView is a view of pods: their metadata and node.
type nodeView struct {
	informers.ViewMeta `json:"metadata"`
	Spec               struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

func (v *nodeView) DeepCopyObject() runtime.Object { return informers.DeepCopyView(v) }

// A fleet serves views as it serves full types: on every cluster, with
// keys that carry the cluster and indexes across clusters.
func TestFleetOfViews(t *testing.T) {
	testutil.NoLeaks(t)
	ctx := waitCtx(t)
	east := newTestCluster(t, pod("shop", "web-0", "n1"), pod("shop", "web-1", "n2"))
	west := newTestCluster(t, pod("shop", "web-0", "n1"))
	fl := newFleet(t)
	views := fleet.InformerWith(fl, informers.Options[*nodeView]{Resource: corev1.SchemeGroupVersion.WithResource("pods")})
	byNode, err := views.AddIndex("node", func(v *nodeView) []string { return []string{v.Spec.NodeName} })
	require.NoError(t, err)
	require.NoError(t, fl.Attach(ctx, "east", east.cluster()))
	require.NoError(t, fl.Attach(ctx, "west", west.cluster()))
	require.NoError(t, informers.WaitForSync(ctx, fl))

	assert.Equal(t, 3, views.Lister().Len())
	v, err := views.Lister().Get(fleet.Key{Cluster: "east", Namespace: "shop", Name: "web-1"})
	require.NoError(t, err)
	assert.Equal(t, "n2", v.Spec.NodeName)
	var onN1 []string
	for cluster, v := range byNode.All("n1") {
		onN1 = append(onN1, fleet.KeyOf(cluster, v).String())
	}
	assert.ElementsMatch(t, []string{"east|shop/web-0", "west|shop/web-0"}, onN1)

	_, err = west.pods.Update(pod("shop", "web-0", "n3"))
	require.NoError(t, err)
	eventually(t, func() bool {
		v, err := views.Lister().Get(fleet.Key{Cluster: "west", Namespace: "shop", Name: "web-0"})
		return err == nil && v.Spec.NodeName == "n3"
	}, "the update reached west's view")
}
