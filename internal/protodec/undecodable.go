package protodec

import (
	"errors"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers/internal/decoded"
)

var objectMetaPlan = planFor(reflect.TypeFor[metav1.ObjectMeta]())

// The numbers of the fields of metav1.ObjectMeta that name an object.
var (
	nameField            = objectMetaPlan.lookup("name")[0].num
	namespaceField       = objectMetaPlan.lookup("namespace")[0].num
	uidField             = objectMetaPlan.lookup("uid")[0].num
	resourceVersionField = objectMetaPlan.lookup("resourceVersion")[0].num
)

// metadataField returns the number of the field of m, "metadata", that
// holds a metav1.ObjectMeta; 0 if m has none.
func metadataField(m *message) int32 {
	if chain := m.lookup("metadata"); len(chain) == 1 && chain[0].kind == kMessage && chain[0].msg == objectMetaPlan {
		return chain[0].num
	}
	return 0
}

// undecodable returns the decoded.Undecodable of the object encoded in b,
// which failed to decode with err: named by its metadata, read alone
// (its name, namespace, UID and resource version, as the generated code
// merges them if the metadata comes more than once), with the field path
// where it failed. It returns nil if the object's type has no metadata,
// if its fields do not parse, or if they name no object.
func (dec *Decoder) undecodable(b []byte, err error) *decoded.Undecodable {
	if dec.metadata == 0 {
		return nil
	}
	u := &decoded.Undecodable{Err: err}
	perr := EachBytesField(b, func(num int32, meta []byte) error {
		if num != dec.metadata {
			return nil
		}
		return EachBytesField(meta, func(num int32, v []byte) error {
			switch num {
			case nameField:
				u.Name = string(v)
			case namespaceField:
				u.Namespace = string(v)
			case uidField:
				u.UID = types.UID(v)
			case resourceVersionField:
				u.ResourceVersion = string(v)
			}
			return nil
		})
	})
	if perr != nil || u.Name == "" {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		u.Path = e.Path
	}
	return u
}

// orUndecodable returns err, the failure to decode the object encoded in
// b, as its decoded.Undecodable if it can be named (undecodable).
func (dec *Decoder) orUndecodable(b []byte, err error) error {
	if u := dec.undecodable(b, err); u != nil {
		return u
	}
	return err
}
