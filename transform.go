package informers

import (
	"fmt"
	"runtime/debug"
)

// TransformFunc changes an object before the informer stores it. It may
// modify obj in place: the informer owns objects fresh from the server.
// It runs on the informer's event path, so keep it cheap.
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
