// Package exampletest runs an example's run function in a test, against
// the test control plane, and checks that it stops cleanly.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/testenv"
	"github.com/kubetyped/informers/internal/testutil"
)

// Timeout bounds every wait of a test.
const Timeout = time.Minute

// Program is an example's run function running in a test.
type Program struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set when done is closed

	mu  sync.Mutex
	out bytes.Buffer
}

// Start calls run in a goroutine with a context that Stop cancels, and a
// writer for its output. At the end of the test it stops run, checks that
// it returned nil and left no goroutine behind, and logs its output if the
// test failed.
func Start(t *testing.T, run func(ctx context.Context, out io.Writer) error) *Program {
	t.Helper()
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Program{t: t, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = run(ctx, (*writer)(p))
	}()
	t.Cleanup(func() {
		p.Stop()
		goleak.VerifyNone(t, append(testutil.IdleConnections(), before, testutil.ControlPlane)...)
		if t.Failed() {
			t.Logf("output of run:\n%s", p.Output())
		}
	})
	return p
}

// Run starts an example's run function with cfg and opts, as Start does.
func Run[O any](t *testing.T, run func(context.Context, *rest.Config, io.Writer, O) error, cfg *rest.Config, opts O) *Program {
	t.Helper()
	return Start(t, func(ctx context.Context, out io.Writer) error { return run(ctx, cfg, out, opts) })
}

// Stop cancels run's context and waits for it to return nil.
func (p *Program) Stop() {
	p.t.Helper()
	p.cancel()
	select {
	case <-p.done:
		assert.NoError(p.t, p.err, "run")
	case <-time.After(Timeout):
		assert.Fail(p.t, "run did not return after its context ended")
	}
}

// Output returns what run has written so far.
func (p *Program) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Eventually waits until cond holds, failing the test if run returns or
// Timeout passes first.
func (p *Program) Eventually(cond func() bool, msg string, args ...any) {
	p.t.Helper()
	deadline := time.After(Timeout)
	for !cond() {
		select {
		case <-p.done:
			require.Failf(p.t, "run returned early", "run returned %v while waiting for: "+msg, append([]any{p.err}, args...)...)
		case <-deadline:
			require.Failf(p.t, "timed out", "waiting for: "+msg, args...)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// EventuallyPrints waits until run's output contains text, failing the
// test as Eventually does.
func (p *Program) EventuallyPrints(text string) {
	p.t.Helper()
	p.Eventually(func() bool { return strings.Contains(p.Output(), text) }, "run prints %q", text)
}

type writer Program

func (w *writer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(b)
}

// Cluster is the shared test control plane as an example's test reaches
// it: the configuration its run function takes, and a client for the
// test's own requests.
type Cluster struct {
	Config *rest.Config
	Client *kubernetes.Clientset
}

// Shared returns the package's shared control plane (see testenv.Shared)
// and a client of it.
func Shared(t *testing.T) Cluster {
	t.Helper()
	cfg := testenv.Shared(t).Config()
	return Cluster{Config: cfg, Client: kubernetes.NewForConfigOrDie(cfg)}
}

// Namespace creates a namespace that is deleted when the test ends.
func (c Cluster) Namespace(t *testing.T) string { return testutil.Namespace(t, c.Client) }

// Context returns a context that ends with the test, or after Timeout.
func Context(t *testing.T) context.Context { return testutil.Context(t, Timeout) }

var _ io.Writer = (*writer)(nil)
