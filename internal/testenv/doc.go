// Package testenv runs a real Kubernetes control plane — etcd and
// kube-apiserver, no controller-manager, no nodes — for integration tests,
// benchmarks and example programs.
//
// # Binaries
//
// Nothing is downloaded prebuilt. The binaries are built from Go modules on
// first use by [Build] (called by [Start]) and cached under
// os.UserCacheDir()/kubetyped-informers/controlplane/<hash>/, where the hash
// covers the pinned module files and the Go version. The pins live in
// controlplane.mod and controlplane.sum in this directory: they are a go.mod
// and go.sum under other names, embedded with go:embed and written as
// go.mod/go.sum into the cache directory before `go build` runs there. We
// embed them rather than keep a nested module because the build then depends
// on nothing but the test binary itself: not on the source tree being
// present at run time, not on the working directory, and go:embed could not
// reach into a nested module anyway. The library's own go.mod never sees
// k8s.io/kubernetes.
//
// # Server versions
//
// controlplane.mod pins the newest kube-apiserver, the default, and the
// etcd that every version runs with. controlplane-1.34.mod and its
// siblings, with their .sum files, pin the older kube-apiservers that the
// library supports, one pair per minor version, each with the staging
// modules of its own release; [KubeVersions] lists them. The environment
// variable INFORMERS_KUBE_VERSION (EnvKubeVersion), such as 1.34, selects
// one; each is built on first use and cached under a hash of its own
// files, as the newest is. `make test-skew` runs the skew tests against
// each.
//
// Tests learn what runs from [Env.Server]: the version, and the feature
// gates the server offers, with their defaults. [Options.FeatureGates]
// are passed only where the server offers them (kube-apiserver refuses to
// start with a gate it does not know), and [Env.FeatureEnabled] says
// whether a gate is on: a test of a gate-dependent feature asks it, and on
// a server without the gate tests how the library does without.
//
// A cold build takes several minutes (12 on two busy cores), which can
// exceed go test's default -timeout of 10m: give the first run -timeout 30m.
// An interrupted build resumes from Go's build cache. Concurrent test
// binaries wait on a file lock instead of building twice, and binaries
// appear by atomic rename only once complete. Set INFORMERS_KUBE_APISERVER
// and INFORMERS_ETCD to use prebuilt binaries instead.
//
// # Control plane
//
// [Start] runs etcd (temporary data dir, loopback ports) and kube-apiserver
// with certificates generated in Go, RBAC authorization, a static token file
// with an admin user (group system:masters) and a user named
// [RestrictedUser] without any permissions, and the ServiceAccount admission
// plugin disabled so that pods can be created without a controller-manager.
// [Env.RestartAPIServer], [Env.CrashAPIServer], [Env.RestartEtcd] and
// [Env.Compact] disturb it the way production does.
//
// Watch-list streaming: kube-apiserver 1.34 to 1.37 serve watch requests
// with sendInitialEvents=true by default. The WatchList feature gate is
// Beta and on by default since 1.34 (k8s.io/apiserver pkg/features; it was
// switched off again in 1.33 only), so Start passes no --feature-gates
// flag. The test TestWatchListServedByDefault checks it against the real
// server.
//
// # Tests
//
// A test binary starts at most one shared control plane lazily:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Shared(t)
//		cs := kubernetes.NewForConfigOrDie(env.Config())
//		...
//	}
//
// Tests that restart or compact should start their own with [New]. When the
// control plane is unavailable, tests fail under CI=true and skip otherwise
// if the binaries could not be built; see [Shared].
//
// No child process outlives the test binary: each runs in its own process
// group, on Linux with a parent-death signal, and Stop kills the groups and
// removes the temporary directory. The directory of a test binary that died
// without stopping (a -timeout panic, a signal) is removed by the next Start.
package testenv
