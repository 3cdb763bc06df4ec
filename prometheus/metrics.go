package prometheus

import (
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kubetyped/informers"
)

// informerLabels name an informer, as client-go's informer metrics do.
var informerLabels = []string{"name", "group", "version", "resource"}

// MetricNames returns the metrics Metrics exports, by name, with their
// help: a copy of its own, which the caller may change.
func MetricNames() map[string]string { return maps.Clone(help) }

// help is the help of each metric Metrics exports, by name.
var help = map[string]string{
	"informer_objects":                       "Number of objects in the informer's cache.",
	"informer_undecodable_objects":           "Number of objects the server has that cannot be decoded into the informer's Go type; each is named in the log once per version.",
	"informer_synced":                        "1 once the informer's cache has synced, 0 before.",
	"informer_watch_list":                    "1 when the informer gets the server's state by watch-list streaming, 0 when by listing.",
	"informer_store_resource_version":        "The 15 least significant digits of the resource version of the store.",
	"informer_initial_sync_duration_seconds": "How long the informer's first sync took, from its start.",
	"informer_sync_objects_received":         "Objects received by the list or watch-list in progress, or by the last one.",
	"informer_last_event_age_seconds":        "Seconds since the last list, watch event or bookmark: how stale the cache may be.",
	"informer_queued_items":                  "Number of events queued for the informer's handlers.",
	"informer_requests_total":                "List, watch and watch-list requests sent, by verb.",
	"informer_request_errors_total":          "Failed requests and watch streams ended by an error, by verb and HTTP status code (0: no response).",
	"informer_relists_total":                 "Times the informer got the server's state again after it had it, by reason.",
	"informer_syncs_total":                   "Completed lists and watch-list streams that brought the cache in step, by method.",
	"informer_processing_latency_seconds":    "Time handlers took to process events, by handler.",
	"informer_handler_events_total":          "Events handlers returned from, by handler and event type.",
	"informer_handler_panics_total":          "Events handlers panicked on, by handler and event type.",
	"informer_handler_backlog":               "Events waiting for a handler, including the one being delivered.",
	"informer_shard_filter":                  "1 for where a sharded informer's shard is filtered: by the server (its ShardedListAndWatch gate is on), by the client, or unknown yet.",
	"informer_shard_objects_dropped_total":   "Objects a sharded informer received from outside its shard and dropped: the server did not filter them.",
	"informer_staleness_seconds":             "How long ago the server was at the oldest version its staleness monitor saw that the cache has not reached; 0 when caught up.",
	"informer_staleness_resource_versions":   "How far the cache's resource version is behind the server's, as numbers, at the staleness monitor's last probe.",
}

// Metrics implements informers.Metrics on a Prometheus registry. Its gauges
// are read from the informers and handlers when the registry is scraped;
// counters and histograms are updated as things happen, without
// allocating on the event path. Series of informers that stop and
// handlers that are removed are deleted.
type Metrics struct {
	requests, requestErrors, relists, syncs *prom.CounterVec
	events, panics                          *prom.CounterVec
	latency                                 *prom.HistogramVec
	staleness, stalenessVersions            *prom.GaugeVec

	mu        sync.Mutex
	informers map[informers.AnyInformer]*informerRecorder
	names     map[string]bool // the name labels in use
}

var (
	_ informers.Metrics          = (*Metrics)(nil)
	_ informers.StalenessMetrics = (*informerRecorder)(nil)
)

// New registers the informer metrics on reg and returns the hook to set,
// with informers.Set, in informers.Tuning.Metrics (of FactoryOptions or
// Options). It fails
// if reg already has them: use one Metrics per registry.
func New(reg prom.Registerer) (*Metrics, error) {
	counter := func(name string, labels ...string) *prom.CounterVec {
		return prom.NewCounterVec(prom.CounterOpts{Name: name, Help: help[name]}, append(informerLabels[:4:4], labels...))
	}
	// gauge is for values that informers push, through StalenessMetrics.
	gauge := func(name string) *prom.GaugeVec {
		return prom.NewGaugeVec(prom.GaugeOpts{Name: name, Help: help[name]}, informerLabels)
	}
	m := &Metrics{
		requests:      counter("informer_requests_total", "verb"),
		requestErrors: counter("informer_request_errors_total", "verb", "code"),
		relists:       counter("informer_relists_total", "reason"),
		syncs:         counter("informer_syncs_total", "method"),
		events:        counter("informer_handler_events_total", "handler", "event"),
		panics:        counter("informer_handler_panics_total", "handler", "event"),
		latency: prom.NewHistogramVec(prom.HistogramOpts{
			Name: "informer_processing_latency_seconds",
			Help: help["informer_processing_latency_seconds"],
			// client-go's buckets.
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, append(informerLabels[:4:4], "handler")),
		staleness:         gauge("informer_staleness_seconds"),
		stalenessVersions: gauge("informer_staleness_resource_versions"),
		informers:         map[informers.AnyInformer]*informerRecorder{},
		names:             map[string]bool{},
	}
	for _, c := range []prom.Collector{m.requests, m.requestErrors, m.relists, m.syncs, m.events, m.panics, m.latency, m.staleness, m.stalenessVersions, gauges{m}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("informers/prometheus: registering metrics: %w", err)
		}
	}
	return m, nil
}

