// Package store is the typed, indexed object cache behind an informer.
//
// A Store[T] holds one object per namespace/name key and keeps every object
// in flat buckets: one bucket with all objects, one per namespace, and one per
// value of each added index. A bucket is a slice of T, so listing a namespace
// or an index value is a single copy under a read lock, and an update that
// keeps an object's index values replaces it in place with no allocation.
//
// Objects are shared, not copied: callers must treat what they get as
// read-only.
package store
