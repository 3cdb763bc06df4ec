package protodec

import (
	"fmt"
	"reflect"

	"github.com/kubetyped/informers/internal/decoded"
)

// Error is an error decoding an object: of which type, at which field
// path (in JSON names), and why.
type Error struct {
	Type reflect.Type // the object's type
	Path string       // such as spec.containers[0].resources.limits.cpu
	Err  error

	path decoded.FieldPath // Path, while unwinding
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("decoding protobuf of %v: %v", e.Type, e.Err)
	}
	return fmt.Sprintf("decoding protobuf of %v at %s: %v", e.Type, e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// inField adds field f, in which err happened, to the path of err; an
// inline field, which JSON does not name, adds nothing.
func inField(err error, f *field) error {
	if f.json == "" {
		return err
	}
	return inKey(err, f.json)
}

// inKey adds field or map key name to the path of err.
func inKey(err error, name string) error {
	e := asError(err)
	e.path.Field(name)
	return e
}

// inElement adds element k of a repeated field to the path of err.
func inElement(err error, k int) error {
	e := asError(err)
	e.path.Element(k)
	return e
}

// asError returns err as an *Error.
func asError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Err: err}
}

// finish completes err, returned by the decoding of an object of type t;
// nil stays nil.
func finish(err error, t reflect.Type) error {
	if err == nil {
		return nil
	}
	e := asError(err)
	e.Type = t
	e.Path = e.path.String()
	e.path = decoded.FieldPath{}
	return e
}
