package informers

import "github.com/kubetyped/informers/internal/apiclient"

// SchemaCheck says whether an informer's view is checked against the type
// it projects (Tuning.SchemaCheck).
//
// By default (SchemaCheckDefault) a view is checked against the scheme's
// Go type of its resource, protobuf or JSON-only, when InformerWith is
// called, and otherwise, for a resource the scheme does not know (a CRD's
// custom resources, or CustomResourceDefinitions with apiextensions not
// registered), against the OpenAPI v3 schema the server publishes for it,
// before its first list: at /openapi/v3/apis/<group>/<version>, read once
// per version of the schema, which the server names by its hash, and
// read again when the hash changes (asked at every list and every watch,
// and when an object does not decode into the view). Field names and
// JSON kinds are checked; a field the schema says nothing of
// (x-kubernetes-preserve-unknown-fields, an untyped schema) is reported
// unchecked in InformerStats.SchemaCheck, not refused. A mismatch is an
// error of InformerWith when the Go type is known then, and otherwise
// the error of the informer's lists (LastError, WaitForSync, and
// ReadyCheck, which fails while it lasts). Where no schema can be had (a
// 403 on /openapi/v3, an aggregated API that publishes none), the
// informer runs unchecked, says so once in its log and in
// InformerStats.SchemaCheck. SchemaCheckRequire makes that an error of
// its lists instead; SchemaCheckSkip checks nothing decoding does not need
// (a view of a built-in type is planned from its Go type, and so is
// always checked). Informers that are not views are not checked. See
// docs/memory.md.
type SchemaCheck uint8

const (
	// SchemaCheckDefault checks a view where a schema can be had, and
	// runs it unchecked, saying so, where none can.
	SchemaCheckDefault SchemaCheck = iota
	// SchemaCheckRequire fails the informer's lists where no schema can
	// be had.
	SchemaCheckRequire
	// SchemaCheckSkip never checks a view against a schema.
	SchemaCheckSkip
)

// mode returns the internal mode of s.
func (s SchemaCheck) mode() apiclient.SchemaMode {
	switch s {
	case SchemaCheckRequire:
		return apiclient.SchemaRequire
	case SchemaCheckSkip:
		return apiclient.SchemaSkip
	}
	return apiclient.SchemaDefault
}
