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

// buildTarget is a package built from a pin. out is the name go build
// gives the binary (a package path ending in a major version suffix is
// named after the element before it); name is the name it is cached under.
type buildTarget struct{ pkg, out, name string }

var (
	kubeAPIServerTarget = buildTarget{pkg: "k8s.io/kubernetes/cmd/kube-apiserver", out: "kube-apiserver", name: "kube-apiserver"}
	etcdTarget          = buildTarget{pkg: "go.etcd.io/etcd/server/v3", out: "server", name: "etcd"}
)

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
// that. EnvKubeVersion selects the kube-apiserver (the newest by default);
// etcd is the same for every version. The environment variables
// EnvKubeAPIServer and EnvEtcd override either binary. Build logs its
// progress through the logger in ctx (klog's default writes to stderr).
// Failures to build are reported as *BuildError; a selection of a version
// that is not pinned is not one.
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
	selected, err := selectedPin()
	if err != nil {
		return Binaries{}, err
	}
	if b.KubeAPIServer == "" {
		if b.KubeAPIServer, err = buildCached(ctx, selected, kubeAPIServerTarget); err != nil {
			return Binaries{}, &BuildError{Err: err}
		}
	}
	if b.Etcd == "" {
		newest, err := newestPin()
		if err != nil {
			return Binaries{}, err
		}
		if b.Etcd, err = buildCached(ctx, newest, etcdTarget); err != nil {
			return Binaries{}, &BuildError{Err: err}
		}
	}
	return b, nil
}

// buildCached returns the path of the binary of target, built from p, in
// the cache directory, building it there first if needed. Concurrent callers, in this process
// or others, serialize on a file lock in that directory; the binaries
// appear by atomic rename, so a reader never sees a partial file.
func buildCached(ctx context.Context, p pin, target buildTarget) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("finding the go command: %w", err)
	}
	root, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory: %w", err)
	}
	root = filepath.Join(root, "kubetyped-informers", "controlplane")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache directory: %w", err)
	}
	goVersion, err := goEnv(ctx, gobin, root, "GOVERSION")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, cacheKey(p, goVersion))
	bin := filepath.Join(dir, target.name)
	if exists(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache directory: %w", err)
	}
	logger := klog.FromContext(ctx)
	lock, err := lockFile(ctx, filepath.Join(dir, "lock"), func() {
		logger.Info("waiting for another process that is building the control plane", "pin", p.name, "dir", dir)
	})
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if exists(bin) { // built by whoever held the lock before us
		return bin, nil
	}
	if err := build(ctx, gobin, dir, p, target); err != nil {
		return "", err
	}
	return bin, nil
}

// exists reports whether the file at path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// cacheKey names the cache directory for binaries built by goVersion from
// the module files of p.
func cacheKey(p pin, goVersion string) string {
	h := sha256.New()
	for _, b := range [][]byte{p.mod, p.sum, []byte(goVersion), []byte(runtime.GOOS + "/" + runtime.GOARCH)} {
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

// build builds target from p into dir. The caller holds dir's lock.
func build(ctx context.Context, gobin, dir string, p pin, target buildTarget) error {
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
	if err := os.WriteFile(filepath.Join(src, "go.mod"), p.mod, 0o644); err != nil {
		return fmt.Errorf("writing go.mod: %w", err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.sum"), p.sum, 0o644); err != nil {
		return fmt.Errorf("writing go.sum: %w", err)
	}

	cmd := exec.Command(gobin, "build", "-o", out+string(filepath.Separator), target.pkg)
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
	logger.Info("building "+target.name+" from Go modules (first use, takes several minutes)…", "pin", p.name, "dir", dir)
	start := time.Now()
	proc, err := startProcess("go build", cmd, filepath.Join(work, "build.log"))
	if err != nil {
		return err
	}
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
wait:
	for {
		select {
		case <-proc.done:
			break wait
		case <-tick.C:
			logger.Info("still building "+target.name+"…", "elapsed", time.Since(start).Round(time.Second))
		case <-ctx.Done():
			proc.kill()
			return fmt.Errorf("building %s: %w", target.name, context.Cause(ctx))
		}
	}
	if proc.err != nil {
		return fmt.Errorf("%w%s", proc.exitError(), logTail(proc.logPath))
	}
	if err := os.Rename(filepath.Join(out, target.out), filepath.Join(dir, target.name)); err != nil {
		return fmt.Errorf("installing %s: %w", target.name, err)
	}
	logger.Info("built "+target.name, "pin", p.name, "elapsed", time.Since(start).Round(time.Second), "dir", dir)
	return nil
}
