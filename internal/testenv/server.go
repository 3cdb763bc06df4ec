package testenv

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/version"
)

// Server describes a kube-apiserver binary: its version and the feature
// gates it offers. Env.Server returns the running one's.
type Server struct {
	// Version is the version of Kubernetes the binary was built from,
	// such as 1.34.4; of a binary that does not record it, only the
	// major and minor version its /version endpoint reports, 1.34.0.
	Version *version.Version
	// Gates are the feature gates that can be switched, alpha and beta,
	// by name, with their stage and default. kube-apiserver lists no
	// others in its help (GA and deprecated gates, which it still
	// accepts), and refuses a gate it does not know.
	Gates map[string]Gate
}

// Gate is a feature gate of kube-apiserver.
type Gate struct {
	Stage   string // "ALPHA" or "BETA"
	Default bool
}

// HasGate reports whether the server offers feature gate name.
func (s Server) HasGate(name string) bool {
	_, ok := s.Gates[name]
	return ok
}

// inspected memoizes inspectServer by binary path.
var inspected sync.Map // string → func() (Server, error)

// inspectServer reads the version and the feature gates of the
// kube-apiserver at bin, from its build information and its help, once
// per path and process.
func inspectServer(ctx context.Context, bin string) (Server, error) {
	f, _ := inspected.LoadOrStore(bin, sync.OnceValues(func() (Server, error) {
		// Not ctx: the result is shared by every caller that follows.
		return readServer(context.WithoutCancel(ctx), bin)
	}))
	return f.(func() (Server, error))()
}

func readServer(ctx context.Context, bin string) (Server, error) {
	help, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil {
		return Server{}, fmt.Errorf("testenv: %s --help: %w: %s", bin, err, lastLines(help, 5))
	}
	gates, err := parseGates(help)
	if err != nil {
		return Server{}, fmt.Errorf("testenv: %s --help: %w", bin, err)
	}
	s := Server{Gates: gates}
	if s.Version, err = binaryVersion(ctx, bin); err != nil {
		return Server{}, err
	}
	return s, nil
}

// binaryVersion returns the version of Kubernetes that kube-apiserver bin
// was built from: the version of the module k8s.io/kubernetes in its
// build information, as a build from Go modules records it, or else the
// version it prints, as a release build (whose version is set by linker
// flags) does. It returns nil if neither tells.
func binaryVersion(ctx context.Context, bin string) (*version.Version, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("testenv: reading the build information of %s: %w", bin, err)
	}
	for _, m := range append(info.Deps, &info.Main) {
		if m.Path != "k8s.io/kubernetes" {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
		}
		if v, err := version.ParseSemantic(m.Version); err == nil && v.Major() > 0 {
			return v, nil
		}
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("testenv: %s --version: %w", bin, err)
	}
	// "Kubernetes v1.34.4"; a build without linker flags says
	// "v0.0.0-master+$Format:%H$".
	if v, err := version.ParseSemantic(strings.TrimSpace(strings.TrimPrefix(string(out), "Kubernetes "))); err == nil && v.Major() > 0 {
		return v, nil
	}
	return nil, nil
}

// gateLine matches a feature gate in the help of kube-apiserver's
// --feature-gates flag, "kube:WatchList=true|false (BETA - default=true)",
// the component's prefix absent before 1.33.
var gateLine = regexp.MustCompile(`^\s*(?:([a-z0-9-]+):)?([A-Za-z0-9]+)=true\|false \(([A-Z]+) - default=(true|false)\)`)

// parseGates returns the feature gates of kube-apiserver's component
// "kube" listed in the help text help.
func parseGates(help []byte) (map[string]Gate, error) {
	gates := map[string]Gate{}
	sc := bufio.NewScanner(bytes.NewReader(help))
	for sc.Scan() {
		m := gateLine.FindStringSubmatch(sc.Text())
		if m == nil || (m[1] != "" && m[1] != "kube") || m[2] == "AllAlpha" || m[2] == "AllBeta" {
			continue
		}
		gates[m[2]] = Gate{Stage: m[3], Default: m[4] == "true"}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(gates) == 0 {
		return nil, errors.New("no feature gates listed")
	}
	return gates, nil
}

// servedVersion returns the major and minor version that the /version
// endpoint of a reports, as 1.34.0.
func (a *apiServer) servedVersion(ctx context.Context) (*version.Version, error) {
	defer a.client.CloseIdleConnections()
	body, err := a.get(ctx, "/version")
	if err != nil {
		return nil, err
	}
	var info struct{ Major, Minor string }
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return nil, fmt.Errorf("/version: %w", err)
	}
	// A minor version may carry a "+" for a build past the release.
	v, err := version.ParseGeneric(info.Major + "." + strings.TrimSuffix(info.Minor, "+") + ".0")
	if err != nil {
		return nil, fmt.Errorf("/version: %w", err)
	}
	return v, nil
}

// lastLines returns the last n lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
