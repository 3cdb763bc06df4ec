// Package syncwait lets a package other than the root one, such as fleet,
// give its syncers what the root package's WaitForSync and ReadyCheck say
// of an informer: why it does not sync, and why it is not ready, without an
// exported method beside the Syncer's channel. A type embeds a Hook under
// an unexported name (type hook = syncwait.Hook); the Hook's methods are
// unexported, so they are promoted without showing in the type's API, and
// the root package finds them through Waiter.
package syncwait

import "context"

// Hook holds a syncer's wait and readiness check. The zero value is not
// usable; call New.
type Hook struct {
	wait  func(ctx context.Context) error
	ready func() error
}

// New returns a Hook whose syncer waits with wait, which returns nil once
// it has synced and, otherwise, why not, and is ready when ready returns
// nil.
func New(wait func(ctx context.Context) error, ready func() error) Hook {
	return Hook{wait: wait, ready: ready}
}

func (h Hook) waitForSync(ctx context.Context) error { return h.wait(ctx) }

func (h Hook) notReady() error { return h.ready() }

// Waiter is a syncer with a Hook.
type Waiter interface {
	waitForSync(ctx context.Context) error
	notReady() error
}

// Wait waits for w to sync and returns nil once it has, or why not.
func Wait(ctx context.Context, w Waiter) error { return w.waitForSync(ctx) }

// NotReady returns why w is not ready, or nil.
func NotReady(w Waiter) error { return w.notReady() }
