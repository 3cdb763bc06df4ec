package layering

import (
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	// rootPackage is the package whose files are held to their layers.
	rootPackage = "github.com/kubetyped/informers"
	// layersDoc is where, under the package's directory, its layers are
	// listed.
	layersDoc = "docs/README.md"
	// maxBackUp is how many references may run back up, from a file to
	// one in a higher layer.
	maxBackUp = 15
)

// TestRootPackage holds the root package's files to the layers
// docs/README.md lists, and to two rules of its structure: only writer.go
// selects the fields of the writer, and SharedInformer holds no feature's
// state or callbacks.
func TestRootPackage(t *testing.T) {
	pkg, dir, ignored, err := Load(t.Context(), ".", rootPackage)
	require.NoError(t, err)

	t.Run("layers", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(dir, layersDoc))
		require.NoError(t, err)
		layers, err := ParseLayers(string(doc))
		require.NoError(t, err, "update the layers block of %s", layersDoc)

		missing, absent := layers.Compare(append(pkg.FileNames(), ignored...))
		require.Empty(t, missing, "files of package %s that %s's layers block does not list: update %s", rootPackage, layersDoc, layersDoc)
		require.Empty(t, absent, "files listed in %s's layers block that package %s does not have: update %s", layersDoc, rootPackage, layersDoc)

		refs := pkg.Refs()
		logShape(t, layers, refs)

		up := layers.BackUp(refs)
		var b strings.Builder
		for _, r := range up {
			fmt.Fprintf(&b, "\n\t%s", r)
		}
		switch {
		case len(up) > maxBackUp:
			t.Errorf("%d references run back up, from a file to one in a higher layer of %s; at most %d may:%s",
				len(up), layersDoc, maxBackUp, b.String())
		case len(up) > 0:
			t.Logf("%d references run back up (at most %d may):%s", len(up), maxBackUp, b.String())
		default:
			t.Logf("no reference runs back up (at most %d may)", maxBackUp)
		}

		groups, cycles := Cycles(refs)
		for i, group := range groups {
			var b strings.Builder
			fmt.Fprintf(&b, "files %s refer to each other, in cycles; break them, so that files refer only downward:", strings.Join(group, " "))
			for _, c := range cycles[i] {
				fmt.Fprintf(&b, "\n\tcycle: %s", c)
			}
			b.WriteString("\n\treferences among them:")
			for _, r := range refs {
				if slices.Contains(group, r.From) && slices.Contains(group, r.To) {
					fmt.Fprintf(&b, "\n\t\t%s", r)
				}
			}
			t.Error(b.String())
		}
	})

	t.Run("only writer.go selects the writer's fields", func(t *testing.T) {
		uses, declaredIn, err := pkg.FieldSelections("writer")
		require.NoError(t, err)
		require.Equal(t, "writer.go", declaredIn, "type writer is declared outside writer.go")
		var outside []string
		for _, u := range uses {
			if u.File != "writer.go" {
				outside = append(outside, u.String())
			}
		}
		errorList(t, "selections of a field of the writer outside writer.go (give writer.go a method that does it)", outside)
	})

	t.Run("SharedInformer holds no feature's state or callbacks", func(t *testing.T) {
		fields, err := pkg.StructFields("SharedInformer")
		require.NoError(t, err)
		qualify := func(p *types.Package) string {
			if p == pkg.Types {
				return ""
			}
			return p.Name()
		}
		var bad []string
		for _, f := range fields {
			var why []string
			name := strings.ToLower(f.Name())
			if strings.Contains(name, "shard") || strings.Contains(name, "namespace") {
				why = append(why, "named for a feature (shard, namespace)")
			}
			if _, ok := f.Type().Underlying().(*types.Signature); ok {
				why = append(why, "of function type")
			}
			if len(why) > 0 {
				bad = append(bad, fmt.Sprintf("%s %s: %s", f.Name(), types.TypeString(f.Type(), qualify), strings.Join(why, ", ")))
			}
		}
		errorList(t, "fields of SharedInformer that belong in a feature's own type", bad)
	})
}

// errorList fails t, listing problems one a line under what, if there are
// any.
func errorList(t *testing.T, what string, problems []string) {
	t.Helper()
	if len(problems) > 0 {
		t.Errorf("%d %s:\n\t%s", len(problems), what, strings.Join(problems, "\n\t"))
	}
}

// logShape logs each file's layer, fan-out and fan-in, top layer first.
func logShape(t *testing.T, layers Layers, refs []Ref) {
	t.Helper()
	var b strings.Builder
	b.WriteString("files, top layer first: how many files (and distinct references) each refers to, and is referred to by\n")
	fmt.Fprintf(&b, "%5s  %-22s  %16s  %15s", "layer", "file", "files out (refs)", "files in (refs)")
	for i, files := range layers {
		for _, s := range Shapes(files, refs) {
			fmt.Fprintf(&b, "\n%5d  %-22s  %9d (%4d)  %8d (%4d)", i+1, s.File, s.FilesOut, s.RefsOut, s.FilesIn, s.RefsIn)
		}
	}
	t.Log(b.String())
}
