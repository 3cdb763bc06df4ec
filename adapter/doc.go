// Package adapter is for the authors of adapters that run another
// framework on the library's informers, such as the controller-runtime
// cache of github.com/kubetyped/informers/controllerruntime: it builds the
// list and watch functions of requests the adapter makes itself, decoded
// by the library's decoders as a Factory's informers decode theirs.
// Applications do not need it: a Factory does all of this for its
// informers.
//
// An adapter released as a module of its own depends on this package, the
// library's exported API, and never on the library's internal packages:
// Go's module selection may pair the adapter with a newer version of the
// library than the one it was built against, and only the exported API
// keeps its promises across versions.
//
//   - NewDecoder and NewUnstructuredDecoder make the decoder of one Go
//     type's objects: protobuf for built-in types and
//     metav1.PartialObjectMetadata, JSON for custom resources with a Go
//     type, JSON for unstructured objects. Objects it decodes share their
//     equal strings and parts; make one per informer and share it between
//     the list-watches of its namespaces.
//   - NewViewDecoder makes the decoder of a view (see the informers
//     package's ViewMeta) of a resource, given the Go type of the
//     resource's kind if the adapter knows it: protobuf by a plan of
//     both types for built-in types, JSON by the view's own plan.
//   - ListWatch builds an informers.ListWatch over the adapter's requests,
//     decoding with a Decoder (or without one, by client-go's codecs and
//     the generated code).
//   - Undecodable returns the objects a list left out because they do not
//     decode into their Go type (a custom resource whose stored JSON does
//     not fit it), each an error that names the object; a watch event
//     whose object does not decode carries such an error as its Object.
//   - NewClearer zeroes the fields a Decoder skips in objects decoded by
//     other means, so that they read alike.
package adapter
