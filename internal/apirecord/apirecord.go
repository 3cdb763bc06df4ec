// Package apirecord writes and compares the record of the library's public
// API: per public package, every exported declaration with its signature,
// without doc text, so that a doc edit changes nothing and a change of an
// exported identifier changes the record. The record lives in api/, one
// file per package; Packages lists them.
package apirecord

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Module is the import path of the root package.
const Module = "github.com/kubetyped/informers"

// Packages are the public packages, by directory relative to the
// repository root ("." for the root package).
var Packages = []string{".", "adapter", "clientgo", "controllerruntime", "fleet", "informerstest", "membership", "prometheus", "shard"}

// Since names the commit the record starts from: the repository has no
// release tag, so changes are counted from this commit on, in
// CHANGELOG.md.
const Since = "b7c3c25"

// Entry is one exported declaration: Key names it ("func WaitForSync",
// "method (*Factory).Start", "type Factory"), Decl is its declaration as
// Go source, without doc text.
type Entry struct {
	Key, Decl string
}

// FileName returns the record's file of the package in dir, relative to
// the repository root.
func FileName(dir string) string {
	name := filepath.Base(dir)
	if dir == "." {
		name = "informers"
	}
	return filepath.Join("api", name+".txt")
}

// Read parses the package in dir under root and returns its exported
// declarations, sorted by key.
func Read(root, dir string) ([]Entry, error) {
	fset := token.NewFileSet()
	abs := filepath.Join(root, dir)
	ctx := build.Default
	var files []*ast.File
	ents, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(abs, name); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(abs, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("apirecord: no Go files in %s", abs)
	}
	pkg, err := doc.NewFromFiles(fset, files, Module+"/"+filepath.ToSlash(dir), doc.PreserveAST)
	if err != nil {
		return nil, err
	}
	var out []Entry
	add := func(key string, node any) {
		out = append(out, Entry{Key: key, Decl: withoutBlankLines(source(fset, node))})
	}
	values := func(kind string, vs []*doc.Value) {
		for _, v := range vs {
			for _, spec := range v.Decl.Specs {
				vs := spec.(*ast.ValueSpec)
				for n, name := range vs.Names {
					if !name.IsExported() {
						continue
					}
					one := &ast.ValueSpec{Names: []*ast.Ident{name}, Type: vs.Type}
					if n < len(vs.Values) && len(vs.Names) == len(vs.Values) {
						one.Values = []ast.Expr{vs.Values[n]}
					}
					add(kind+" "+name.Name, &ast.GenDecl{Tok: v.Decl.Tok, Specs: []ast.Spec{one}})
				}
			}
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			d := *f.Decl
			d.Doc, d.Body = nil, nil
			key := "func " + f.Name
			if f.Recv != "" {
				key = "method (" + f.Recv + ")." + f.Name
			}
			add(key, &d)
		}
	}
	values("const", pkg.Consts)
	values("var", pkg.Vars)
	funcs(pkg.Funcs)
	for _, t := range pkg.Types {
		values("const", t.Consts)
		values("var", t.Vars)
		funcs(t.Funcs)
		funcs(t.Methods)
		for _, spec := range t.Decl.Specs {
			ts := spec.(*ast.TypeSpec)
			if ts.Name.Name != t.Name {
				continue
			}
			ts = exported(ts)
			add("type "+t.Name, &ast.GenDecl{Tok: token.TYPE, Specs: []ast.Spec{ts}})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// exported returns ts with the unexported fields and interface methods
// left out and every comment dropped.
func exported(ts *ast.TypeSpec) *ast.TypeSpec {
	c := *ts
	c.Doc, c.Comment = nil, nil
	filter := func(fl *ast.FieldList) *ast.FieldList {
		if fl == nil {
			return nil
		}
		out := &ast.FieldList{Opening: fl.Opening, Closing: fl.Closing}
		for _, f := range fl.List {
			g := *f
			g.Doc, g.Comment = nil, nil
			g.Names = nil
			for _, n := range f.Names {
				if n.IsExported() {
					g.Names = append(g.Names, n)
				}
			}
			if len(f.Names) > 0 && len(g.Names) == 0 {
				continue
			}
			if len(f.Names) == 0 && !embeddedExported(f.Type) {
				continue
			}
			out.List = append(out.List, &g)
		}
		return out
	}
	switch t := c.Type.(type) {
	case *ast.StructType:
		c.Type = &ast.StructType{Struct: t.Struct, Fields: filter(t.Fields)}
	case *ast.InterfaceType:
		c.Type = &ast.InterfaceType{Interface: t.Interface, Methods: filter(t.Methods)}
	}
	return &c
}

// embeddedExported reports whether an embedded field or interface element
// of type x is part of the API: an exported type, or a constraint such as
// ~int | ~string.
func embeddedExported(x ast.Expr) bool {
	switch t := x.(type) {
	case *ast.Ident:
		return t.IsExported() || !ast.IsExported(t.Name) && t.Name == "any" || t.Name == "comparable"
	case *ast.StarExpr:
		return embeddedExported(t.X)
	case *ast.SelectorExpr:
		return t.Sel.IsExported()
	case *ast.IndexExpr:
		return embeddedExported(t.X)
	case *ast.IndexListExpr:
		return embeddedExported(t.X)
	}
	return true
}

// source prints node as Go source, without comments.
func source(fset *token.FileSet, node any) string {
	var b bytes.Buffer
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	if err := cfg.Fprint(&b, fset, node); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return b.String()
}

// withoutBlankLines drops the blank lines of s, which separate entries in
// a record file.
func withoutBlankLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "" }), "\n")
}

