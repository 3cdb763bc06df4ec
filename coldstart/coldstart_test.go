package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// TestMain runs the test binary as a child when the harness starts it
// again, as the command does with itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "-"+childFlag+"=") {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// tableImplementations are the implementations of the table, without
// those the tests add: package variables are initialized before init
// functions run.
var tableImplementations = implementationNames()

// Implementations that only the tests run, in the test binary's children.
func init() {
	implementations = append(implementations,
		// testAllocate never syncs: it allocates until it is stopped.
		implementation{name: "test-allocate", sync: func(ctx context.Context, _ *rest.Config, _ resource) (*syncedCache, error) {
			var held [][]byte
			for len(held) < 1024 { // 4 GiB: the limit must have ended it long before
				b := make([]byte, 4<<20)
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1 // resident, not only reserved
				}
				held = append(held, b)
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			return nil, errors.New("allocated 4 GiB without being stopped")
		}},
		// testSmall syncs one object, holding 16 MiB.
		implementation{name: "test-small", sync: func(context.Context, *rest.Config, resource) (*syncedCache, error) {
			b := make([]byte, 16<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			return &syncedCache{
				objects: func(context.Context) (int, error) { return 1, nil },
				stop:    func() { runtime.KeepAlive(b) },
			}, nil
		}},
	)
}

// needControlPlane skips or fails the test if the local control plane
// cannot be built, by the rule of testenv.Shared: a failure under CI=true,
// a skip elsewhere if the binaries could not be built or with -short.
func needControlPlane(t *testing.T) {
	t.Helper()
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	if testing.Short() && !ci {
		t.Skip("skipping a test that needs a control plane in -short mode")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	_, err := testenv.Build(ctx)
	if err == nil {
		return
	}
	if _, ok := errors.AsType[*testenv.BuildError](err); ok && !ci {
		t.Skipf("skipping: %v (set CI=true to make this a failure)", err)
	}
	t.Fatal(err)
}

// TestLocalRun runs the command as a user would with -local, at a small
// size, with every implementation of the table and a limit they all stay
// under, and checks what it reports.
func TestLocalRun(t *testing.T) {
	needControlPlane(t)
	testutil.NoLeaks(t)
	const objects = 300
	svgPath := filepath.Join(t.TempDir(), "coldstart.svg")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{
		"-local", "-objects", strconv.Itoa(objects), "-namespaces", "10",
		"-impl", strings.Join(tableImplementations, ","),
		"-memory-limit", "2GiB", "-json", "-svg", svgPath,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())

	var rep report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	assert.Equal(t, objects, rep.Expected)
	assert.Equal(t, int64(2<<30), rep.MemoryLimit)
	assert.NotEmpty(t, rep.LimitMethod)
	require.Len(t, rep.Results, len(tableImplementations))
	for i, m := range rep.Results {
		t.Run(m.Implementation, func(t *testing.T) {
			assert.Equal(t, tableImplementations[i], m.Implementation)
			require.Equal(t, synced, m.Outcome, m.Error)
			assert.Equal(t, objects, m.Objects, "every implementation caches every object")
			assert.Positive(t, m.Sync)
			assert.Positive(t, m.CPU)
			assert.Positive(t, m.HeapAfterSync)
			assert.GreaterOrEqual(t, m.PeakRSS, m.HeapAfterSync, "the peak RSS holds the heap")
			assert.GreaterOrEqual(t, m.PeakRSS, m.RSSAfterSync)
			assert.Less(t, m.PeakRSS, uint64(rep.MemoryLimit))
			assert.Positive(t, m.BytesPerObject)
		})
	}
	assert.Contains(t, stderr.String(), "created 300 pods")

	var table bytes.Buffer
	require.NoError(t, rep.writeTable(&table))
	for _, name := range tableImplementations {
		assert.Contains(t, table.String(), "\n"+name+" ")
	}

	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	requireXML(t, svg)
	for _, name := range tableImplementations {
		assert.Contains(t, string(svg), ">"+name+"<")
	}
}

// requireXML fails the test unless b is well-formed XML with an svg root.
func requireXML(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var root string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if el, ok := tok.(xml.StartElement); ok && root == "" {
			root = el.Name.Local
		}
	}
	require.Equal(t, "svg", root)
}

// TestMemoryLimit runs children that stay under a limit and that pass
// it, with each way to enforce it that this machine offers, and checks
// that the one past the limit is reported ended or killed, never synced.
func TestMemoryLimit(t *testing.T) {
	testutil.NoLeaks(t)
	const limit = 128 << 20 // above a child's own 40 MiB or so, below test-allocate's 4 GiB
	// The children never reach a server: their implementations ignore it.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, writeKubeconfig(kubeconfig, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "unused"}))

	methods := []struct {
		name      string
		enforcer  func(t *testing.T) *enforcer
		overLimit outcome
	}{
		{"self", func(*testing.T) *enforcer { return &enforcer{limit: limit, why: "chosen by the test"} }, overLimit},
		{"cgroup", func(t *testing.T) *enforcer {
			e := newEnforcer(limit)
			if e.self() {
				t.Skipf("no cgroup v2 memory controller to use here: %s", e.reason())
			}
			t.Cleanup(e.close)
			return e
		}, oomKilled},
	}
	cases := []struct {
		impl string
		want func(overLimit outcome) outcome
	}{
		{"test-small", func(outcome) outcome { return synced }},
		{"test-allocate", func(o outcome) outcome { return o }},
	}
	for _, method := range methods {
		t.Run(method.name, func(t *testing.T) {
			enf := method.enforcer(t)
			for _, c := range cases {
				t.Run(c.impl, func(t *testing.T) {
					im, err := selectImplementations(c.impl)
					require.NoError(t, err)
					var stderr bytes.Buffer
					m, err := measureInChild(t.Context(), im[0], childConfig{
						Kubeconfig: kubeconfig,
						Resource:   resourceSpec{Version: "v1", Resource: "pods", Kind: "Pod", Shape: shapeTyped},
						Limit:      limit,
						SelfLimit:  enf.self(),
						Timeout:    time.Minute,
					}, enf, &stderr)
					require.NoError(t, err)
					want := c.want(method.overLimit)
					require.Equal(t, want, m.Outcome, "error %q, stderr:\n%s", m.Error, stderr.String())
					assert.Positive(t, m.PeakRSS)
					if want == synced {
						assert.Equal(t, 1, m.Objects)
						assert.Less(t, m.PeakRSS, uint64(limit))
						return
					}
					assert.Zero(t, m.Objects, "a child over the limit synced nothing")
					assert.NotEmpty(t, m.Error)
					if want == overLimit {
						assert.Greater(t, m.PeakRSS, uint64(limit), "it ended itself past the limit")
					}
				})
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"1GiB", 1 << 30}, {"512MiB", 512 << 20}, {"1.5Gi", 3 << 29}, {"4 GiB", 4 << 30},
		{"100", 100}, {"2G", 2e9}, {"300MB", 300e6}, {"64KiB", 64 << 10},
	} {
		got, err := parseSize(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{"", "GiB", "1XB", "-1GiB", "0", "1e400"} {
		_, err := parseSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseResource(t *testing.T) {
	for _, c := range []struct {
		name, as string
		want     string // resource.String(), "" for an error
	}{
		{"pods", "", "v1/pods (typed)"},
		{"configmaps", "metadata", "v1/configmaps (metadata)"},
		{"v1/pods", "", "v1/pods (typed)"},
		{"v1/pods", "unstructured", "v1/pods (unstructured)"},
		{"apps/v1/deployments", "", "apps/v1/deployments (typed)"},
		{"argoproj.io/v1alpha1/applications", "", "argoproj.io/v1alpha1/applications (unstructured)"},
		{"v1/secrets", "metadata", "v1/secrets (metadata)"},
		{"v1/secrets", "typed", ""},
		{"pods", "yaml", ""},
		{"widgets", "", ""},
		{"a//b", "", ""},
	} {
		r, err := parseResource(c.name, c.as)
		if c.want == "" {
			assert.Error(t, err, "%s as %q", c.name, c.as)
			continue
		}
		require.NoError(t, err, "%s as %q", c.name, c.as)
		assert.Equal(t, c.want, r.String())
	}
}

func TestParseProcStatus(t *testing.T) {
	s, err := parseProcStatus([]byte("Name:\tx\nVmPeak:\t  900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t4\n"))
	require.NoError(t, err)
	assert.Equal(t, procStatus{hwm: 2 << 20, rss: 1 << 20}, s)
	_, err = parseProcStatus([]byte("Name:\tx\n"))
	assert.Error(t, err)
}

// -as metadata runs no view: a view is decoded from full objects, which
// is not what a metadata-only cache costs. Every other shape runs it.
func TestApplicableImplementations(t *testing.T) {
	for _, tc := range []struct {
		name, as string
		skipped  []string
	}{
		{"pods", "", nil},
		{"pods", "metadata", []string{"informers-view"}},
		{"configmaps", "metadata", []string{"informers-view"}},
		{"v1/secrets", "unstructured", nil},
	} {
		r, err := parseResource(tc.name, tc.as)
		require.NoError(t, err)
		all, err := selectImplementations(strings.Join(tableImplementations, ","))
		require.NoError(t, err)
		kept, skipped := applicable(all, r)
		assert.ElementsMatch(t, tc.skipped, slices.Collect(maps.Keys(skipped)), "%s as %q", tc.name, tc.as)
		assert.Len(t, kept, len(all)-len(tc.skipped))
		for _, im := range kept {
			assert.NotContains(t, tc.skipped, im.name)
		}
	}
}

// The chart draws the peak of a run that did not sync hatched and
// outlined, says under it that it did not sync, and explains the hatching
// in the legend; a chart of synced runs alone has no such legend.
func TestSVGMarksRunsThatDidNotSync(t *testing.T) {
	r := report{Resource: "v1/pods (typed)", Expected: 1000, MemoryLimit: 1 << 30, Results: []measurement{
		{Implementation: "client-go", Outcome: oomKilled, PeakRSS: 1 << 30},
		{Implementation: "informers", Outcome: synced, Sync: 2 * time.Second, PeakRSS: 300 << 20, HeapAfterSync: 100 << 20},
	}}
	svg := string(r.svg())
	requireXML(t, []byte(svg))
	assert.Equal(t, 2, strings.Count(svg, `fill="url(#ended)" stroke=`), "one hatched bar, and the legend's")
	assert.Contains(t, svg, "✗ oom-killed, not synced")
	assert.Contains(t, svg, "synced in 2.00s")
	assert.Contains(t, svg, "peak RSS of a run killed or failed before it synced")

	r.Results = r.Results[1:]
	svg = string(r.svg())
	assert.NotContains(t, svg, "url(#ended)")
	assert.NotContains(t, svg, "killed or failed")
}
