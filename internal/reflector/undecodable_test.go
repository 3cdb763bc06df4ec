package reflector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// badObject is an object a decoder could not decode, as the library's
// decoders hand one over: in a watch event, or beside a list's items.
type badObject struct {
	metav1.ObjectMeta
}

func (b *badObject) Error() string { return "cannot decode " + b.Name }
func (b *badObject) Identity() (string, string, types.UID, string) {
	return b.Namespace, b.Name, b.UID, b.ResourceVersion
}
func (b *badObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (b *badObject) DeepCopyObject() runtime.Object   { c := *b; return &c }

func bad(name, rv string) *badObject {
	return &badObject{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// podListWithBad is a pod list with items that did not decode.
type podListWithBad struct {
	corev1.PodList
	bad []Undecodable
}

func (l *podListWithBad) UndecodableItems() []Undecodable { return l.bad }

// An object that does not decode costs no other object its place: a list
// hands the sink every item that decoded and names the one that did not;
// a watch event of it is handed on, and the stream goes on past it, its
// version counted.
func TestUndecodableObjectsAreContained(t *testing.T) {
	watches := make(chan *watch.FakeWatcher, 1)
	sink := newSink()
	r := New[*corev1.Pod, *podListWithBad](Config[*podListWithBad]{
		Description: "pods",
		List: func(context.Context, metav1.ListOptions) (*podListWithBad, error) {
			return &podListWithBad{PodList: *podList("10", "", "a", "c"), bad: []Undecodable{bad("b", "9")}}, nil
		},
		Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(10, false)
			watches <- w
			return w, nil
		},
		Backoff: &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30},
	}, sink)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	w := <-watches
	<-sink.synced
	w.Modify(bad("b", "11"))
	w.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "d", ResourceVersion: "12"}})
	w.Delete(bad("b", "13"))
	require.Eventually(t, func() bool { return r.LastSyncResourceVersion() == "13" }, wait.ForeverTestTimeout, time.Millisecond)
	assert.Equal(t, []string{"start", "undecodable b@9", "put a", "put c", "finish", "undecodable b@11", "put d", "undecodable-delete b@13"}, sink.get())
}
