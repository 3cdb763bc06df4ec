package informers_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informers/internal/protodec"
	"github.com/kubetyped/informers/internal/watchstream"
)

// benchWireFloor returns the wire floor of a watch-list sync of resource
// gvr (objects of kind kind) in namespace ns: the same request as our
// informers make, its stream read, framed and unwrapped by the same
// decoder, but no object decoded and nothing cached. What a sync takes
// beyond it is the client's work on the objects; the floor itself is the
// server's work, the transport's and the decompression's, which any client
// of the same server pays.
func benchWireFloor(cs kubernetes.Interface, ns string, gvr schema.GroupVersionResource, kind string) func(context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		opts := metav1.ListOptions{
			Watch:                true,
			SendInitialEvents:    ptr.To(true),
			AllowWatchBookmarks:  true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		}
		req := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource(gvr.Resource).
			VersionedParams(&opts, scheme.ParameterCodec).UseProtobufAsDefault()
		w, err := watchstream.Watch(ctx, req, kind, func() *benchWireObject { return new(benchWireObject) })
		if err != nil {
			return nil, err
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			switch o := ev.Object.(type) {
			case *benchWireObject:
				if ev.Type == watch.Bookmark && o.initialEventsEnd {
					return func() {}, nil
				}
			case *metav1.Status:
				return nil, fmt.Errorf("watch-list of %s: %s", gvr.Resource, o.Message)
			}
		}
		return nil, fmt.Errorf("watch-list of %s ended before its initial events did", gvr.Resource)
	}
}

// benchWireObject is an object of which only one thing is decoded: whether
// it is the bookmark that ends a watch-list's initial events.
type benchWireObject struct{ initialEventsEnd bool }

func (o *benchWireObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o *benchWireObject) DeepCopyObject() runtime.Object   { c := *o; return &c }

// Unmarshal looks for the annotation that ends the initial events in
// metadata (field 1 of every object) and its annotations (field 12), whose
// entries hold a key (1) and a value (2), skipping everything else.
func (o *benchWireObject) Unmarshal(b []byte) error {
	return protodec.EachBytesField(b, func(num int32, meta []byte) error {
		if num != 1 {
			return nil
		}
		return protodec.EachBytesField(meta, func(num int32, entry []byte) error {
			if num != 12 {
				return nil
			}
			var key, value string
			err := protodec.EachBytesField(entry, func(num int32, v []byte) error {
				switch num {
				case 1:
					key = string(v)
				case 2:
					value = string(v)
				}
				return nil
			})
			if key == metav1.InitialEventsAnnotationKey && value == "true" {
				o.initialEventsEnd = true
			}
			return err
		})
	})
}
