// Package viewcheck checks a view, a Go struct of some of a resource's
// fields under their JSON names, against the type it projects: the
// scheme's Go type of the resource (Schema.FromGo) or the schema the API
// server publishes for it in OpenAPI v3 (ParseOpenAPI). Both become a
// Schema, a tree of JSON kinds and field names, and Check walks the view
// against it: a field the schema has not, or of a JSON kind the view's Go
// type cannot be decoded from, is an *Error naming the field, the view
// and the schema's type. A part of the schema that says nothing of its
// fields (x-kubernetes-preserve-unknown-fields, an untyped schema, a Go
// type with a JSON of its own that the check does not know) cannot be
// checked: Check reports the fields that fall there as unchecked.
package viewcheck
