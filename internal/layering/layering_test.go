package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLayers(t *testing.T) {
	block := func(body string) string {
		return "# Doc\n\nprose\n\n" + BeginMarker + "\nLayers:\n\n```text\n" + body + "```\n" + EndMarker + "\n\nmore prose\n"
	}
	tests := []struct {
		name    string
		doc     string
		want    Layers
		wantErr string
	}{
		{
			name: "layers",
			doc:  block("a.go b.go\n\n  c.go\td.go  \ne.go\n"),
			want: Layers{{"a.go", "b.go"}, {"c.go", "d.go"}, {"e.go"}},
		},
		{name: "no begin marker", doc: "```text\na.go\n```\n" + EndMarker, wantErr: "no " + BeginMarker},
		{name: "no end marker", doc: BeginMarker + "\n```text\na.go\n```\n", wantErr: "no " + EndMarker},
		{name: "two blocks", doc: block("a.go\n") + block("b.go\n"), wantErr: "more than one"},
		{name: "no fence", doc: BeginMarker + "\na.go\n" + EndMarker, wantErr: "no fenced code block"},
		{name: "unclosed fence", doc: BeginMarker + "\n```text\na.go\n" + EndMarker, wantErr: "no fenced code block"},
		{name: "empty", doc: block("\n"), wantErr: "lists no layer"},
		{name: "listed twice", doc: block("a.go\nb.go a.go\n"), wantErr: "a.go is listed twice, in layers 1 and 2"},
		{name: "test file", doc: block("a_test.go\n"), wantErr: `"a_test.go" in layer 1`},
		{name: "not a go file", doc: block("a.go README.md\n"), wantErr: `"README.md" in layer 1`},
		{name: "a path", doc: block("sub/a.go\n"), wantErr: `"sub/a.go" in layer 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLayers(tt.doc)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLayersCompareAndBackUp(t *testing.T) {
	layers := Layers{{"top.go"}, {"mid.go", "mid2.go"}, {"low.go"}}

	missing, absent := layers.Compare([]string{"low.go", "new.go", "mid.go", "top.go"})
	assert.Equal(t, []string{"new.go"}, missing)
	assert.Equal(t, []string{"mid2.go"}, absent)

	refs := []Ref{
		{From: "top.go", To: "low.go", Name: "down"},
		{From: "mid.go", To: "mid2.go", Name: "within"},
		{From: "mid2.go", To: "mid.go", Name: "within"},
		{From: "low.go", To: "mid.go", Name: "upOne"},
		{From: "low.go", To: "top.go", Name: "upTwo"},
		{From: "mid.go", To: "top.go", Name: "upMid"},
		{From: "low.go", To: "unlisted.go", Name: "unlisted"},
	}
	var names []string
	for _, r := range layers.BackUp(refs) {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"upOne", "upTwo", "upMid"}, names)
}

// sample is a package of four files that refer to each other through
// package-level names, fields, methods, promoted fields and an
// instantiated generic type.
var sample = map[string]string{
	"a.go": `package p

type S struct {
	w *W
	X int
}

func (s S) M() int { return s.w.f + s.w.g() }
`,
	"w.go": `package p

type W struct {
	f int
	E
}

func (W) g() int { return 0 }
`,
	"e.go": `package p

type E struct{ h int }

type G[T any] struct{ v T }

func (g G[T]) get() T { return g.v }
`,
	"b.go": `package p

func use(s S) int {
	var g G[int]
	return s.w.h + g.get() + s.X + W{f: 1}.f
}
`,
}

func checkSample(t *testing.T) *Package {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range []string{"a.go", "b.go", "e.go", "w.go"} {
		f, err := parser.ParseFile(fset, name, sample[name], parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	pkg, err := Check(fset, "example.com/p", files, nil)
	require.NoError(t, err)
	return pkg
}

func TestRefs(t *testing.T) {
	pkg := checkSample(t)
	require.Equal(t, []string{"a.go", "b.go", "e.go", "w.go"}, pkg.FileNames())

	type ref struct{ From, To, Name string }
	var got []ref
	for _, r := range pkg.Refs() {
		got = append(got, ref{r.From, r.To, r.Name})
	}
	assert.Equal(t, []ref{
		{"a.go", "w.go", "W"},
		{"a.go", "w.go", "W.f"},
		{"a.go", "w.go", "W.g"},
		{"b.go", "a.go", "S"},
		{"b.go", "a.go", "S.X"},
		{"b.go", "a.go", "S.w"},
		{"b.go", "e.go", "E.h"},
		{"b.go", "e.go", "G"},
		{"b.go", "e.go", "G.get"},
		{"b.go", "w.go", "W"},
		{"b.go", "w.go", "W.E"}, // the embedded field s.w.h goes through
		{"b.go", "w.go", "W.f"},
		{"w.go", "e.go", "E"},
	}, got)

	first := pkg.Refs()[0]
	assert.Equal(t, 4, first.At.Line, "a.go's first use of W")
	assert.Equal(t, "a.go -> w.go: W (a.go:4)", first.String())
}

func TestFieldSelections(t *testing.T) {
	pkg := checkSample(t)

	uses, declaredIn, err := pkg.FieldSelections("W")
	require.NoError(t, err)
	assert.Equal(t, "w.go", declaredIn)
	var got []string
	for _, u := range uses {
		got = append(got, u.String())
	}
	assert.Equal(t, []string{
		"a.go:8: s.w.f selects f",
		"b.go:5: s.w.h selects E", // promoted: s.w.E.h
		"b.go:5: W{…}.f selects f",
	}, got, "method g and the composite literal's key are not selections of a field")

	uses, declaredIn, err = pkg.FieldSelections("G")
	require.NoError(t, err)
	assert.Equal(t, "e.go", declaredIn)
	require.Len(t, uses, 1)
	assert.Equal(t, "e.go:7: g.v selects v", uses[0].String(), "G[T]'s field, in its own file")

	_, _, err = pkg.FieldSelections("Missing")
	require.ErrorContains(t, err, "declares no type Missing")
}

func TestStructFields(t *testing.T) {
	pkg := checkSample(t)

	fields, err := pkg.StructFields("W")
	require.NoError(t, err)
	require.Len(t, fields, 2)
	assert.Equal(t, "f", fields[0].Name())
	assert.Equal(t, "E", fields[1].Name())
	assert.True(t, fields[1].Embedded())

	_, err = pkg.StructFields("use")
	require.ErrorContains(t, err, "declares no type use")
}

func TestCycles(t *testing.T) {
	refs := func(edges ...[2]string) []Ref {
		var rs []Ref
		for _, e := range edges {
			rs = append(rs, Ref{From: e[0], To: e[1], Name: e[0] + e[1]})
		}
		return rs
	}
	tests := []struct {
		name       string
		refs       []Ref
		wantGroups [][]string
		wantCycles [][]string
	}{
		{
			name: "none",
			refs: refs([2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"a", "c"}),
		},
		{
			name:       "pair",
			refs:       refs([2]string{"b", "a"}, [2]string{"a", "b"}, [2]string{"a", "c"}),
			wantGroups: [][]string{{"a", "b"}},
			wantCycles: [][]string{{"a -> b -> a"}},
		},
		{
			name:       "three",
			refs:       refs([2]string{"c", "a"}, [2]string{"a", "b"}, [2]string{"b", "c"}),
			wantGroups: [][]string{{"a", "b", "c"}},
			wantCycles: [][]string{{"a -> b -> c -> a"}},
		},
		{
			name: "two groups, one with pairs and a longer cycle",
			refs: refs(
				[2]string{"x", "y"}, [2]string{"y", "x"},
				[2]string{"a", "b"}, [2]string{"b", "a"}, [2]string{"b", "c"}, [2]string{"c", "d"}, [2]string{"d", "b"},
				[2]string{"d", "x"},
			),
			wantGroups: [][]string{{"a", "b", "c", "d"}, {"x", "y"}},
			wantCycles: [][]string{{"a -> b -> a", "b -> c -> d -> b"}, {"x -> y -> x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups, cycles := Cycles(tt.refs)
			assert.Equal(t, tt.wantGroups, groups)
			var got [][]string
			for _, cs := range cycles {
				var s []string
				for _, c := range cs {
					s = append(s, c.String())
				}
				got = append(got, s)
			}
			assert.Equal(t, tt.wantCycles, got)
		})
	}
}

func TestShapes(t *testing.T) {
	refs := []Ref{
		{From: "a", To: "b", Name: "x"},
		{From: "a", To: "b", Name: "y"},
		{From: "a", To: "c", Name: "z"},
		{From: "c", To: "b", Name: "x"},
	}
	assert.Equal(t, []Shape{
		{File: "b", FilesIn: 2, RefsIn: 3},
		{File: "a", FilesOut: 2, RefsOut: 3},
		{File: "c", FilesOut: 1, RefsOut: 1, FilesIn: 1, RefsIn: 1},
		{File: "d"},
	}, Shapes([]string{"b", "a", "c", "d"}, refs))
}
