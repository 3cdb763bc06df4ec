package informers

import (
	"time"

	"github.com/kubetyped/informers/internal/dispatch"
	"github.com/kubetyped/informers/internal/reflector"
)

// Metrics is the hook through which informers and handlers report what
// they do, for a metrics system: set it with Set in Tuning.Metrics, of
// FactoryOptions or of one informer's Options. The module github.com/kubetyped/informers/prometheus
// implements it for Prometheus; the library itself depends on none.
//
// Informer is called when an informer starts running and Handler when a
// handler is added to an informer that has Metrics. The recorders they
// return are called from the informers' and handlers' goroutines, a
// HandlerMetrics at every event: they must be safe for concurrent use,
// return quickly and, to keep delivery free of allocations, not allocate.
// Gauges, such as the objects cached or a handler's backlog, are read
// when they are collected, from InformerStats and Registration.Backlog.
type Metrics interface {
	Informer(inf AnyInformer) InformerMetrics
	Handler(inf AnyInformer, reg AnyRegistration) HandlerMetrics
}

// InformerMetrics records what one informer does.
type InformerMetrics interface {
	// Request is told of each request before it is sent: a list page
	// ("list"), a watch ("watch") or a watch-list stream ("watch-list").
	Request(verb string)
	// RequestError is told of each failed request, and of each watch
	// stream that ended in an error: code is the HTTP status, or 0 when
	// there was no response.
	RequestError(verb string, code int)
	// Relist is told that the informer gets the server's state again
	// after it had it once, and why: "expired" (410 Gone), "too-large-
	// resource-version", "watch-error" or "retry" (the last list failed).
	Relist(reason string)
	// Synced is told that a list ("list") or a watch-list stream
	// ("watch-list") brought the cache in step with the server and how
	// long that took; initial marks the first time.
	Synced(method string, took time.Duration, initial bool)
	// Stopped is told that the informer stopped: its series can go.
	Stopped()
}

// HandlerMetrics records what one handler does.
type HandlerMetrics interface {
	// Delivered is told of each event the handler returned from, and how
	// long it took.
	Delivered(event EventType, took time.Duration)
	// Panicked is told of each event the handler panicked on.
	Panicked(event EventType)
	// Removed is told that the handler was removed or its informer
	// stopped: its series can go.
	Removed()
}

// EventType is the type of an event delivered to a handler.
type EventType uint8

// The event types.
const (
	EventAdd EventType = iota + 1
	EventUpdate
	EventDelete
)

// eventType returns the event type of a notification of kind k. The event
// types are dispatch's kinds, numbered alike: the arrays below fail to
// compile if they ever differ.
func eventType(k dispatch.Kind) EventType { return EventType(k) }

var (
	_ = [1]struct{}{}[EventAdd-EventType(dispatch.Add)]
	_ = [1]struct{}{}[EventUpdate-EventType(dispatch.Update)]
	_ = [1]struct{}{}[EventDelete-EventType(dispatch.Delete)]
)

// String returns "add", "update" or "delete".
func (e EventType) String() string {
	switch e {
	case EventAdd:
		return "add"
	case EventUpdate:
		return "update"
	case EventDelete:
		return "delete"
	}
	return "unknown"
}

// informerObserver passes what a reflector does on to InformerMetrics.
type informerObserver struct{ m InformerMetrics }

func (o informerObserver) Request(op reflector.Op) { o.m.Request(string(op)) }
func (o informerObserver) Relist(reason string)    { o.m.Relist(reason) }
func (o informerObserver) Synced(op reflector.Op, took time.Duration, initial bool) {
	o.m.Synced(string(op), took, initial)
}
