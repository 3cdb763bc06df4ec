package informers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// ResourceFor exposes resourceFor to the tests.
var ResourceFor = resourceFor

// WatchProtobuf exposes watchProtobuf to the tests, for built-in types.
func WatchProtobuf[T Object](ctx context.Context, req *rest.Request, kind string) (watch.Interface, error) {
	newT, ok := protobufDecoding[T]()
	if !ok {
		return nil, fmt.Errorf("%T does not decode from protobuf", *new(T))
	}
	return watchProtobuf(ctx, req, kind, newT)
}
