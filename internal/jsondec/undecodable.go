package jsondec

import (
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"

	"github.com/kubetyped/informers/internal/decoded"
)

// objectNames is the metadata that names an object.
type objectNames struct {
	Metadata struct {
		Namespace       string    `json:"namespace"`
		Name            string    `json:"name"`
		UID             types.UID `json:"uid"`
		ResourceVersion string    `json:"resourceVersion"`
	} `json:"metadata"`
}

// undecodable returns the decoded.Undecodable of the object b, valid JSON,
// which failed to decode with err: named by its metadata, decoded alone,
// with the field path where it failed. It returns nil if the metadata
// does not decode either, or names no object.
func undecodable(b []byte, err error) *decoded.Undecodable {
	var names objectNames
	if sigsjson.UnmarshalCaseSensitivePreserveInts(b, &names) != nil || names.Metadata.Name == "" {
		return nil
	}
	m := names.Metadata
	return &decoded.Undecodable{Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Path: pathOf(err), Err: err}
}

// pathOf returns the field path where err, an error decoding an object,
// happened; "" if it does not say.
func pathOf(err error) string {
	if e, ok := errors.AsType[*Error](err); ok && e.Path != "" {
		return e.Path
	}
	// Objects with a key twice are decoded by sigs.k8s.io/json, whose
	// errors name the field themselves.
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return e.Field
	}
	return ""
}

// orUndecodable returns err, the failure to decode the object b (valid
// JSON), as its decoded.Undecodable if it can be named (undecodable).
func orUndecodable(b []byte, err error) error {
	if u := undecodable(b, err); u != nil {
		return u
	}
	return err
}
