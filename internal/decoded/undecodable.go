package decoded

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Undecodable is an object that the client could not decode into its Go
// type, named by its metadata, decoded alone: a custom resource whose
// stored JSON does not fit the type (a string where the type has an int,
// as x-kubernetes-preserve-unknown-fields allows, or a schema changed
// since), a quantity that does not parse. A list whose items hold one
// decodes the others and names it in List.Undecodable; a watch event
// whose object is one carries it as its Object, with the event's own
// type, and the stream goes on. An object whose metadata cannot be read
// either, or that has no name, cannot be named: it fails its list or its
// stream, as malformed bytes do.
//
// It is an error, and a runtime.Object so that a watch.Event can carry
// it.
type Undecodable struct {
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	// Path is the field path where decoding failed, in JSON names, such
	// as spec.size or spec.containers[0].resources.limits.cpu; "" where
	// the decoder does not know it.
	Path string
	// Err is why the object did not decode.
	Err error
}

var _ runtime.Object = (*Undecodable)(nil)

// Error names the object, where its decoding failed, and why.
func (u *Undecodable) Error() string {
	var b strings.Builder
	b.WriteString("object ")
	if u.Namespace != "" {
		b.WriteString(u.Namespace)
		b.WriteByte('/')
	}
	b.WriteString(u.Name)
	b.WriteString(" (uid ")
	b.WriteString(string(u.UID))
	b.WriteString(", resourceVersion ")
	b.WriteString(u.ResourceVersion)
	b.WriteString(") does not decode")
	if u.Path != "" {
		b.WriteString(" at ")
		b.WriteString(u.Path)
	}
	if u.Err != nil {
		b.WriteString(": ")
		b.WriteString(u.Err.Error())
	}
	return b.String()
}

// Identity returns what the object's metadata says, which decoded.
func (u *Undecodable) Identity() (namespace, name string, uid types.UID, resourceVersion string) {
	return u.Namespace, u.Name, u.UID, u.ResourceVersion
}

// Unwrap returns why the object did not decode.
func (u *Undecodable) Unwrap() error { return u.Err }

// GetObjectKind returns an empty kind: an Undecodable is of no API kind.
func (u *Undecodable) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a copy of u, which shares its Err: errors are not
// changed once made.
func (u *Undecodable) DeepCopyObject() runtime.Object {
	c := *u
	return &c
}
