package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/fleet"
	"github.com/kubetyped/informers/shard"
)

// Requests that a factory would serve with different informers get
// different fleet informers; requests a factory would serve with one get
// one, whatever their other options.
func TestInformerWithTellsRequestsApart(t *testing.T) {
	fl := newFleet(t)
	half := shard.Of(shard.ByUID, 0, 2)
	base := fleet.InformerWith(fl, informers.Options[*corev1.Pod]{})
	for name, opts := range map[string]informers.Options[*corev1.Pod]{
		"namespace":          {Tuning: informers.Tuning{Namespace: informers.Set("a")}},
		"labels":             {LabelSelector: "app=web"},
		"fields":             {FieldSelector: "spec.nodeName=n"},
		"namespace selector": {Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a")}},
		"namespace mode":     {Tuning: informers.Tuning{NamespaceSelector: informers.Set("team=a"), NamespaceMode: informers.Set(informers.NamespaceModePerNamespace)}},
		"shard":              {Shard: &half},
		"name":               {Name: "mine"},
	} {
		t.Run(name, func(t *testing.T) {
			inf := fleet.InformerWith(fl, opts)
			assert.NotSame(t, base, inf)
			assert.Same(t, inf, fleet.InformerWith(fl, opts), "the same request, the same informer")
		})
	}
	other := shard.Of(shard.ByUID, 1, 2)
	assert.NotSame(t, fleet.InformerWith(fl, informers.Options[*corev1.Pod]{Shard: &half}), fleet.InformerWith(fl, informers.Options[*corev1.Pod]{Shard: &other}))
	sameHalf := half
	assert.Same(t, fleet.InformerWith(fl, informers.Options[*corev1.Pod]{Shard: &half}), fleet.InformerWith(fl, informers.Options[*corev1.Pod]{Shard: &sameHalf}))
	assert.Same(t, base, fleet.InformerWith(fl, informers.Options[*corev1.Pod]{Tuning: informers.Tuning{ResyncPeriod: informers.Set[time.Duration](1)}}), "other options are the first request's")
}
