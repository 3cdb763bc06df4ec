package upstreamtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// cacheNew matches the suite's uses of controller-runtime's cache.New,
// called or passed as a cache.NewCacheFunc; newCacheVar replaces them.
var cacheNew = regexp.MustCompile(`\bcache\.New\b`)

const newCacheVar = "newCacheUnderTest"

// newCacheFile is the file the runner adds to the suite: the cache
// function every spec builds its cache with.
const newCacheFile = `package %s

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubetyped/informers/controllerruntime"
)

// %s is what the suite's cache.New calls became.
var %s cache.NewCacheFunc = controllerruntime.NewCache
`

// suite is what copySuite found in the suite's files.
type suite struct {
	files   []string // the copied files' names
	runners []string // tests that run the Ginkgo specs (call RunSpecs)
	tests   []string // the other tests, plain Go tests
	uses    int      // cache.New uses replaced
}

// copySuite copies the external test files (package cache_test) of
// controller-runtime's pkg/cache from src into dst, with every cache.New
// replaced by newCacheVar, and adds the file that sets it. The package's
// internal test files test its unexported code and are left out.
func copySuite(src, dst string) (suite, error) {
	var s suite
	names, err := filepath.Glob(filepath.Join(src, "*_test.go"))
	if err != nil {
		return s, err
	}
	pkg := ""
	fset := token.NewFileSet()
	for _, path := range names {
		data, err := os.ReadFile(path)
		if err != nil {
			return s, err
		}
		f, err := parser.ParseFile(fset, path, data, parser.SkipObjectResolution)
		if err != nil {
			return s, err
		}
		if !strings.HasSuffix(f.Name.Name, "_test") {
			continue
		}
		pkg = f.Name.Name
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestName(fn.Name.Name) {
				continue
			}
			if callsRunSpecs(fn) {
				s.runners = append(s.runners, fn.Name.Name)
			} else {
				s.tests = append(s.tests, fn.Name.Name)
			}
		}
		s.uses += len(cacheNew.FindAllIndex(data, -1))
		data = cacheNew.ReplaceAll(data, []byte(newCacheVar))
		name := filepath.Base(path)
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			return s, err
		}
		s.files = append(s.files, name)
	}
	switch {
	case len(s.files) == 0:
		return s, fmt.Errorf("no external test files in %s", src)
	case len(s.runners) == 0:
		return s, fmt.Errorf("no test in %s calls RunSpecs: %v", src, s.files)
	case s.uses == 0:
		return s, fmt.Errorf("%s never calls cache.New: the suite tests something else", src)
	}
	slices.Sort(s.tests)
	code := fmt.Sprintf(newCacheFile, pkg, newCacheVar, newCacheVar)
	return s, os.WriteFile(filepath.Join(dst, "zz_newcache_test.go"), []byte(code), 0o644)
}

// isTestName reports whether go test runs a function of this name as a
// test.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	return ok && (rest == "" || !strings.ContainsAny(rest[:1], "abcdefghijklmnopqrstuvwxyz"))
}

// callsRunSpecs reports whether fn calls Ginkgo's RunSpecs.
func callsRunSpecs(fn *ast.FuncDecl) bool {
	found := false
	ast.Inspect(fn, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		switch f := call.Fun.(type) {
		case *ast.Ident:
			found = found || f.Name == "RunSpecs"
		case *ast.SelectorExpr:
			found = found || f.Sel.Name == "RunSpecs"
		}
		return !found
	})
	return found
}
