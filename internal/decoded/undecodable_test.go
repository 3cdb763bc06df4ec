package decoded

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// An Undecodable says which object did not decode, where and why, and
// can travel as a watch event's object.
func TestUndecodable(t *testing.T) {
	cause := errors.New("cannot unmarshal string into a value of type int")
	for _, tc := range []struct {
		u    *Undecodable
		want string
	}{
		{&Undecodable{Namespace: "shop", Name: "w2", UID: "u-2", ResourceVersion: "77", Path: "spec.size", Err: cause},
			"object shop/w2 (uid u-2, resourceVersion 77) does not decode at spec.size: cannot unmarshal string into a value of type int"},
		{&Undecodable{Name: "cluster-wide", UID: "u-3", ResourceVersion: "8", Err: cause},
			"object cluster-wide (uid u-3, resourceVersion 8) does not decode: cannot unmarshal string into a value of type int"},
	} {
		assert.EqualError(t, tc.u, tc.want)
		assert.ErrorIs(t, tc.u, cause)
		assert.Equal(t, schema.GroupVersionKind{}, tc.u.GetObjectKind().GroupVersionKind())
		ns, name, uid, rv := tc.u.Identity()
		assert.Equal(t, []string{tc.u.Namespace, tc.u.Name, string(tc.u.UID), tc.u.ResourceVersion}, []string{ns, name, string(uid), rv})
		c := tc.u.DeepCopyObject()
		require.IsType(t, &Undecodable{}, c)
		assert.NotSame(t, tc.u, c)
		assert.Equal(t, tc.u, c)
		var obj runtime.Object = tc.u
		ev := watch.Event{Type: watch.Modified, Object: obj}
		got, ok := ev.Object.(error)
		require.True(t, ok)
		assert.Equal(t, tc.want, got.Error())
	}
}

// A list's deep copy copies its items and its undecodable items.
func TestListDeepCopy(t *testing.T) {
	l := &List[*corev1.Pod]{
		ListMeta:    metav1.ListMeta{ResourceVersion: "5"},
		Items:       []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
		Undecodable: []*Undecodable{{Name: "b", Path: "spec"}},
	}
	c := l.DeepCopyObject().(*List[*corev1.Pod])
	assert.Equal(t, l, c)
	assert.NotSame(t, l.Items[0], c.Items[0])
	assert.NotSame(t, l.Undecodable[0], c.Undecodable[0])
	assert.Nil(t, (&List[*corev1.Pod]{}).DeepCopyObject().(*List[*corev1.Pod]).Undecodable)
}

// A field path reads outermost first, whatever order it was built in.
func TestFieldPath(t *testing.T) {
	var p FieldPath
	assert.Empty(t, p.String())
	p.Field("cpu")
	p.Field("limits")
	p.Field("resources")
	p.Element(2)
	p.Field("containers")
	p.Field("spec")
	assert.Equal(t, "spec.containers[2].resources.limits.cpu", p.String())
}
