package informers

import (
	"fmt"
	"runtime/debug"
)

// TransformFunc changes an object before the informer stores it. It may
// modify obj in place: the informer owns objects fresh from the server.
// It runs on the informer's event path, so keep it cheap.
//
// It may change anything, the name and namespace included: as in
// client-go, the object is then cached, listed and handed to handlers
// under its new key. The new key must follow from the object's name and
// namespace alone, and distinct objects must keep distinct keys, or one
// replaces another in the cache until the next relist. An error, a panic
// or a nil result leaves the object's last good state cached and is
// reported as a *TransformError.
type TransformFunc[T Object] func(obj T) (T, error)

// apply runs f, turning a panic into an error.
func (f TransformFunc[T]) apply(obj T) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("transform panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return f(obj)
}

// StripManagedFields returns a transform that drops metadata.managedFields,
// which often makes up a fifth to two fifths of a cached object and which
// controllers rarely read.
func StripManagedFields[T Object]() TransformFunc[T] {
	return func(obj T) (T, error) {
		obj.SetManagedFields(nil)
		return obj, nil
	}
}

// Chain returns a transform that applies fs in order.
func Chain[T Object](fs ...TransformFunc[T]) TransformFunc[T] {
	return func(obj T) (T, error) {
		var err error
		for _, f := range fs {
			if obj, err = f(obj); err != nil {
				return obj, err
			}
		}
		return obj, nil
	}
}
