package moduletest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// root is the library's module path.
const root = "github.com/kubetyped/informers"

// modCache is the module cache of the users' builds, the tests' own, so
// that the library's modules are never mixed with this machine's; the
// tests share it, so that what one downloads and compiles the next reuses.
var modCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "moduletest-modcache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	modCache = dir
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil { // -modcacherw: it can be removed
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// adapters are the directories of the modules a user installs beside the
// library, relative to the repository's root.
var adapters = []string{"controllerruntime", "prometheus"}

// TestInstallAsReadmeSays builds a file-system module proxy holding the
// library and its adapter modules at the versions the adapters require
// and the README names, then, in a fresh module outside the repository,
// runs the README's go get commands against it and builds a program
// that uses every module.
func TestInstallAsReadmeSays(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gets := readmeGets(t, filepath.Join(repo, "README.md"))
	want := map[string]string{} // module path: version, as the README gets it
	for _, g := range gets {
		path, version, ok := strings.Cut(strings.Fields(g)[2], "@")
		if !ok {
			t.Fatalf("README: %q names no version: a user outside the repository gets what?", g)
		}
		want[path] = version
	}
	rootVersion := want[root]
	if rootVersion == "" {
		t.Fatalf("README's Install does not go get %s", root)
	}

	proxy := t.TempDir()
	addModule(t, proxy, repo, root, rootVersion)
	for _, dir := range adapters {
		path := root + "/" + dir
		mf := parseGoMod(t, filepath.Join(repo, dir, "go.mod"))
		if mf.Module.Mod.Path != path {
			t.Fatalf("%s/go.mod: module %s, want %s", dir, mf.Module.Mod.Path, path)
		}
		if got := required(mf, root); got != rootVersion {
			t.Errorf("%s/go.mod requires %s %s; the README installs %s", dir, root, got, rootVersion)
		}
		if want[path] != rootVersion {
			t.Errorf("README: go get %s@%s; want the library's version %s", path, want[path], rootVersion)
		}
		addModule(t, proxy, filepath.Join(repo, dir), path, rootVersion)
	}
	if t.Failed() {
		return
	}

	user := t.TempDir()
	env := userEnv(t, proxy)
	run(t, user, env, "go", "mod", "init", "example.com/user")
	for _, g := range gets {
		run(t, user, env, strings.Fields(g)...)
	}
	program := `package main

import (
	"fmt"

	"github.com/kubetyped/informers"
	"github.com/kubetyped/informers/controllerruntime"
	"github.com/kubetyped/informers/prometheus"
)

func main() {
	fmt.Println(informers.NamespaceIndex, controllerruntime.NewCache != nil, prometheus.New != nil)
}
`
	if err := os.WriteFile(filepath.Join(user, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, user, env, "go", "build", "-o", os.DevNull, ".")
}

// The oldest k8s.io and controller-runtime releases the library supports,
// as the README's compatibility table names them.
const (
	oldestK8s               = "v0.36"
	oldestControllerRuntime = "v0.24"
)

// TestInstallKeepsTheOldestPair installs the adapter into a controller's
// module pinned to the oldest k8s.io and controller-runtime releases the
// library supports, the patches controllerruntime/go.mod requires, and
// checks with go list -m that the pins hold, and with go list -deps that
// adding it raised no k8s.io or sigs.k8s.io module the controller builds:
// not k8s.io to v0.37, not controller-runtime to v0.25, not what they
// require, such as k8s.io/utils. (Modules only in the module graph, never
// built, such as k8s.io/gengo, may move: they change no build.)
func TestInstallKeepsTheOldestPair(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	adapter := parseGoMod(t, filepath.Join(repo, "controllerruntime", "go.mod"))
	version := required(adapter, root)
	var pins []string // module@version, as the controller requires them
	for _, path := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go", "sigs.k8s.io/controller-runtime"} {
		v, oldest := required(adapter, path), oldestK8s
		if path == "sigs.k8s.io/controller-runtime" {
			oldest = oldestControllerRuntime
		}
		if semver.MajorMinor(v) != oldest {
			t.Fatalf("controllerruntime/go.mod requires %s %q; want %s.x, the oldest the library supports", path, v, oldest)
		}
		pins = append(pins, path+"@"+v)
	}
	proxy := t.TempDir()
	addModule(t, proxy, repo, root, version)
	addModule(t, proxy, filepath.Join(repo, "controllerruntime"), root+"/controllerruntime", version)

	user := t.TempDir()
	env := userEnv(t, proxy)
	run(t, user, env, "go", "mod", "init", "example.com/controller")
	run(t, user, env, append([]string{"go", "get"}, pins...)...)
	writeMain(t, user, `package main

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

func main() { fmt.Println(cache.New != nil) }
`)
	run(t, user, env, "go", "mod", "tidy")
	before := k8sModules(t, user, env)

	run(t, user, env, "go", "get", root+"/controllerruntime@"+version)
	writeMain(t, user, `package main

import (
	"fmt"

	"github.com/kubetyped/informers/controllerruntime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

func main() {
	fmt.Println(manager.Options{NewCache: controllerruntime.NewCache}.NewCache != nil, cache.New != nil)
}
`)
	run(t, user, env, "go", "mod", "tidy")
	run(t, user, env, "go", "build", "-o", os.DevNull, ".")
	after := k8sModules(t, user, env)
	for _, pin := range pins {
		path, v, _ := strings.Cut(pin, "@")
		if got := strings.TrimSpace(goList(t, user, env, "-m", "-f", "{{.Version}}", path)); got != v {
			t.Errorf("with the adapter, go list -m %s says %s; the controller pins %s", path, got, v)
		}
	}
	for path, v := range before {
		if after[path] != v {
			t.Errorf("the adapter raised %s from %s to %s", path, v, after[path])
		}
	}
}

// goList runs go list with args in the module in dir and returns its
// output.
func goList(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// writeMain writes the main.go of the module in dir.
func writeMain(t *testing.T, dir, program string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
}

// k8sModules returns the version of every k8s.io and sigs.k8s.io module
// whose packages the main package in dir builds, by path.
func k8sModules(t *testing.T, dir string, env []string) map[string]string {
	t.Helper()
	out := goList(t, dir, env, "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", ".")
	mods := map[string]string{}
	for line := range strings.Lines(out) {
		path, version, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(path, "k8s.io/") || strings.HasPrefix(path, "sigs.k8s.io/") {
			mods[path] = version
		}
	}
	if mods["k8s.io/client-go"] == "" {
		t.Fatalf("go list -deps in %s lists no k8s.io/client-go:\n%s", dir, out)
	}
	return mods
}

// TestRunColdstartAtAVersion builds a file-system module proxy holding the
// library and the coldstart module at the version the README installs,
// then, outside the repository, runs the harness as docs/scale.md says a
// user runs it without a clone: go run github.com/kubetyped/informers/
// coldstart@version. Go refuses that for a module whose go.mod replaces
// modules, and builds it against the library version its go.mod requires.
func TestRunColdstartAtAVersion(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rootVersion := ""
	for _, g := range readmeGets(t, filepath.Join(repo, "README.md")) {
		if path, version, _ := strings.Cut(strings.Fields(g)[2], "@"); path == root {
			rootVersion = version
		}
	}
	mf := parseGoMod(t, filepath.Join(repo, "coldstart", "go.mod"))
	if len(mf.Replace) > 0 {
		t.Fatalf("coldstart/go.mod replaces %s: go run coldstart@version would refuse it; replace in coldstart/go.work", mf.Replace[0].Old.Path)
	}
	if got := required(mf, root); got != rootVersion {
		t.Fatalf("coldstart/go.mod requires %s %s; the README installs %s", root, got, rootVersion)
	}
	proxy := t.TempDir()
	addModule(t, proxy, repo, root, rootVersion)
	addModule(t, proxy, filepath.Join(repo, "coldstart"), root+"/coldstart", rootVersion)
	user := t.TempDir()
	run(t, user, userEnv(t, proxy), "go", "run", root+"/coldstart@"+rootVersion, "-help")
}

// readmeGets returns the go get commands of the README's Install section.
func readmeGets(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var gets []string
	inInstall := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inInstall = line == "## Install"
			continue
		}
		if inInstall && strings.HasPrefix(line, "go get ") {
			cmd, _, _ := strings.Cut(line, "#")
			gets = append(gets, strings.TrimSpace(cmd))
		}
	}
	if len(gets) == 0 {
		t.Fatal("README.md: no go get in its Install section")
	}
	return gets
}

