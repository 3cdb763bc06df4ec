package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubetyped/informers/internal/testenv"
)

// release is a controller-runtime release and the k8s.io release it is
// built for, which the scratch module pins together.
type release struct {
	ControllerRuntime string // sigs.k8s.io/controller-runtime
	K8s               string // k8s.io/api, apimachinery, client-go, apiserver, apiextensions-apiserver
}

func (r release) String() string { return r.ControllerRuntime + "@" + r.K8s }

// releases are the controller-runtime releases whose suite the run
// checks by default: the adapter's floor and the newest it supports, each
// with its k8s.io release.
var releases = []release{
	{ControllerRuntime: "v0.24.1", K8s: "v0.36.6"},
	{ControllerRuntime: "v0.25.3", K8s: "v0.37.2"},
}

var releasesFlag = flag.String("releases", "",
	"comma-separated controller-runtime@k8s.io versions to run the suite of, such as v0.24.1@v0.36.6; default: the adapter's supported releases")

// k8sModules are the k8s.io modules the scratch module pins to the
// release's k8s.io version: those the adapter, the library and envtest
// import. Every other k8s.io module of that numbering is checked to
// resolve to it as well.
var k8sModules = []string{
	"k8s.io/api",
	"k8s.io/apimachinery",
	"k8s.io/client-go",
	"k8s.io/apiserver",
	"k8s.io/apiextensions-apiserver",
}

const crModule = "sigs.k8s.io/controller-runtime"

// TestControllerRuntimeCacheSuite runs controller-runtime's pkg/cache
// suite of each release on the adapter's NewCache, one subtest per
// release, named after its controller-runtime version.
func TestControllerRuntimeCacheSuite(t *testing.T) {
	bins := testenv.NeedBinaries(t)

	adapter, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(adapter)

	run := releases
	if *releasesFlag != "" {
		run, err = parseReleases(*releasesFlag)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		// The release the adapter's go.mod requires must be one the run
		// checks, so that moving the floor moves the run with it.
		required := goListModule(t, adapter, crModule).Version
		if !slices.ContainsFunc(releases, func(r release) bool { return minor(r.ControllerRuntime) == minor(required) }) {
			t.Fatalf("the adapter's go.mod requires %s %s; releases (in %s) runs no %s release", crModule, required, "suite_test.go", minor(required))
		}
	}

	// envtest looks for kube-apiserver, etcd and kubectl in
	// KUBEBUILDER_ASSETS. It only records kubectl's path (for
	// ControlPlane.KubeCtl, which the suite never calls), so the directory
	// holds no kubectl: a suite that ran it would fail, not pass unseen.
	assets := t.TempDir()
	for name, path := range map[string]string{"kube-apiserver": bins.KubeAPIServer, "etcd": bins.Etcd} {
		if err := os.Symlink(path, filepath.Join(assets, name)); err != nil {
			t.Fatal(err)
		}
	}

	for _, r := range run {
		t.Run("controller-runtime-"+r.ControllerRuntime, func(t *testing.T) {
			runSuite(t, repo, assets, r)
		})
	}
}

// parseReleases parses the -releases flag.
func parseReleases(s string) ([]release, error) {
	var rs []release
	for p := range strings.SplitSeq(s, ",") {
		cr, k8s, ok := strings.Cut(strings.TrimSpace(p), "@")
		if !ok || !strings.HasPrefix(cr, "v0.") || !strings.HasPrefix(k8s, "v0.") {
			return nil, fmt.Errorf("-releases: %q is not controller-runtime@k8s.io, such as v0.24.1@v0.36.6", p)
		}
		rs = append(rs, release{ControllerRuntime: cr, K8s: k8s})
	}
	return rs, nil
}

// minor returns the v0.N prefix of a v0.N.P version.
func minor(v string) string {
	if i := strings.LastIndexByte(v, '.'); i > 0 {
		return v[:i]
	}
	return v
}

