package testenv

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sharedTimeout bounds building (on first use) and starting the shared
// control plane.
const sharedTimeout = 30 * time.Minute

var (
	mainCalled atomic.Bool

	sharedMu  sync.Mutex
	sharedEnv *Env
	sharedErr error // memoized so that a failed build is not retried by every test
)

// Main runs the tests of a package that uses Shared, then stops the shared
// control plane if one was started, and exits with the tests' status. Call
// it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	sharedMu.Lock()
	if sharedEnv != nil {
		sharedEnv.Stop()
		sharedEnv = nil
	}
	sharedMu.Unlock()
	os.Exit(code)
}

// Shared returns the test binary's control plane, started on first use
// with the zero Options and stopped by Main after all tests. Tests sharing
// it must not restart, compact or stop it, and should create their objects
// in namespaces of their own; tests that disturb the control plane use New.
// Until Main stops it, the shared Env keeps one goroutine per child process
// (testenv.(*process).run), which goroutine leak checks should ignore.
//
// When the control plane is unavailable, the test fails if the environment
// variable CI is true. Otherwise it is skipped if the binaries could not be
// built (no Go module proxy, for instance) or the test runs with -short,
// and fails for any other reason.
func Shared(t testing.TB) *Env {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("testenv: Shared needs TestMain to call testenv.Main(m)")
	}
	skipShort(t)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedEnv == nil && sharedErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		sharedEnv, sharedErr = Start(ctx, Options{})
		cancel()
	}
	if sharedErr != nil {
		unavailable(t, sharedErr)
	}
	return sharedEnv
}

// New starts a control plane for one test and stops it when the test and
// its subtests have finished. On failure to start it behaves like Shared.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	env, err := Start(ctx, opts)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// NeedBinaries returns the control plane's executables for a test that
// runs them itself (through another harness, such as controller-runtime's
// envtest), building them on first use. When they cannot be had it behaves
// like Shared: the test fails in CI, and outside CI skips if the binaries
// could not be built or the test runs with -short.
func NeedBinaries(t testing.TB) Binaries {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	bins, err := Build(ctx)
	if err != nil {
		unavailable(t, err)
	}
	return bins
}

// inCI reports whether the environment variable CI says we run in CI.
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() && !inCI() {
		t.Skip("testenv: skipping a test that needs a control plane in -short mode")
	}
}

// unavailable ends a test that could not get its control plane.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if inCI() {
		t.Fatalf("testenv: no control plane in CI (CI=%s): %v", os.Getenv("CI"), err)
	}
	if _, ok := errors.AsType[*BuildError](err); ok {
		t.Skipf("skipping: %v\n"+
			"These tests need kube-apiserver and etcd, built once from Go modules (several minutes).\n"+
			"Make the Go module proxy reachable, or set %s and %s to prebuilt binaries.\n"+
			"Set CI=true to make this a failure instead of a skip.",
			err, EnvKubeAPIServer, EnvEtcd)
	}
	t.Fatal(err)
}
