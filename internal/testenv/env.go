package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Options configure a control plane. The zero value is a control plane as a
// cluster runs it, with the watch cache on for every resource.
type Options struct {
	// UncachedResources disables kube-apiserver's watch cache for the
	// listed resources (lowercase plural, with ".group" unless in the core
	// group: "configmaps", "deployments.apps"). Their lists and watches are
	// then served by etcd, so a watch from a compacted resource version
	// fails with 410 Gone at once; see Env.Compact.
	UncachedResources []string
	// FeatureGates sets kube-apiserver feature gates, such as
	// {"ShardedListAndWatch": true}; nil leaves every gate at its default.
	// A gate the server does not offer (see Server.Gates), such as
	// ShardedListAndWatch before 1.36, is left out, since kube-apiserver
	// refuses to start with a gate it does not know: a test asks
	// Env.FeatureEnabled what it got, and tests the library's behaviour
	// on a server without the feature when the gate is off.
	FeatureGates map[string]bool
	// APIServerArgs are appended to kube-apiserver's flags; a flag given
	// again overrides the default.
	APIServerArgs []string
	// KeepDir keeps the temporary directory with the logs and etcd's data
	// after Stop, and logs where it is. Nothing removes it later.
	KeepDir bool
}

// Env is a running control plane: one etcd and one kube-apiserver, on
// loopback ports, with a temporary directory holding etcd's data, the
// credentials and the logs (etcd.log, kube-apiserver.log). Its methods are
// safe for concurrent use; Restart*, Compact and Stop run one at a time.
type Env struct {
	dir    string
	lock   *os.File // flock held for the Env's lifetime; see tempdir.go
	opts   Options
	logger klog.Logger // from Start's context, for Stop

	creds     *credentials
	etcd      *etcdServer
	apiserver *apiServer
	server    Server

	mu      sync.Mutex // serializes Restart*, Compact and Stop
	stopped bool
}

// restartGrace is how long a restart lets a process terminate gracefully
// before killing it.
const restartGrace = 10 * time.Second

// Start builds the binaries if needed (see Build) and starts etcd and
// kube-apiserver, returning once /readyz reports ok. ctx bounds the build
// and the startup, not the processes: they run until Stop. Progress and
// diagnostics go to the logger in ctx. Build failures are *BuildError; a
// failure to start includes the tail of the failing process's log.
func Start(ctx context.Context, opts Options) (*Env, error) {
	bins, err := Build(ctx)
	if err != nil {
		return nil, err
	}
	server, err := inspectServer(ctx, bins.KubeAPIServer)
	if err != nil {
		return nil, err
	}
	opts.FeatureGates = offeredGates(ctx, server, opts.FeatureGates)
	// A port found free can be taken by another process before etcd or
	// kube-apiserver binds it; try again with other ports then.
	for attempt := 1; ; attempt++ {
		env, err := startEnv(ctx, bins, server, opts)
		if err == nil || attempt == 3 || !errors.Is(err, errAddrInUse) {
			return env, err
		}
		klog.FromContext(ctx).Info("retrying with other ports", "err", err)
	}
}

// errAddrInUse marks a failure to start because a port was taken.
var errAddrInUse = errors.New("address already in use")

// startError describes a failure of process name to start, with the tail
// of its log, and marks it with errAddrInUse if the log says a port was
// taken.
func startError(name, logPath string, err error) error {
	tail := logTail(logPath)
	if strings.Contains(tail, "address already in use") {
		err = fmt.Errorf("%w: %w", errAddrInUse, err)
	}
	return fmt.Errorf("waiting for %s to become ready: %w%s", name, err, tail)
}

func startEnv(ctx context.Context, bins Binaries, server Server, opts Options) (_ *Env, err error) {
	logger := klog.FromContext(ctx)
	start := time.Now()
	dir, lock, err := newEnvDir(ctx)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e := &Env{dir: dir, lock: lock, opts: opts, logger: logger, etcd: &etcdServer{}, apiserver: &apiServer{}, server: server}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()

	if e.creds, err = writeCredentials(dir); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	*e.etcd = etcdServer{
		bin:        bins.Etcd,
		dataDir:    filepath.Join(dir, "etcd"),
		logPath:    filepath.Join(dir, "etcd.log"),
		clientPort: ports[0],
		peerPort:   ports[1],
	}
	*e.apiserver = apiServer{
		bin:       bins.KubeAPIServer,
		logPath:   filepath.Join(dir, "kube-apiserver.log"),
		port:      ports[2],
		etcdURL:   e.etcd.clientURL(),
		creds:     e.creds,
		uncached:  opts.UncachedResources,
		gates:     opts.FeatureGates,
		extraArgs: opts.APIServerArgs,
	}
	if err := e.etcd.start(ctx); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := e.apiserver.start(ctx); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if e.server.Version == nil {
		if e.server.Version, err = e.apiserver.servedVersion(ctx); err != nil {
			return nil, fmt.Errorf("testenv: asking kube-apiserver its version: %w", err)
		}
	}
	if err := checkSelectedVersion(e.server.Version, bins.KubeAPIServer); err != nil {
		return nil, err
	}
	logger.Info("control plane is ready", "host", e.apiserver.host(), "kubernetes", e.server.Version, "dir", dir, "elapsed", time.Since(start).Round(time.Millisecond))
	return e, nil
}

