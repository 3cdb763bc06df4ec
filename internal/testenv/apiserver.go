package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// apiServer is the kube-apiserver of an Env.
type apiServer struct {
	bin     string
	logPath string
	port    int
	etcdURL string
	creds   *credentials
	// uncached are resources whose watch cache is disabled.
	uncached []string
	// gates are feature gates to set.
	gates map[string]bool
	// extraArgs are appended to the flags; a repeated flag overrides.
	extraArgs []string

	client *http.Client // trusts the Env's CA
	proc   *process
}

func (a *apiServer) host() string { return "https://127.0.0.1:" + strconv.Itoa(a.port) }

func (a *apiServer) args() []string {
	c := a.creds
	args := []string{
		"--etcd-servers=" + a.etcdURL,
		"--bind-address=127.0.0.1",
		// Without it the apiserver looks for an address on the default
		// route's interface, which a machine without network lacks. The
		// endpoint reconciler refuses a loopback address; it would only
		// publish it as the endpoint of the default/kubernetes service,
		// which nothing here uses.
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(a.port),
		"--tls-cert-file=" + c.certFile,
		"--tls-private-key-file=" + c.keyFile,
		"--client-ca-file=" + c.caFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.saPubFile,
		"--service-account-signing-key-file=" + c.saKeyFile,
		"--token-auth-file=" + c.tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller-manager creates the default ServiceAccount that
		// this plugin would require of every pod.
		"--disable-admission-plugins=ServiceAccount",
		// WatchList (sendInitialEvents=true) is on by default in 1.37; see
		// the package documentation.
	}
	if len(a.uncached) > 0 {
		sizes := make([]string, len(a.uncached))
		for i, r := range a.uncached {
			sizes[i] = r + "#0"
		}
		args = append(args, "--watch-cache-sizes="+strings.Join(sizes, ","))
	}
	if len(a.gates) > 0 {
		gates := make([]string, 0, len(a.gates))
		for _, name := range slices.Sorted(maps.Keys(a.gates)) {
			gates = append(gates, name+"="+strconv.FormatBool(a.gates[name]))
		}
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	return append(args, a.extraArgs...)
}

// start starts kube-apiserver and waits until /readyz reports ok.
func (a *apiServer) start(ctx context.Context) error {
	if a.client == nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(a.creds.caPEM)
		a.client = &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool},
		}}
	}
	p, err := startProcess("kube-apiserver", exec.Command(a.bin, a.args()...), a.logPath)
	if err != nil {
		return err
	}
	a.proc = p
	start := time.Now()
	if err := waitFor(ctx, p, a.ready); err != nil {
		p.kill()
		return startError("kube-apiserver", a.logPath, err)
	}
	a.client.CloseIdleConnections() // no goroutines linger between uses
	klog.FromContext(ctx).V(1).Info("kube-apiserver is ready", "host", a.host(), "elapsed", time.Since(start))
	return nil
}

// waitReady waits until /readyz reports ok, for example after an etcd
// restart.
func (a *apiServer) waitReady(ctx context.Context) error {
	if err := waitFor(ctx, a.proc, a.ready); err != nil {
		return startError("kube-apiserver", a.logPath, err)
	}
	a.client.CloseIdleConnections()
	return nil
}

// ready reports whether /readyz answers ok; if not, the error lists the
// failing checks.
func (a *apiServer) ready(ctx context.Context) error {
	body, err := a.get(ctx, "/readyz")
	if err != nil && body != "" {
		return fmt.Errorf("%w: %s", err, failedChecks(body))
	}
	return err
}

// collectGarbage makes kube-apiserver run a full garbage collection: it
// collects before it writes a heap profile asked for with gc=1.
func (a *apiServer) collectGarbage(ctx context.Context) error {
	defer a.client.CloseIdleConnections() // no goroutines linger between uses
	_, err := a.get(ctx, "/debug/pprof/heap?gc=1")
	return err
}

// get sends a GET of path as the admin user and returns the first 64 KiB
// of the answer, and an error if it is not 200 OK.
func (a *apiServer) get(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.host()+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.creds.adminToken)
	resp, err := a.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: %s", path, resp.Status)
	}
	return string(body), nil
}

// failedChecks keeps the failing lines of a verbose /readyz answer.
func failedChecks(body string) string {
	var failed []string
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(body)
	}
	return strings.Join(failed, "; ")
}