// Informer starts recording inf.
func (m *Metrics) Informer(inf informers.AnyInformer) informers.InformerMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recorderLocked(inf)
}

// recorderLocked returns inf's recorder, made by Informer or, for a handler
// added before its informer runs, by Handler; m.mu is held.
func (m *Metrics) recorderLocked(inf informers.AnyInformer) *informerRecorder {
	if r := m.informers[inf]; r != nil {
		return r
	}
	name := inf.Name()
	for n := 2; m.names[name]; n++ {
		name = fmt.Sprintf("%s #%d", inf.Name(), n) // two informers of one name
	}
	gvr := inf.Resource()
	r := &informerRecorder{m: m, inf: inf, labels: []string{name, gvr.Group, gvr.Version, gvr.Resource}, handlers: map[string]*handlerRecorder{}}
	m.informers[inf] = r
	m.names[name] = true
	return r
}

// Handler starts recording reg, a handler of inf.
func (m *Metrics) Handler(inf informers.AnyInformer, reg informers.AnyRegistration) informers.HandlerMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	ir := m.recorderLocked(inf)
	labels := append(ir.labels[:4:4], reg.Name())
	h := &handlerRecorder{m: m, ir: ir, reg: reg, labels: labels, latency: m.latency.WithLabelValues(labels...)}
	for e := informers.EventAdd; e <= informers.EventDelete; e++ {
		h.events[e] = m.events.WithLabelValues(append(labels[:5:5], e.String())...)
	}
	ir.handlers[reg.Name()] = h
	return h
}

// informerRecorder records one informer.
type informerRecorder struct {
	m        *Metrics
	inf      informers.AnyInformer
	labels   []string // name, group, version, resource
	handlers map[string]*handlerRecorder
}

func (r *informerRecorder) with(labels ...string) []string {
	return append(r.labels[:4:4], labels...)
}

func (r *informerRecorder) Request(verb string) { r.m.requests.WithLabelValues(r.with(verb)...).Inc() }

func (r *informerRecorder) RequestError(verb string, code int) {
	r.m.requestErrors.WithLabelValues(r.with(verb, strconv.Itoa(code))...).Inc()
}

func (r *informerRecorder) Relist(reason string) {
	r.m.relists.WithLabelValues(r.with(reason)...).Inc()
}

func (r *informerRecorder) Synced(method string, _ time.Duration, _ bool) {
	r.m.syncs.WithLabelValues(r.with(method)...).Inc()
}

// Staleness sets the staleness gauges, after each probe of the
// informer's staleness monitor.
func (r *informerRecorder) Staleness(s informers.Staleness) {
	r.m.staleness.WithLabelValues(r.labels...).Set(s.Lag.Seconds())
	r.m.stalenessVersions.WithLabelValues(r.labels...).Set(float64(s.Versions))
}

// Stopped deletes the informer's series.
func (r *informerRecorder) Stopped() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if r.m.informers[r.inf] == r {
		delete(r.m.informers, r.inf)
		delete(r.m.names, r.labels[0])
	}
	deleteSeries(r.labels, r.m.requests, r.m.requestErrors, r.m.relists, r.m.syncs, r.m.events, r.m.panics, r.m.latency, r.m.staleness, r.m.stalenessVersions)
}

// handlerRecorder records one handler; Delivered is its hot path.
type handlerRecorder struct {
	m       *Metrics
	ir      *informerRecorder
	reg     informers.AnyRegistration
	labels  []string // the informer's, then the handler's name
	latency prom.Observer
	events  [informers.EventDelete + 1]prom.Counter
}

func (h *handlerRecorder) Delivered(e informers.EventType, took time.Duration) {
	if e <= informers.EventDelete {
		if c := h.events[e]; c != nil {
			c.Inc()
		}
	}
	h.latency.Observe(took.Seconds())
}

func (h *handlerRecorder) Panicked(e informers.EventType) {
	h.m.panics.WithLabelValues(append(h.labels[:5:5], e.String())...).Inc()
}

// Removed deletes the handler's series.
func (h *handlerRecorder) Removed() {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if h.ir.handlers[h.labels[4]] == h {
		delete(h.ir.handlers, h.labels[4])
	}
	deleteSeries(h.labels, h.m.events, h.m.panics, h.m.latency)
}

// seriesVec is a metric vector whose series can be deleted by labels.
type seriesVec interface{ DeletePartialMatch(prom.Labels) int }

// deleteSeries deletes from each vector the series whose first labels,
// informerLabels and then "handler", have the values given.
func deleteSeries(values []string, vecs ...seriesVec) {
	match := prom.Labels{}
	for n, v := range values {
		name := "handler"
		if n < len(informerLabels) {
			name = informerLabels[n]
		}
		match[name] = v
	}
	for _, v := range vecs {
		v.DeletePartialMatch(match)
	}
}