func parseGoMod(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// required returns the version mf requires of path, or "".
func required(mf *modfile.File, path string) string {
	for _, r := range mf.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	return ""
}

// addModule writes the module in dir, path at version, to the proxy in
// the layout GOPROXY=file:// reads: list, .info, .mod and .zip.
func addModule(t *testing.T, proxy, dir, path, version string) {
	t.Helper()
	escaped, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	v := filepath.Join(proxy, escaped, "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": mod} {
		if err := os.WriteFile(filepath.Join(v, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	z, err := os.Create(filepath.Join(v, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	// Nested modules (the adapters, the examples, this one) are left out,
	// as they are from a real module's zip.
	if err := zip.CreateFromDir(z, module.Version{Path: path, Version: version}, dir); err != nil {
		t.Fatalf("zip of %s@%s: %v", path, version, err)
	}
}

// userEnv is the environment of a user outside the repository: the
// library's modules come from proxy, every other module from what this
// machine has downloaded already (the module cache's download directory is
// itself a file proxy), then as it resolves modules already, into
// modCache; the library's modules need no checksum database.
func userEnv(t *testing.T, proxy string) []string {
	t.Helper()
	goproxy := strings.TrimSpace(output(t, "go", "env", "GOPROXY"))
	modcache := strings.TrimSpace(output(t, "go", "env", "GOMODCACHE"))
	downloaded := "file://" + filepath.ToSlash(filepath.Join(modcache, "cache", "download"))
	env := os.Environ()
	for _, kv := range []string{
		"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + downloaded + "," + goproxy,
		"GOMODCACHE=" + modCache,
		"GONOSUMDB=" + root,
		"GOFLAGS=-mod=mod -modcacherw",
		"GOWORK=off",
	} {
		env = append(env, kv)
	}
	return env
}

func run(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func output(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
