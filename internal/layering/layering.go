// Package layering reads which file of a Go package refers to which, from
// the type checker, and checks the result against layers of files listed
// top to bottom: a reference from a lower layer to a higher one runs back
// up, and files that refer to each other, directly or not, form a cycle.
// Its test holds the root package to the layers docs/README.md lists.
package layering

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Layers lists a package's files by layer, top to bottom: Layers[0] is the
// top layer, the API that refers down to the rest.
type Layers [][]string

// The markers that enclose the layers block of a Markdown document.
const (
	BeginMarker = "<!-- layers:begin -->"
	EndMarker   = "<!-- layers:end -->"
)

// ParseLayers reads the layers block of a Markdown document: the fenced
// code block between BeginMarker and EndMarker, where each non-blank line
// is a layer, the names of its files separated by spaces, top layer first.
func ParseLayers(doc string) (Layers, error) {
	begin := strings.Index(doc, BeginMarker)
	if begin < 0 {
		return nil, fmt.Errorf("layers block: no %s marker", BeginMarker)
	}
	rest := doc[begin+len(BeginMarker):]
	end := strings.Index(rest, EndMarker)
	if end < 0 {
		return nil, fmt.Errorf("layers block: no %s marker after %s", EndMarker, BeginMarker)
	}
	if strings.Contains(rest[end+len(EndMarker):], BeginMarker) {
		return nil, fmt.Errorf("layers block: more than one %s marker", BeginMarker)
	}
	var (
		layers   Layers
		fences   int
		layerOf  = map[string]int{}
		scanner  = bufio.NewScanner(strings.NewReader(rest[:end]))
		fenceEnd bool
	)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if strings.HasPrefix(line, "```") {
			fences++
			fenceEnd = fences == 2
			continue
		}
		if fences != 1 || line == "" {
			continue
		}
		files := strings.Fields(line)
		for _, f := range files {
			if filepath.Base(f) != f || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
				return nil, fmt.Errorf("layers block: %q in layer %d is not the name of a non-test .go file", f, len(layers)+1)
			}
			if l, ok := layerOf[f]; ok {
				return nil, fmt.Errorf("layers block: %s is listed twice, in layers %d and %d", f, l+1, len(layers)+1)
			}
			layerOf[f] = len(layers)
		}
		layers = append(layers, files)
	}
	if !fenceEnd {
		return nil, errors.New("layers block: no fenced code block (``` ... ```) between the markers")
	}
	if len(layers) == 0 {
		return nil, errors.New("layers block: the fenced code block lists no layer")
	}
	return layers, nil
}

// Index returns the layer of each listed file, 0 for the top layer.
func (l Layers) Index() map[string]int {
	idx := map[string]int{}
	for i, files := range l {
		for _, f := range files {
			idx[f] = i
		}
	}
	return idx
}

// Compare returns the files that are not listed, and the listed files that
// are not among files, each sorted.
func (l Layers) Compare(files []string) (missing, absent []string) {
	idx := l.Index()
	present := map[string]bool{}
	for _, f := range files {
		present[f] = true
		if _, ok := idx[f]; !ok {
			missing = append(missing, f)
		}
	}
	for f := range idx {
		if !present[f] {
			absent = append(absent, f)
		}
	}
	slices.Sort(missing)
	slices.Sort(absent)
	return missing, absent
}

// BackUp returns the references that run back up: from a file in a lower
// layer to one in a higher layer. References of files not listed are left
// out.
func (l Layers) BackUp(refs []Ref) []Ref {
	idx := l.Index()
	var up []Ref
	for _, r := range refs {
		from, okFrom := idx[r.From]
		to, okTo := idx[r.To]
		if okFrom && okTo && from > to {
			up = append(up, r)
		}
	}
	return up
}

// Package is a type-checked package and its non-test files.
type Package struct {
	Fset  *token.FileSet
	Types *types.Package
	Info  *types.Info
	// Files maps each file's base name to its syntax.
	Files map[string]*ast.File

	owners map[*types.Var]string // struct fields to the type declaring them
}

// listed is what Load reads of `go list -json`.
type listed struct {
	ImportPath     string
	Dir            string
	Export         string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	DepOnly        bool
	Error          *struct{ Err string }
}

