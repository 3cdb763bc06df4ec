package jsondec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/kubetyped/informers/internal/decoded"
)

// Error is an error decoding an object: what failed, at which field path
// (in JSON names) and at which offset of the input.
type Error struct {
	Type   reflect.Type // the object's type; nil for unstructured objects
	Path   string       // such as spec.containers[2].image
	Offset int          // of the value that failed, in bytes
	Err    error

	path decoded.FieldPath // Path, while unwinding
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("decoding JSON")
	if e.Type != nil {
		fmt.Fprintf(&b, " of %v", e.Type)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " at %s", e.Path)
	}
	fmt.Fprintf(&b, " (offset %d): %v", e.Offset, e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// errDuplicate reports a key met twice in one object of a struct.
var errDuplicate = errors.New("duplicate key")

// atOffset returns err as an *Error at offset i.
func atOffset(err error, i int) error {
	if _, ok := err.(*Error); ok || err == errDuplicate {
		return err
	}
	return &Error{Offset: i, Err: err}
}

// mismatch is the error of a value that does not fit its Go type.
func mismatch(b []byte, i int, n *node) error {
	what := "number"
	switch b[i] {
	case '"':
		what = "string"
	case '{':
		what = "object"
	case '[':
		what = "array"
	case 't', 'f':
		what = "bool"
	}
	return &Error{Offset: i, Err: fmt.Errorf("cannot unmarshal %s into a value of type %v", what, n.typ)}
}

// inField adds field name to the path of err.
func inField(err error, name string) error {
	if e, ok := err.(*Error); ok {
		e.path.Field(name)
	}
	return err
}

// inElement adds element k to the path of err.
func inElement(err error, k int) error {
	if e, ok := err.(*Error); ok {
		e.path.Element(k)
	}
	return err
}

// finish completes err, returned by the decoding of an object of type t.
func finish(err error, t reflect.Type) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	e.Type = t
	e.Path = e.path.String()
	e.path = decoded.FieldPath{}
	return e
}
