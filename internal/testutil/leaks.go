package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// IdleConnections ignores the goroutines of HTTP connections kept for
// reuse.
func IdleConnections() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
	}
}

// ControlPlane ignores the goroutines that wait for the processes of the
// shared test control plane, which testenv.Main stops after the last test.
var ControlPlane = goleak.IgnoreAnyFunction("github.com/kubetyped/informers/internal/testenv.(*process).run")

// NoLeaks checks, once the test and all its other cleanups are done, that
// none of the goroutines it started outlived it, other than idle HTTP
// connections, the control plane's and those that ignore describes. Call
// it first in a test.
func NoLeaks(t testing.TB, ignore ...goleak.Option) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, append(append(IdleConnections(), before, ControlPlane), ignore...)...)
	})
}

// MainNoLeaks runs the package's tests, from TestMain, and then fails them
// if any goroutine is left other than klog's flush daemon, which runs
// until the process ends once anything has started it.
func MainNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}