// Load type-checks the package that pattern names, run from dir, without
// its test files. It asks `go list -export -deps` for the export data of
// what the package imports, which builds them if need be. It returns the
// package, its directory, and the non-test .go files of that directory
// that the build leaves out (build constraints), by base name.
func Load(ctx context.Context, dir, pattern string) (pkg *Package, pkgDir string, ignored []string, err error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-export", "-deps",
		"-json=ImportPath,Dir,Export,GoFiles,CgoFiles,IgnoredGoFiles,DepOnly,Error", "--", pattern)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "", nil, fmt.Errorf("go list -export -deps %s: %w: %s", pattern, err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	var target *listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, "", nil, fmt.Errorf("go list -export -deps %s: reading its output: %w", pattern, err)
		}
		if p.Error != nil {
			return nil, "", nil, fmt.Errorf("go list -export -deps %s: package %s: %s", pattern, p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			if target != nil {
				return nil, "", nil, fmt.Errorf("go list -export -deps %s: names more than one package (%s, %s)", pattern, target.ImportPath, p.ImportPath)
			}
			target = &p
		}
	}
	if target == nil {
		return nil, "", nil, fmt.Errorf("go list -export -deps %s: names no package", pattern)
	}
	if len(target.CgoFiles) > 0 {
		return nil, "", nil, fmt.Errorf("package %s: cgo files (%s) cannot be type-checked here", target.ImportPath, strings.Join(target.CgoFiles, " "))
	}
	for _, f := range target.IgnoredGoFiles {
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
			ignored = append(ignored, f)
		}
	}

	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range target.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(target.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, "", nil, fmt.Errorf("package %s: %w", target.ImportPath, err)
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s from go list", path)
		}
		return os.Open(file)
	}
	pkg, err = Check(fset, target.ImportPath, files, importer.ForCompiler(fset, "gc", lookup))
	if err != nil {
		return nil, "", nil, err
	}
	return pkg, target.Dir, ignored, nil
}

// Check type-checks the package at path made of files, parsed with fset,
// importing through imp.
func Check(fset *token.FileSet, path string, files []*ast.File, imp types.Importer) (*Package, error) {
	info := &types.Info{
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	var errs []error
	conf := types.Config{Importer: imp, Error: func(err error) { errs = append(errs, err) }}
	tpkg, _ := conf.Check(path, fset, files, info)
	if len(errs) > 0 {
		return nil, fmt.Errorf("type-checking package %s: %w", path, errors.Join(errs...))
	}
	p := &Package{Fset: fset, Types: tpkg, Info: info, Files: map[string]*ast.File{}, owners: map[*types.Var]string{}}
	for _, f := range files {
		name := filepath.Base(fset.File(f.Pos()).Name())
		if _, dup := p.Files[name]; dup {
			return nil, fmt.Errorf("package %s: two files named %s", path, name)
		}
		p.Files[name] = f
	}
	scope := tpkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				p.owners[st.Field(i)] = name
			}
		}
	}
	return p, nil
}

// FileNames returns the base names of the package's files, sorted.
func (p *Package) FileNames() []string {
	names := make([]string, 0, len(p.Files))
	for name := range p.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Ref is a use, in file From, of an identifier declared in file To of the
// same package.
type Ref struct {
	From, To string
	// Name is what is used: a package-level name, or Type.Field or
	// Type.Method for a field or method declared by a type.
	Name string
	// At is where From first uses it.
	At token.Position
}

func (r Ref) String() string {
	return fmt.Sprintf("%s -> %s: %s (%s:%d)", r.From, r.To, r.Name, r.From, r.At.Line)
}

// file returns the base name of the package file holding pos, or "" if
// pos is in none.
func (p *Package) file(pos token.Pos) string {
	if !pos.IsValid() {
		return ""
	}
	tf := p.Fset.File(pos)
	if tf == nil {
		return ""
	}
	name := filepath.Base(tf.Name())
	if f, ok := p.Files[name]; !ok || p.Fset.File(f.Pos()) != tf {
		return ""
	}
	return name
}

// origin returns the declared object behind an object of an instantiated
// generic type or function.
func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Var:
		return o.Origin()
	case *types.Func:
		return o.Origin()
	}
	return obj
}

// name names obj as a Ref does.
func (p *Package) name(obj types.Object) string {
	switch o := obj.(type) {
	case *types.Var:
		if owner, ok := p.owners[o]; ok {
			return owner + "." + o.Name()
		}
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil {
			if n := namedOf(recv.Type()); n != nil {
				return n.Obj().Name() + "." + o.Name()
			}
		}
	}
	return obj.Name()
}

