// Package testutil holds the helpers that the tests of several packages
// share: waiting for a condition, contexts bounded for a test, running
// informers and factories until the test ends, namespaces and objects
// made on a test control plane, leak checks, a handler that records its
// events as strings, and a sample of which fleets engage which clusters.
//
// Only tests, and packages that exist for tests, import it. It imports the
// root package, so the tests of the engine's packages, which the root
// imports, cannot.
package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informers"
)

// Eventually fails the test unless cond holds within 10 seconds. It asks
// every millisecond, which suits conditions on memory; for conditions that
// ask an API server, use EventuallyWithin.
func Eventually(t testing.TB, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond, append([]any{msg}, args...)...)
}

// EventuallyWithin fails the test unless cond holds within d. It asks every
// 20 milliseconds.
func EventuallyWithin(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, d, 20*time.Millisecond, append([]any{msg}, args...)...)
}

// Context returns a context that ends after d, or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Run runs r, an informer say, until the end of the test, and then checks
// that its Run returned nil. It returns the context r runs with.
func Run(t testing.TB, r interface{ Run(context.Context) error }) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ctx
}

// StartFactory starts f and shuts it down when the test ends, giving its
// handlers 30 seconds to return.
func StartFactory(t testing.TB, f *informers.Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	t.Cleanup(func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		require.NoError(t, f.Shutdown(sctx))
	})
}

// Namespace creates a namespace with a generated name for the test and
// deletes it when the test ends. On the test control plane, which runs no
// namespace controller, a deleted namespace stays Terminating with whatever
// it holds.
func Namespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// CreateValid creates obj through ri, again while the server refuses it
// as invalid, for up to a minute: after a CRD's schema changes, the
// server validates with the new one only once its CRD handler has seen
// the change, which can lag the update's answer and the published
// OpenAPI schema. Any other error fails the test.
func CreateValid(t testing.TB, ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) {
	t.Helper()
	EventuallyWithin(t, time.Minute, func() bool {
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		assert.True(t, err == nil || apierrors.IsInvalid(err), "creating %s: %v", obj.GetName(), err)
		return !apierrors.IsInvalid(err)
	}, "the server accepts %s", obj.GetName())
}
