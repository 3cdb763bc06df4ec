package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"time"

	"k8s.io/klog/v2"
)

// etcdServer is the etcd of an Env: one member on loopback ports with a
// data directory that survives restarts.
type etcdServer struct {
	bin        string
	dataDir    string
	logPath    string
	clientPort int
	peerPort   int

	client *http.Client // for health checks and the gRPC gateway
	proc   *process
}

func (e *etcdServer) clientURL() string { return fmt.Sprintf("http://127.0.0.1:%d", e.clientPort) }

func (e *etcdServer) args() []string {
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", e.peerPort)
	return []string{
		"--name=testenv",
		"--data-dir=" + e.dataDir,
		"--listen-client-urls=" + e.clientURL(),
		"--advertise-client-urls=" + e.clientURL(),
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testenv=" + peerURL,
		// Page cache survives a killed process; only a machine crash would
		// lose data, and a test environment does not outlive one.
		"--unsafe-no-fsync",
	}
}

// start starts etcd and waits until it reports healthy.
func (e *etcdServer) start(ctx context.Context) error {
	if e.client == nil {
		e.client = &http.Client{Transport: &http.Transport{}}
	}
	p, err := startProcess("etcd", exec.Command(e.bin, e.args()...), e.logPath)
	if err != nil {
		return err
	}
	e.proc = p
	start := time.Now()
	if err := waitFor(ctx, p, e.healthy); err != nil {
		p.kill()
		return startError("etcd", e.logPath, err)
	}
	e.client.CloseIdleConnections() // no goroutines linger between uses
	klog.FromContext(ctx).V(1).Info("etcd is healthy", "url", e.clientURL(), "elapsed", time.Since(start))
	return nil
}

// healthy reports whether etcd answers its health check.
func (e *etcdServer) healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.clientURL()+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("decoding /health: %w", err)
	}
	if resp.StatusCode != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("/health: %s: health=%q reason=%q", resp.Status, h.Health, h.Reason)
	}
	return nil
}

// compactRevKey is the key through which kube-apiservers share the last
// compacted revision (k8s.io/apiserver/pkg/storage/etcd3/compact.go).
const compactRevKey = "compact_rev_key"

// compact compacts etcd's history up to its current revision and records
// the revision under compactRevKey, as kube-apiserver's own compactor does,
// so that the apiserver learns of it. It returns the compacted revision.
//
// It talks to etcd's gRPC gateway (JSON over HTTP) so that this module
// needs no etcd client.
func (e *etcdServer) compact(ctx context.Context) (int64, error) {
	defer e.client.CloseIdleConnections()
	var rng struct {
		Header struct {
			Revision int64 `json:"revision,string"`
		} `json:"header"`
	}
	if err := e.gateway(ctx, "/v3/kv/range", map[string]any{"key": []byte(compactRevKey)}, &rng); err != nil {
		return 0, err
	}
	rev := rng.Header.Revision
	if rev == 0 {
		return 0, fmt.Errorf("etcd reported revision 0")
	}
	put := map[string]any{"key": []byte(compactRevKey), "value": []byte(strconv.FormatInt(rev, 10))}
	if err := e.gateway(ctx, "/v3/kv/put", put, nil); err != nil {
		return 0, err
	}
	if err := e.gateway(ctx, "/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// movedOnKey is the key, outside kube-apiserver's prefix, that moveOn
// writes.
const movedOnKey = "testenv/moved-on"

// moveOn writes to etcd, so that its revision moves past every version
// kube-apiserver has served.
func (e *etcdServer) moveOn(ctx context.Context) error {
	defer e.client.CloseIdleConnections()
	put := map[string]any{"key": []byte(movedOnKey), "value": []byte(time.Now().Format(time.RFC3339Nano))}
	if err := e.gateway(ctx, "/v3/kv/put", put, nil); err != nil {
		return fmt.Errorf("writing while kube-apiserver is down: %w", err)
	}
	return nil
}

// gateway posts req as JSON to etcd's gRPC gateway at path and decodes the
// answer into resp unless it is nil. []byte fields encode as base64, as the
// gateway expects for bytes.
func (e *etcdServer) gateway(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, e.clientURL()+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := e.client.Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: reading the response: %w", path, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, res.Status, bytes.TrimSpace(b))
	}
	if resp != nil {
		if err := json.Unmarshal(b, resp); err != nil {
			return fmt.Errorf("etcd %s: decoding %q: %w", path, b, err)
		}
	}
	return nil
}