// namedOf returns the named type t is, or points to, or nil.
func namedOf(t types.Type) *types.Named {
	if ptr, ok := types.Unalias(t).(*types.Pointer); ok {
		t = ptr.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// Refs returns the package's references from one file to another, one per
// distinct (From, To, Name), sorted by From, To and Name. A selection's
// field or method counts, and so does every embedded field a promoted
// selection goes through.
func (p *Package) Refs() []Ref {
	type key struct{ from, to, name string }
	first := map[key]token.Pos{}
	add := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != p.Types {
			return
		}
		obj = origin(obj)
		from, to := p.file(at), p.file(obj.Pos())
		if from == "" || to == "" || from == to {
			return
		}
		k := key{from, to, p.name(obj)}
		if pos, ok := first[k]; !ok || at < pos {
			first[k] = at
		}
	}
	for id, obj := range p.Info.Uses {
		add(id.Pos(), obj)
	}
	for sel, s := range p.Info.Selections {
		for _, f := range embeddedPath(s) {
			add(sel.Sel.Pos(), f.field)
		}
	}
	refs := make([]Ref, 0, len(first))
	for k, pos := range first {
		refs = append(refs, Ref{From: k.from, To: k.to, Name: k.name, At: p.Fset.Position(pos)})
	}
	slices.SortFunc(refs, func(a, b Ref) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Name, b.Name))
	})
	return refs
}

// pathField is a field a selection goes through or selects, and the type
// it is a field of.
type pathField struct {
	recv  types.Type
	field *types.Var
}

// embeddedPath returns the embedded fields a promoted selection goes
// through, in order, each with the type it is a field of.
func embeddedPath(s *types.Selection) []pathField {
	var path []pathField
	t := s.Recv()
	idx := s.Index()
	for _, i := range idx[:len(idx)-1] {
		u := t
		if ptr, ok := types.Unalias(u).(*types.Pointer); ok {
			u = ptr.Elem()
		}
		st, ok := u.Underlying().(*types.Struct)
		if !ok || i >= st.NumFields() {
			break
		}
		f := st.Field(i)
		path = append(path, pathField{recv: t, field: f})
		t = f.Type()
	}
	return path
}

// FieldUse is a selection of a field of a given type.
type FieldUse struct {
	// File is the file that selects the field; At, where.
	File string
	At   token.Position
	// Field is the field's name; Expr, the selector expression.
	Field, Expr string
}

func (u FieldUse) String() string {
	return fmt.Sprintf("%s:%d: %s selects %s", u.File, u.At.Line, u.Expr, u.Field)
}

// FieldSelections returns the selections, in any file of the package, of
// a field of the package-level type typeName (or of a pointer to it),
// the field selected or an embedded field a promoted selection goes
// through, sorted by file and position. It also returns the file that
// declares typeName.
func (p *Package) FieldSelections(typeName string) (uses []FieldUse, declaredIn string, err error) {
	tn, ok := p.Types.Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		return nil, "", fmt.Errorf("package %s declares no type %s", p.Types.Path(), typeName)
	}
	isType := func(t types.Type) bool {
		n := namedOf(t)
		return n != nil && n.Origin().Obj() == tn
	}
	for sel, s := range p.Info.Selections {
		var fields []pathField
		fields = append(fields, embeddedPath(s)...)
		if s.Kind() == types.FieldVal {
			recv := s.Recv()
			if len(fields) > 0 {
				recv = fields[len(fields)-1].field.Type()
			}
			fields = append(fields, pathField{recv: recv, field: s.Obj().(*types.Var)})
		}
		for _, f := range fields {
			if isType(f.recv) {
				uses = append(uses, FieldUse{
					File:  p.file(sel.Pos()),
					At:    p.Fset.Position(sel.Sel.Pos()),
					Field: f.field.Name(),
					Expr:  types.ExprString(sel),
				})
			}
		}
	}
	slices.SortFunc(uses, func(a, b FieldUse) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.At.Offset, b.At.Offset), cmp.Compare(a.Field, b.Field))
	})
	return uses, p.file(tn.Pos()), nil
}

