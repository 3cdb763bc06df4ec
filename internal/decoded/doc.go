// Package decoded holds what the library's decoders (internal/protodec for
// protobuf, internal/jsondec for JSON) hand out alike, whatever the wire
// format: the page of a list they decode (List), the function that
// decodes the object of a watch event (EventFunc), which
// internal/watchstream calls for either format, an object that does not
// decode into its Go type, named by its metadata (Undecodable), with the
// field path where it failed (FieldPath), and the buffers that list
// responses are read into (Bodies). Those who call the decoders
// (internal/apiclient, the adapter package) depend on this package rather
// than on one decoder's.
package decoded
