// Package protodec decodes the protobuf of Kubernetes API types (every type
// of client-go's scheme, and metav1.PartialObjectMetadata) straight into
// the objects an informer caches, sharing as it decodes.
//
// It interprets plans made once per type from the types' `protobuf:`
// struct tags (plan.go), reading the wire as the generated Unmarshal
// methods read it, quirks included (wire.go), so that it decodes what they
// decode and fails where they fail; the types whose encoding is written by
// hand (metav1.Time, MicroTime, FieldsV1, resource.Quantity) have codecs of
// their own (codecs.go). While decoding, a string met before at the same
// place is taken from a table by its bytes, and a repeated part (a slice, a
// map, a message held by pointer, a list element) by the hashes of its
// encoding, without decoding it again (decoder.go; the places and
// tables are internal/share's). Fields can be skipped, never decoded (paths.go),
// or cleared in objects decoded elsewhere (clear.go).
package protodec