// offeredGates returns the gates of want that server offers, and logs the
// others, which it leaves out.
func offeredGates(ctx context.Context, server Server, want map[string]bool) map[string]bool {
	var offered map[string]bool
	for name, on := range want {
		if !server.HasGate(name) {
			klog.FromContext(ctx).Info("kube-apiserver has no such feature gate; starting it without", "gate", name, "kubernetes", server.Version)
			continue
		}
		if offered == nil {
			offered = map[string]bool{}
		}
		offered[name] = on
	}
	return offered
}

// checkSelectedVersion fails if EnvKubeVersion selects a version other
// than v, the version of the kube-apiserver at bin (which
// EnvKubeAPIServer can name).
func checkSelectedVersion(v *version.Version, bin string) error {
	want := strings.TrimPrefix(strings.TrimSpace(os.Getenv(EnvKubeVersion)), "v")
	if got := fmt.Sprintf("%d.%d", v.Major(), v.Minor()); want != "" && got != want {
		return fmt.Errorf("testenv: %s=%s, but the kube-apiserver at %s is %s", EnvKubeVersion, want, bin, v)
	}
	return nil
}

// Server returns what the Env's kube-apiserver is: its version and the
// feature gates it offers.
func (e *Env) Server() Server { return e.server }

// FeatureEnabled reports whether feature gate name is on in the Env's
// kube-apiserver: as Options.FeatureGates set it if the server offers
// it, else at its default; false for a gate the server does not offer,
// which includes GA gates (see Server.Gates).
func (e *Env) FeatureEnabled(name string) bool {
	if on, ok := e.opts.FeatureGates[name]; ok {
		return on
	}
	return e.server.Gates[name].Default
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		// Closed only after all are chosen, so that they differ.
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// Config returns a new client configuration for the admin user, with
// client-side rate limiting off. Each call returns a fresh copy.
func (e *Env) Config() *rest.Config { return e.config(e.creds.adminToken) }

// RestrictedConfig returns a new client configuration for RestrictedUser,
// who may do nothing but discovery until a test grants it a role.
func (e *Env) RestrictedConfig() *rest.Config { return e.config(e.creds.restrictToken) }

func (e *Env) config(token string) *rest.Config {
	return &rest.Config{
		Host:            e.apiserver.host(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), e.creds.caPEM...)},
		QPS:             -1, // no client-side rate limiter
	}
}

// ServerCPU returns the CPU time that the running etcd and kube-apiserver
// processes have used since they started (a restarted process starts from
// zero). Benchmarks take the difference around what they measure, to tell
// the server's share of a sync from the client's. Linux only.
func (e *Env) ServerCPU() (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var total time.Duration
	for _, p := range []*process{e.etcd.proc, e.apiserver.proc} {
		d, err := p.cpu()
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// CollectAPIServerGarbage makes kube-apiserver run a full garbage
// collection, through its profiling endpoint (a heap profile after a
// collection; kube-apiserver serves it by default). A benchmark collects
// between two measured syncs, as it collects its own heap, so that each
// sync starts from the same server heap and does not pay for the garbage
// of the one before.
func (e *Env) CollectAPIServerGarbage(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("testenv: CollectAPIServerGarbage after Stop")
	}
	if err := e.apiserver.collectGarbage(ctx); err != nil {
		return fmt.Errorf("testenv: collecting kube-apiserver's garbage: %w", err)
	}
	return nil
}

// Dir returns the Env's temporary directory, which holds etcd.log and
// kube-apiserver.log.
func (e *Env) Dir() string { return e.dir }

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after a grace
// period) and starts it again on the same port, returning once /readyz
// reports ok. Clients see their connections and watches end.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	return e.restartAPIServer(ctx, "restarted", func(p *process) error { return p.stop(ctx, restartGrace) })
}

