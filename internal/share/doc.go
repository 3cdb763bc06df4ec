// Package share holds the sharing tables of the decoders and of the
// interner: how a place of a type (a field path, such as
// spec.containers[].image; the decoders' tree of them is Place, place.go)
// remembers the values met there, to hand out the
// one it remembers when an equal value comes again, and how it judges on
// its own whether that is worth it.
//
// The policy is one for every user (policy.go): a place counts its lookups
// in windows; one that hits too seldom (names, UIDs, addresses) turns
// itself off; places go so deep, and the keys of a map have places of
// their own up to a bound. Tables are bounded and set-associative (table.go), so values
// of high cardinality replace each other instead of growing them. Strings,
// byte slices and numbers are found by their bytes and compared in full;
// larger values (slices, maps, structs held by pointer) by two hashes of
// their encoding and its length (lookup.go). A decoder holds a Sharing
// (sharing.go): whether it shares, and its Hasher.
package share
