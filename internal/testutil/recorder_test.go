package testutil_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/internal/testutil"
)

func TestRecorder(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, ResourceVersion: rv}}
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "a", Name: name} }
	tests := []struct {
		name  string
		event func(h informers.Handler[*corev1.Pod])
		want  string
	}{
		{"initial add", func(h informers.Handler[*corev1.Pod]) { h.HandleAdd(pod("x", "1"), true) }, "add a/x initial"},
		{"add", func(h informers.Handler[*corev1.Pod]) { h.HandleAdd(pod("x", "1"), false) }, "add a/x"},
		{"update", func(h informers.Handler[*corev1.Pod]) { h.HandleUpdate(pod("x", "3"), pod("x", "4")) }, "update a/x 3->4"},
		{"delete", func(h informers.Handler[*corev1.Pod]) {
			h.HandleDelete(informers.Deleted[*corev1.Pod]{Key: key("x"), Object: pod("x", "4")})
		}, "delete a/x"},
		{"delete missed, out of the shard", func(h informers.Handler[*corev1.Pod]) {
			h.HandleDelete(informers.Deleted[*corev1.Pod]{Key: key("x"), Object: pod("x", "4"), FinalStateUnknown: true, LeftShard: true})
		}, "delete a/x unknown left"},
		{"delete of another object", func(h informers.Handler[*corev1.Pod]) {
			h.HandleDelete(informers.Deleted[*corev1.Pod]{Key: key("x"), Object: pod("y", "4")})
		}, "delete a/x WRONG-OBJECT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &testutil.Recorder[*corev1.Pod]{}
			tt.event(rec)
			assert.Equal(t, []string{tt.want}, rec.List())
			assert.True(t, rec.Has(tt.want))
			assert.False(t, rec.Has("add a/z"))
		})
	}
}

func TestEventsListIsACopy(t *testing.T) {
	var e testutil.Events
	e.Record("a")
	got := e.List()
	got[0] = "changed"
	e.Record("b")
	assert.Equal(t, []string{"a", "b"}, e.List())
}