// Header is the first lines of each record file.
func Header(dir string) string {
	path := Module
	if dir != "." {
		path += "/" + filepath.ToSlash(dir)
	}
	return fmt.Sprintf(`# The exported API of %s: every declaration, without doc text.
# Generated by "go run ./internal/cmd/apirecord -w" (make api); TestAPIRecord fails when it is stale.
# The record starts at commit %s (no release is tagged); every change since is in CHANGELOG.md.
`, path, Since)
}

// Format returns the record file of the package in dir: Header, then each
// entry, its continuation lines indented by a tab, one blank line apart.
func Format(dir string, entries []Entry) []byte {
	var b bytes.Buffer
	b.WriteString(Header(dir))
	for _, e := range entries {
		b.WriteString("\n")
		for n, line := range strings.Split(strings.TrimRight(e.Decl, "\n"), "\n") {
			if n > 0 {
				b.WriteString("\t")
			}
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// Parse reads a record file back into its declarations, by their text;
// keys are not stored, so each entry is its first line.
func Parse(data []byte) map[string]string {
	out := make(map[string]string)
	for block := range strings.SplitSeq(string(data), "\n\n") {
		block = strings.TrimRight(block, "\n")
		if block == "" || strings.HasPrefix(block, "#") {
			continue
		}
		lines := strings.Split(block, "\n")
		for n := 1; n < len(lines); n++ {
			lines[n] = strings.TrimPrefix(lines[n], "\t")
		}
		out[keyOf(lines[0])] = strings.Join(lines, "\n")
	}
	return out
}

// keyOf returns the key of the declaration whose first line is line.
func keyOf(line string) string {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return line
	}
	switch fields[0] {
	case "func":
		if strings.HasPrefix(fields[1], "(") {
			recv := line[len("func "):]
			end := strings.Index(recv, ")")
			r := strings.Fields(recv[1:end])
			name := recv[end+2:]
			name = name[:strings.IndexAny(name, "([")]
			typ := r[len(r)-1]
			if i := strings.Index(typ, "["); i >= 0 {
				typ = typ[:i]
			}
			return "method (" + typ + ")." + name
		}
		return "func " + fields[1][:strings.IndexAny(fields[1]+"(", "([")]
	case "type":
		return "type " + fields[1][:strings.IndexAny(fields[1]+"[", "[")]
	}
	return fields[0] + " " + fields[1]
}

// Diff returns, one line per identifier, what differs between the record
// in want and the package's declarations in got: added, removed or
// changed, each with its declaration; "" if they agree.
func Diff(want map[string]string, got []Entry) string {
	have := make(map[string]string, len(got))
	for _, e := range got {
		have[keyOf(strings.SplitN(e.Decl, "\n", 2)[0])] = strings.TrimRight(e.Decl, "\n")
	}
	keys := make([]string, 0, len(want)+len(have))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		w, inWant := want[k]
		h, inHave := have[k]
		switch {
		case !inWant:
			fmt.Fprintf(&b, "added %s:\n\t+ %s\n", k, indent(h, "+"))
		case !inHave:
			fmt.Fprintf(&b, "removed %s:\n\t- %s\n", k, indent(w, "-"))
		case w != h:
			fmt.Fprintf(&b, "changed %s:\n\t- %s\n\t+ %s\n", k, indent(w, "-"), indent(h, "+"))
		}
	}
	return b.String()
}

// indent continues the lines of s under a diff mark.
func indent(s, mark string) string {
	return strings.ReplaceAll(s, "\n", "\n\t"+mark+" ")
}

// Root returns the repository root: the nearest directory from dir up
// that holds api/ beside go.mod of the root module.
func Root(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module "+Module+"\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("apirecord: no go.mod of %s above %s", Module, dir)
		}
	}
}

// Write writes the record of every package under root.
func Write(root string) error {
	if err := os.MkdirAll(filepath.Join(root, "api"), 0o755); err != nil {
		return err
	}
	for _, dir := range Packages {
		entries, err := Read(root, dir)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, FileName(dir)), Format(dir, entries), fs.FileMode(0o644)); err != nil {
			return err
		}
	}
	return nil
}

// Check compares the record of every package under root with the
// packages, and returns the differences, by file, or "" if none.
func Check(root string) (string, error) {
	var b strings.Builder
	for _, dir := range Packages {
		entries, err := Read(root, dir)
		if err != nil {
			return "", err
		}
		data, err := os.ReadFile(filepath.Join(root, FileName(dir)))
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		if d := Diff(Parse(data), entries); d != "" {
			fmt.Fprintf(&b, "%s:\n%s", FileName(dir), d)
		}
	}
	return b.String(), nil
}