// runSuite builds the scratch module of release r, runs its suite and
// checks the outcome against the pinned failures.
func runSuite(t *testing.T, repo, assets string, r release) {
	ctx := t.Context()
	scratch := t.TempDir()
	src := downloadModule(t, crModule, r.ControllerRuntime)
	suite, err := copySuite(filepath.Join(src, "pkg", "cache"), scratch)
	if err != nil {
		t.Fatalf("copying %s %s's pkg/cache suite: %v", crModule, r.ControllerRuntime, err)
	}
	setupModule(t, scratch, repo, r)

	// Build first, run after: the suite's -test.timeout is then reckoned
	// from its start, and ends it (and envtest's control plane) before
	// this test's own deadline, however long the build took.
	bin := filepath.Join(t.TempDir(), "cache.test")
	build := []string{"test", "-c", "-o", bin}
	if raceEnabled {
		build = append(build, "-race")
	}
	goRun(t, scratch, append(build, ".")...)

	report := filepath.Join(t.TempDir(), "ginkgo.json")
	args := []string{"tool", "test2json", "-t", bin, "-test.v=test2json", "-test.count=1"}
	if d, ok := t.Deadline(); ok {
		// Leave this test time to report what went wrong.
		left := time.Until(d) - time.Minute
		if left <= 0 {
			t.Fatal("no time left to run the suite")
		}
		args = append(args, "-test.timeout="+left.Round(time.Second).String())
	}
	args = append(args, "-ginkgo.json-report="+report, "-ginkgo.no-color")
	cmd := goCommand(ctx, scratch, args...)
	// envtest gives kube-apiserver 20 seconds to start by default, which
	// a loaded machine exceeds; internal/testenv waits for minutes.
	cmd.Env = append(cmd.Env, "KUBEBUILDER_ASSETS="+assets,
		"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=5m", "KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT=1m")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run() // fails whenever a pinned spec fails: judged below
	elapsed := time.Since(start)

	tests, output := parseTestEvents(stdout.Bytes())
	if _, err := os.Stat(report); err != nil {
		t.Fatalf("go test %s wrote no ginkgo report (%v): %v\n%s%s", strings.Join(args, " "), runErr, err, tail(output, 8000), tail(stderr.String(), 4000))
	}
	reports, err := readReport(report)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(output, "WARNING: DATA RACE") {
		t.Errorf("the race detector reported a data race:\n%s", raceReports(output))
	}
	o := judge(suite, reports, tests, pinnedSpecs, pinnedTests)
	for _, p := range o.problems {
		t.Error(p)
	}
	t.Logf("%s %s with k8s.io %s, in %v: %d specs (the suite's own count %d): %d passed, %d failed of which %d pinned; plain tests: %d passed, %d failed of which %d pinned",
		crModule, r.ControllerRuntime, r.K8s, elapsed.Round(time.Second),
		o.specs, o.suiteTotal, o.specsPassed, o.specsFailed, o.specsPinned,
		o.testsPassed, o.testsFailed, o.testsPinned)
	if len(o.problems) > 0 {
		t.Logf("failed: %s", strings.Join(o.failedNames, "; "))
	}
}

// goCommand returns a go command run in dir on the module there alone
// (no workspace, the go.mod updated as needed, the local toolchain), in
// an environment from which whatever would point envtest elsewhere than
// our control plane is removed.
func goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "GOFLAGS", k == "GOWORK", k == "GOTOOLCHAIN",
			k == "USE_EXISTING_CLUSTER", k == "KUBECONFIG", strings.HasPrefix(k, "KUBEBUILDER_"),
			strings.HasPrefix(k, "TEST_ASSET_"), strings.HasPrefix(k, "GINKGO_"):
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	// Interrupt rather than kill, so that go test stops the suite, which
	// stops its control plane.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	return cmd
}

