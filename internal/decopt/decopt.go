// Package decopt holds the options every decoder of the library takes
// (Options) and what the decoders do alike with them: the fields an
// informer needs, which no path to skip may name, and the checking of the
// dotted paths that name the others. How a path is followed is each
// decoder's own: through its plans, or through the maps and lists of
// unstructured objects.
package decopt

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Options configure a decoder.
type Options struct {
	// Share interns strings and shares repeated parts between the
	// objects decoded (see internal/share).
	Share bool
	// Skip names fields never decoded, by dotted JSON paths such as
	// metadata.managedFields or spec.containers.env: they stay zero.
	Skip []string
}

// kept are the fields an informer needs: its keys, versions and UIDs.
// They, and the paths that hold them, cannot be skipped.
var kept = []string{"metadata", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion"}

// MarkSkipped has mark mark the field that each of paths names, a
// dotted path of JSON field names such as spec.containers.env, given
// split at its dots. It refuses the fields an informer needs, and returns
// every error joined, as the fields to skip of objects (a Go type, or
// what the objects are).
func MarkSkipped(objects any, paths []string, mark func(path string, names []string) error) error {
	var errs []error
	for _, path := range paths {
		if slices.Contains(kept, path) {
			errs = append(errs, fmt.Errorf("%s cannot be skipped: the informer needs it", path))
		} else if err := mark(path, strings.Split(path, ".")); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fields to skip of %v: %w", objects, err)
	}
	return nil
}
