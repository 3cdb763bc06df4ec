package decopt

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarkSkipped checks that MarkSkipped hands each path to mark split at its dots,
// refuses the fields an informer needs without asking mark, and joins
// every error under what the objects are.
func TestMarkSkipped(t *testing.T) {
	var marked [][]string
	mark := func(path string, names []string) error {
		if path == "spec.nothing" {
			return errors.New("no field nothing")
		}
		marked = append(marked, names)
		return nil
	}
	require.NoError(t, MarkSkipped(reflect.TypeFor[*struct{}](), []string{"metadata.managedFields", "spec.containers.env"}, mark))
	assert.Equal(t, [][]string{{"metadata", "managedFields"}, {"spec", "containers", "env"}}, marked)

	marked = nil
	err := MarkSkipped("unstructured objects", []string{"metadata.uid", "spec.nothing", "status", "metadata"}, mark)
	require.Error(t, err)
	assert.Equal(t, "fields to skip of unstructured objects: metadata.uid cannot be skipped: the informer needs it\n"+
		"no field nothing\n"+
		"metadata cannot be skipped: the informer needs it", err.Error())
	assert.Equal(t, [][]string{{"status"}}, marked, "only the paths that may be skipped are marked")
}