// StructFields returns the fields of the package-level struct type
// typeName, in order.
func (p *Package) StructFields(typeName string) ([]*types.Var, error) {
	tn, ok := p.Types.Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		return nil, fmt.Errorf("package %s declares no type %s", p.Types.Path(), typeName)
	}
	st, ok := tn.Type().Underlying().(*types.Struct)
	if !ok {
		return nil, fmt.Errorf("package %s: type %s is not a struct", p.Types.Path(), typeName)
	}
	fields := make([]*types.Var, st.NumFields())
	for i := range fields {
		fields[i] = st.Field(i)
	}
	return fields, nil
}

// Cycle is a cycle of files, each referring to the next and the last to
// the first.
type Cycle []string

func (c Cycle) String() string {
	return strings.Join(append(slices.Clone(c), c[0]), " -> ")
}

// Cycles returns the strongly connected groups of files that refs make,
// of more than one file, each sorted, the groups sorted by their first
// file; and, for each group, its cycles that show how: first every pair
// of files that refer to each other, then the shortest cycle through each
// of its files, the same cycle once, each starting at its smallest file.
func Cycles(refs []Ref) (groups [][]string, cycles [][]Cycle) {
	out := map[string][]string{}
	var nodes []string
	seen := map[string]bool{}
	node := func(n string) {
		if !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	for _, r := range refs {
		node(r.From)
		node(r.To)
		if !slices.Contains(out[r.From], r.To) {
			out[r.From] = append(out[r.From], r.To)
		}
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		slices.Sort(out[n])
	}

	// Tarjan's strongly connected components.
	var (
		index   = map[string]int{}
		low     = map[string]int{}
		onStack = map[string]bool{}
		stack   []string
		next    int
		visit   func(string)
	)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range out[v] {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var group []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				group = append(group, w)
				if w == v {
					break
				}
			}
			if len(group) > 1 {
				slices.Sort(group)
				groups = append(groups, group)
			}
		}
	}
	for _, n := range nodes {
		if _, ok := index[n]; !ok {
			visit(n)
		}
	}
	slices.SortFunc(groups, func(a, b []string) int { return cmp.Compare(a[0], b[0]) })

	for _, group := range groups {
		in := map[string]bool{}
		for _, f := range group {
			in[f] = true
		}
		var cs []Cycle
		for i, a := range group {
			for _, b := range group[i+1:] {
				if slices.Contains(out[a], b) && slices.Contains(out[b], a) {
					cs = append(cs, Cycle{a, b})
				}
			}
		}
		for _, f := range group {
			c := shortestCycle(f, out, in)
			if !slices.ContainsFunc(cs, func(d Cycle) bool { return slices.Equal(c, d) }) {
				cs = append(cs, c)
			}
		}
		cycles = append(cycles, cs)
	}
	return groups, cycles
}

// shortestCycle returns the shortest cycle through start among the files
// in, breadth first over out's sorted edges, rotated to begin at its
// smallest file.
func shortestCycle(start string, out map[string][]string, in map[string]bool) Cycle {
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range out[v] {
			if !in[w] {
				continue
			}
			if w == start {
				c := Cycle{v}
				for c[0] != start {
					c = slices.Insert(c, 0, prev[c[0]])
				}
				least := slices.Index(c, slices.Min(c))
				return append(c[least:], c[:least]...)
			}
			if _, ok := prev[w]; !ok {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil // start is in no cycle: not reached for a file of a group
}

// Shape is a file's fan-out and fan-in: how many other files it refers
// to, how many refer to it, and how many distinct references each way.
type Shape struct {
	File              string
	FilesOut, RefsOut int
	FilesIn, RefsIn   int
}

// Shapes returns the shape of each of files, in the order given.
func Shapes(files []string, refs []Ref) []Shape {
	outFiles := map[string]map[string]bool{}
	inFiles := map[string]map[string]bool{}
	refsOut := map[string]int{}
	refsIn := map[string]int{}
	for _, r := range refs {
		if outFiles[r.From] == nil {
			outFiles[r.From] = map[string]bool{}
		}
		if inFiles[r.To] == nil {
			inFiles[r.To] = map[string]bool{}
		}
		outFiles[r.From][r.To] = true
		inFiles[r.To][r.From] = true
		refsOut[r.From]++
		refsIn[r.To]++
	}
	shapes := make([]Shape, len(files))
	for i, f := range files {
		shapes[i] = Shape{File: f, FilesOut: len(outFiles[f]), RefsOut: refsOut[f], FilesIn: len(inFiles[f]), RefsIn: refsIn[f]}
	}
	return shapes
}