// goRun runs a go command in dir and returns its standard output.
func goRun(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := goCommand(t.Context(), dir, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return out
}

type goModule struct {
	Path    string
	Version string
	Dir     string
}

// goListModule returns module path as the module in dir resolves it.
func goListModule(t *testing.T, dir, path string) goModule {
	t.Helper()
	var m goModule
	if err := json.Unmarshal(goRun(t, dir, "list", "-m", "-json", path), &m); err != nil {
		t.Fatalf("go list -m -json %s: %v", path, err)
	}
	return m
}

// downloadModule returns the module cache directory of path@version.
func downloadModule(t *testing.T, path, version string) string {
	t.Helper()
	var m goModule
	out := goRun(t, t.TempDir(), "mod", "download", "-json", path+"@"+version)
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download -json %s@%s: no directory (%v): %s", path, version, err, out)
	}
	return m.Dir
}

// setupModule makes scratch a module that builds the suite on the
// repository's adapter and library, with controller-runtime and the
// k8s.io modules at release r, and checks that they resolve to it.
func setupModule(t *testing.T, scratch, repo string, r release) {
	t.Helper()
	const lib = "github.com/kubetyped/informers"
	// The adapter's go.mod (with the library's) sets the oldest release
	// the scratch module can pin: go get cannot lower a module below what
	// a replaced module requires.
	adapter := filepath.Join(repo, "controllerruntime")
	for _, p := range append([]string{crModule}, k8sModules...) {
		want := r.K8s
		if p == crModule {
			want = r.ControllerRuntime
		}
		if m := goListModule(t, adapter, p); m.Version != "" && semverLess(want, m.Version) {
			t.Fatalf("the adapter module requires %s %s, newer than %s's %s: its suite cannot run on the adapter until the adapter's go.mod (and the library's) require %s or older",
				p, m.Version, r, want, want)
		}
	}
	goRun(t, scratch, "mod", "init", "upstreamtest.scratch/cache")
	goRun(t, scratch, "mod", "edit",
		"-require="+lib+"@v0.0.0", "-replace="+lib+"="+repo,
		"-require="+lib+"/controllerruntime@v0.0.0", "-replace="+lib+"/controllerruntime="+filepath.Join(repo, "controllerruntime"))
	get := []string{"get", crModule + "@" + r.ControllerRuntime}
	for _, m := range k8sModules {
		get = append(get, m+"@"+r.K8s)
	}
	goRun(t, scratch, get...)
	goRun(t, scratch, "mod", "tidy")

	// A module the suite builds on (the adapter or the library) that
	// requires a newer release raises it: then this is not r's run.
	var wrong []string
	dec := json.NewDecoder(bytes.NewReader(goRun(t, scratch, "list", "-m", "-json", "all")))
	for dec.More() {
		var m goModule
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Path == crModule && m.Version != r.ControllerRuntime,
			slices.Contains(k8sModules, m.Path) && m.Version != r.K8s:
			wrong = append(wrong, m.Path+" "+m.Version)
		case strings.HasPrefix(m.Path, "k8s.io/") && strings.HasPrefix(m.Version, "v0.") &&
			minor(m.Version) != "v0.0" && minor(m.Version) != minor(r.K8s):
			// The other k8s.io modules of the release's numbering
			// (component-base, streaming…) come at its patch
			// controller-runtime requires: the minor must match.
			wrong = append(wrong, m.Path+" "+m.Version)
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("the scratch module for %s resolves %s: a module it builds on (the adapter's or the library's go.mod) requires a newer release",
			r, strings.Join(wrong, "; "))
	}
}

// semverLess reports whether version a (vX.Y.Z) is older than b.
func semverLess(a, b string) bool {
	parse := func(v string) (n [3]int) {
		v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "-")
		for i, f := range strings.SplitN(v, ".", 3) {
			n[i], _ = strconv.Atoi(f)
		}
		return n
	}
	x, y := parse(a), parse(b)
	return slices.Compare(x[:], y[:]) < 0
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// raceReports returns the race detector's reports in output.
func raceReports(output string) string {
	var b strings.Builder
	for _, part := range strings.Split(output, "WARNING: DATA RACE")[1:] {
		end, _, _ := strings.Cut(part, "==================")
		b.WriteString("WARNING: DATA RACE" + end + "\n")
	}
	return b.String()
}
