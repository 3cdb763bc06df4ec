// Package jsondec decodes JSON objects (custom resources, and built-in
// types when the server answers in JSON) straight into the objects an
// informer caches, as apimachinery decodes them (sigs.k8s.io/json,
// UnmarshalCaseSensitivePreserveInts), sharing as it decodes.
//
// It interprets plans made once per type from the types' `json:` struct
// tags (plan.go), with encoding/json's rules for embedded structs and
// names in conflict. Input is first checked by a validator that accepts
// exactly what encoding/json's scanner accepts (valid.go), so that it
// fails where apimachinery fails; the decoder then reads trusted bytes
// (scan.go, decode.go). Types with their own
// UnmarshalJSON get their bytes (metav1.Time by a fast path); the few
// shapes the plans leave out, and objects with a key twice, are decoded
// by sigs.k8s.io/json itself. While decoding, a string met before at the
// same place is taken from a table by its bytes, and a repeated part (a
// map, a slice, a struct held by pointer, an interface{} object) by the
// hashes of its encoding, without decoding it again (decoder.go,
// with the places and tables of internal/share); a value that repeats
// within one object (its name in its parts' names, a source in its spec
// and its history) is shared there too (share.Local). Errors name the field
// path and the offset (errors.go). Lists and watch events are read in
// one pass (list.go); EventDecoder and UnstructuredEventDecoder decode the
// objects of watch events for internal/watchstream (event.go).
package jsondec