// CrashAPIServer kills kube-apiserver (SIGKILL, as kill -9, a crash or the
// OOM killer do), writes to etcd while it is down, as the other API
// servers of a cluster go on doing, and starts it again on the same port,
// returning once /readyz reports ok. Nothing ends gracefully: requests in
// flight get no answer and watches no end. The new server's watch cache
// starts past the version of every client, so that a watch resuming from
// the last version a client saw fails with 410 Gone.
func (e *Env) CrashAPIServer(ctx context.Context) error {
	return e.restartAPIServer(ctx, "crashed and restarted", func(p *process) error {
		if err := p.kill(); err != nil {
			return err
		}
		return e.etcd.moveOn(ctx)
	})
}

// restartAPIServer ends kube-apiserver with stop and starts it again.
func (e *Env) restartAPIServer(ctx context.Context, what string, stop func(*process) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("testenv: restarting kube-apiserver after Stop")
	}
	start := time.Now()
	if err := stop(e.apiserver.proc); err != nil {
		return fmt.Errorf("testenv: stopping kube-apiserver: %w", err)
	}
	if err := e.apiserver.start(ctx); err != nil {
		return fmt.Errorf("testenv: restarting kube-apiserver: %w", err)
	}
	klog.FromContext(ctx).Info(what+" kube-apiserver", "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// KillAPIServer kills kube-apiserver (SIGKILL, as kill -9 does) and
// leaves it down until StartAPIServer: clients see their connections
// refused meanwhile.
func (e *Env) KillAPIServer() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("testenv: killing kube-apiserver after Stop")
	}
	return e.apiserver.proc.kill()
}

// StartAPIServer starts kube-apiserver again, after KillAPIServer, on the
// same port, returning once /readyz reports ok.
func (e *Env) StartAPIServer(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("testenv: starting kube-apiserver after Stop")
	}
	if err := e.apiserver.start(ctx); err != nil {
		return fmt.Errorf("testenv: starting kube-apiserver: %w", err)
	}
	return nil
}

// RestartEtcd kills etcd and starts it again with the same data and ports,
// while kube-apiserver keeps running. It returns once etcd is healthy and
// kube-apiserver, having reconnected, reports /readyz ok.
//
// etcd is killed (SIGKILL), as in a crash, rather than terminated: on
// SIGTERM it waits seven seconds for kube-apiserver's watch streams to end,
// which they never do. No acknowledged write is lost; without fsync the
// data is in the page cache, which outlives the process.
func (e *Env) RestartEtcd(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("testenv: RestartEtcd after Stop")
	}
	start := time.Now()
	if err := e.etcd.proc.kill(); err != nil {
		return fmt.Errorf("testenv: stopping etcd: %w", err)
	}
	if err := e.etcd.start(ctx); err != nil {
		return fmt.Errorf("testenv: restarting etcd: %w", err)
	}
	if err := e.apiserver.waitReady(ctx); err != nil {
		return fmt.Errorf("testenv: after restarting etcd: %w", err)
	}
	klog.FromContext(ctx).Info("restarted etcd", "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// Compact compacts etcd's history up to its current revision, as
// kube-apiserver itself does every five minutes, and records the revision
// where kube-apiserver's own compactor does, so that the apiserver knows.
//
// What clients observe depends on kube-apiserver's watch cache. Requests
// served by etcd fail with 410 Gone for older resource versions at once;
// this includes every watch and list of Options.UncachedResources. Watches
// served by the watch cache, the default for every resource, do not:
// kube-apiserver 1.37 keeps serving them from its in-memory event history,
// which etcd compaction does not truncate. To make a cached watch from an
// old resource version fail with 410 Gone, restart the apiserver: its new
// watch cache starts at the current revision. TestCompact shows both.
func (e *Env) Compact(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("testenv: Compact after Stop")
	}
	rev, err := e.etcd.compact(ctx)
	if err != nil {
		return fmt.Errorf("testenv: compacting etcd: %w", err)
	}
	klog.FromContext(ctx).V(1).Info("compacted etcd", "revision", rev)
	return nil
}

// Stop kills kube-apiserver and etcd, waits for them to exit and removes the
// temporary directory unless Options.KeepDir is set. It is safe to call more
// than once; later calls do nothing.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	var errs []error
	if e.apiserver.proc != nil {
		errs = append(errs, e.apiserver.proc.kill())
	}
	if e.etcd.proc != nil {
		errs = append(errs, e.etcd.proc.kill())
	}
	for _, c := range []*http.Client{e.apiserver.client, e.etcd.client} {
		if c != nil {
			c.CloseIdleConnections()
		}
	}
	if e.opts.KeepDir {
		errs = append(errs, keepEnvDir(e.dir))
		e.logger.Info("keeping the test environment's directory", "dir", e.dir)
	} else if err := os.RemoveAll(e.dir); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, e.lock.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testenv: stopping: %w", err)
	}
	return nil
}
