package testenv

import (
	"context"
	"crypto/sha256"
	_ "embed" // for the module files pinning the control plane
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// The module that pins the control plane; see doc.go for why it is embedded.
var (
	//go:embed controlplane.mod
	controlPlaneMod []byte
	//go:embed controlplane.sum
	controlPlaneSum []byte
)

// Environment variables naming prebuilt binaries to use instead of building
// them.
const (
	EnvKubeAPIServer = "INFORMERS_KUBE_APISERVER"
	EnvEtcd          = "INFORMERS_ETCD"
)

// buildTargets are the packages built from controlplane.mod. out is the
// name go build gives the binary (a package path ending in a major version
// suffix is named after the element before it); name is the name it is
// cached under.
var buildTargets = []struct{ pkg, out, name string }{
	{pkg: "k8s.io/kubernetes/cmd/kube-apiserver", out: "kube-apiserver", name: "kube-apiserver"},
	{pkg: "go.etcd.io/etcd/server/v3", out: "server", name: "etcd"},
}

// progressInterval is how often a running build reports that it is alive.
const progressInterval = 30 * time.Second

// Binaries holds the paths of the control plane's executables.
type Binaries struct {
	KubeAPIServer string
	Etcd          string
}

// BuildError reports that the control plane's binaries could not be built,
// typically because the Go module proxy is unreachable. Outside CI, tests
// skip on it; see Shared.
type BuildError struct {
	Err error
}

func (e *BuildError) Error() string {
	return "testenv: building kube-apiserver and etcd: " + e.Err.Error()
}

func (e *BuildError) Unwrap() error { return e.Err }

// Build returns the kube-apiserver and etcd executables, building them from
// the pinned Go modules on first use and reusing the cached build after
// that. The environment variables EnvKubeAPIServer and EnvEtcd override
// either. Build logs its progress through the logger in ctx (klog's default
// writes to stderr). Failures to build are reported as *BuildError.
func Build(ctx context.Context) (Binaries, error) {
	b := Binaries{KubeAPIServer: os.Getenv(EnvKubeAPIServer), Etcd: os.Getenv(EnvEtcd)}
	for env, path := range map[string]string{EnvKubeAPIServer: b.KubeAPIServer, EnvEtcd: b.Etcd} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return Binaries{}, fmt.Errorf("testenv: %s: %w", env, err)
		}
	}
	if b.KubeAPIServer != "" && b.Etcd != "" {
		return b, nil
	}
	built, err := buildCached(ctx)
	if err != nil {
		return Binaries{}, &BuildError{Err: err}
	}
	if b.KubeAPIServer == "" {
		b.KubeAPIServer = built.KubeAPIServer
	}
	if b.Etcd == "" {
		b.Etcd = built.Etcd
	}
	return b, nil
}

// buildCached returns the binaries from the cache directory, building them
// there first if needed. Concurrent callers, in this process or others,
// serialize on a file lock in that directory; the binaries appear by atomic
// rename, so a reader never sees a partial file.
func buildCached(ctx context.Context) (Binaries, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return Binaries{}, fmt.Errorf("finding the go command: %w", err)
	}
	root, err := os.UserCacheDir()
	if err != nil {
		return Binaries{}, fmt.Errorf("finding the cache directory: %w", err)
	}
	root = filepath.Join(root, "kubetyped-informers", "controlplane")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("creating the cache directory: %w", err)
	}
	goVersion, err := goEnv(ctx, gobin, root, "GOVERSION")
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(root, cacheKey(goVersion))
	bins := Binaries{
		KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		Etcd:          filepath.Join(dir, "etcd"),
	}
	if bins.exist() {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("creating the cache directory: %w", err)
	}
	logger := klog.FromContext(ctx)
	lock, err := lockFile(ctx, filepath.Join(dir, "lock"), func() {
		logger.Info("waiting for another process that is building kube-apiserver and etcd", "dir", dir)
	})
	if err != nil {
		return Binaries{}, err
	}
	defer lock.Close()
	if bins.exist() { // built by whoever held the lock before us
		return bins, nil
	}
	if err := build(ctx, gobin, dir); err != nil {
		return Binaries{}, err
	}
	return bins, nil
}

// exist reports whether both binaries exist.
func (b Binaries) exist() bool {
	for _, p := range []string{b.KubeAPIServer, b.Etcd} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// cacheKey names the cache directory for binaries built by goVersion from
// the embedded module files.
func cacheKey(goVersion string) string {
	h := sha256.New()
	for _, b := range [][]byte{controlPlaneMod, controlPlaneSum, []byte(goVersion), []byte(runtime.GOOS + "/" + runtime.GOARCH)} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// goEnv returns the value of a go env variable, as seen from dir.
func goEnv(ctx context.Context, gobin, dir, name string) (string, error) {
	cmd := exec.CommandContext(ctx, gobin, "env", name)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// build builds the binaries into dir. The caller holds dir's lock.
func build(ctx context.Context, gobin, dir string) error {
	// Work directories left by a builder that died; we hold the lock, so
	// none is in use.
	stale, _ := filepath.Glob(filepath.Join(dir, "build-*"))
	for _, s := range stale {
		os.RemoveAll(s)
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("creating the build directory: %w", err)
	}
	defer os.RemoveAll(work)
	src, out := filepath.Join(work, "src"), filepath.Join(work, "bin")
	for _, d := range []string{src, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("creating the build directory: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), controlPlaneMod, 0o644); err != nil {
		return fmt.Errorf("writing go.mod: %w", err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.sum"), controlPlaneSum, 0o644); err != nil {
		return fmt.Errorf("writing go.sum: %w", err)
	}

	args := []string{"build", "-o", out + string(filepath.Separator)}
	for _, t := range buildTargets {
		args = append(args, t.pkg)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = src
	// Build for this machine, from exactly the pinned modules, ignoring any
	// workspace or build flags of the caller's environment.
	cmd.Env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=readonly",
		"GOOS="+runtime.GOOS,
		"GOARCH="+runtime.GOARCH,
	)

	logger := klog.FromContext(ctx)
	logger.Info("building kube-apiserver and etcd from Go modules (first use, takes several minutes)…", "dir", dir)
	start := time.Now()
	p, err := startProcess("go build", cmd, filepath.Join(work, "build.log"))
	if err != nil {
		return err
	}
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-tick.C:
			logger.Info("still building kube-apiserver and etcd…", "elapsed", time.Since(start).Round(time.Second))
		case <-ctx.Done():
			p.kill()
			return fmt.Errorf("building kube-apiserver and etcd: %w", context.Cause(ctx))
		}
	}
	if p.err != nil {
		return fmt.Errorf("%w%s", p.exitError(), logTail(p.logPath))
	}
	for _, t := range buildTargets {
		if err := os.Rename(filepath.Join(out, t.out), filepath.Join(dir, t.name)); err != nil {
			return fmt.Errorf("installing %s: %w", t.name, err)
		}
	}
	logger.Info("built kube-apiserver and etcd", "elapsed", time.Since(start).Round(time.Second), "dir", dir)
	return nil
}
