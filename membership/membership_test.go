package membership_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers/membership"
	"github.com/kubetyped/informers/shard"
)

func TestAssign(t *testing.T) {
	thirds := shard.Split(3)
	tests := []struct {
		members  []string
		identity string
		want     []shard.Range
	}{
		{[]string{"b", "a", "c"}, "a", thirds[0:1]},
		{[]string{"c", "b", "a"}, "b", thirds[1:2]},
		{[]string{"a", "b", "c", "b"}, "c", thirds[2:3]},
		{[]string{"a"}, "a", []shard.Range{{}}},
		{[]string{"a", "b"}, "z", nil},
		{nil, "a", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, membership.Assign(tt.members, tt.identity), "%s among %v", tt.identity, tt.members)
	}
}

func TestNewRejects(t *testing.T) {
	_, err := membership.New(membership.Config{})
	assert.ErrorContains(t, err, "Client")
	_, err = membership.New(membership.Config{Client: &kubernetes.Clientset{}, Namespace: "ns", Group: "g"})
	assert.ErrorContains(t, err, "Identity")
	_, err = membership.New(membership.Config{Client: &kubernetes.Clientset{}, Namespace: "ns", Group: "g", Identity: "a",
		LeaseDuration: time.Second, RenewInterval: time.Second})
	assert.ErrorContains(t, err, "shorter")
}
