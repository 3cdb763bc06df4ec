package informers

import (
	"context"
	"sync/atomic"

	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/reflector"
	"github.com/kubetyped/informers/shard"
)

// scope is what differs between an informer that caches all of what its
// list-watch sees, one that caches one shard of it, and one that caches
// the namespaces a label selects (with a shard or not): how its reflectors
// are made and run and which sink they feed, which objects it leaves out,
// the version a consistency wait reads for an object, and what Stats
// reports of it. An informer holds one scope, given to newInformer; the
// scope reaches the informer only through the scopeEnv that Run hands it.
type scope[T Object] interface {
	// run runs the scope's reflectors until ctx ends.
	run(ctx context.Context, env scopeEnv[T])
	// excludes reports whether the scope leaves obj out of the cache,
	// where it can tell.
	excludes(obj T) bool
	// progress returns the version up to which the cache has applied the
	// events of objects of namespace ns ("" for the whole informer: the
	// version every part of the cache has reached).
	progress(ns string) string
	// moved returns a channel closed the next time any progress moves.
	moved() <-chan struct{}
	// running returns the running reflector, for Stats; nil before Run.
	running() runner
	// report describes the scope in Stats.
	report() scopeReport
}

// scopeReport is what Stats tells of an informer's scope.
type scopeReport struct {
	shard shard.Status
	mode  NamespaceMode
}

// scopeEnv is what a scope runs with: the informer's writer, the maker
// of its reflectors, and the informer's callbacks.
type scopeEnv[T Object] struct {
	desc  string // the informer's description, for errors
	name  string // the informer's name, for handler names
	w     *writer[T]
	refls *reflectors[T]
	log   klog.Logger
	obs   reflector.Observer
	onErr func(reflector.Op, error) // a request failed
	onOK  func(reflector.Op)        // a request succeeded
	// countErr counts a failed request in metrics, for a scope that
	// reports its errors itself rather than through onErr.
	countErr func(reflector.Op, error)
	setErr   func(error) // sets the informer's LastError
	report   func(error) // hands an error to OnError or the log
}

// request returns the request of a reflector of the whole list-watch
// that feeds sink, resumes from rv and publishes to version.
func (env scopeEnv[T]) request(sink reflector.Sink[T], rv string, version *reflector.Version) reflectorRequest[T] {
	return reflectorRequest[T]{sink: sink, resume: rv, version: version, onErr: env.onErr, onOK: env.onOK, obs: env.obs, log: env.log, watchList: true}
}

// runningRef holds the running reflector of a scope, read without a lock
// by Stats, which must not wait for a lock a Metrics implementation could
// hold.
type runningRef struct{ p atomic.Pointer[runner] }

func (rr *runningRef) set(r runner) { rr.p.Store(&r) }

func (rr *runningRef) get() runner {
	if r := rr.p.Load(); r != nil {
		return *r
	}
	return nil
}

// wholeScope is the scope of an informer that caches all that its
// list-watch sees: one reflector feeding the writer.
type wholeScope[T Object] struct {
	version reflector.Version
	current runningRef
}

func (s *wholeScope[T]) run(ctx context.Context, env scopeEnv[T]) {
	refl, err := env.refls.make(env.request(env.w, "", &s.version))
	if err != nil {
		env.report(err)
		return
	}
	s.current.set(refl)
	refl.Run(ctx)
}

func (s *wholeScope[T]) excludes(T) bool        { return false }
func (s *wholeScope[T]) progress(string) string { return s.version.Get() }
func (s *wholeScope[T]) moved() <-chan struct{} { return nextOf(&s.version) }
func (s *wholeScope[T]) running() runner        { return s.current.get() }
func (s *wholeScope[T]) report() scopeReport    { return scopeReport{} }

// nextOf returns a channel closed when v is next published.
func nextOf(v *reflector.Version) <-chan struct{} {
	_, ch := v.Next()
	return ch
}

// runUntil runs refl until wait returns, or ctx ends, then stops it and
// returns the version it reached.
func runUntil(ctx context.Context, refl runner, wait func()) string {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		refl.Run(rctx)
	}()
	wait()
	cancel()
	<-done
	return refl.LastSyncResourceVersion()
}

// signal sends on ch, a channel of one, unless a signal is pending
// already: the receiver reads the latest state.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
