package prometheus

import (
	"strconv"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kubetyped/informers/shard"
)

// gauges collects the gauges of the recorded informers and handlers,
// reading their state at each scrape.
type gauges struct{ m *Metrics }

func gaugeDesc(name string, labels ...string) *prom.Desc {
	return prom.NewDesc(name, help[name], append(informerLabels[:4:4], labels...), nil)
}

var (
	objectsDesc     = gaugeDesc("informer_objects")
	syncedDesc      = gaugeDesc("informer_synced")
	watchListDesc   = gaugeDesc("informer_watch_list")
	rvDesc          = gaugeDesc("informer_store_resource_version")
	initialDesc     = gaugeDesc("informer_initial_sync_duration_seconds")
	progressDesc    = gaugeDesc("informer_sync_objects_received")
	lastEventDesc   = gaugeDesc("informer_last_event_age_seconds")
	queuedDesc      = gaugeDesc("informer_queued_items")
	backlogDesc     = gaugeDesc("informer_handler_backlog", "handler")
	shardDesc       = gaugeDesc("informer_shard_filter", "filter")
	droppedDesc     = gaugeDesc("informer_shard_objects_dropped_total")
	undecodableDesc = gaugeDesc("informer_undecodable_objects")
	allGaugeDescs   = []*prom.Desc{objectsDesc, syncedDesc, watchListDesc, rvDesc, initialDesc, progressDesc, lastEventDesc, queuedDesc, backlogDesc, shardDesc, droppedDesc, undecodableDesc}
	rvDigitsDivisor = 1e15
)

func (g gauges) Describe(ch chan<- *prom.Desc) {
	for _, d := range allGaugeDescs {
		ch <- d
	}
}

func (g gauges) Collect(ch chan<- prom.Metric) {
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	for _, r := range g.m.informers {
		st := r.inf.Stats()
		gauge := func(d *prom.Desc, v float64) {
			ch <- prom.MustNewConstMetric(d, prom.GaugeValue, v, r.labels...)
		}
		gauge(objectsDesc, float64(st.Objects))
		gauge(undecodableDesc, float64(st.Undecodable))
		gauge(syncedDesc, boolValue(st.Synced))
		gauge(watchListDesc, boolValue(st.WatchList))
		gauge(progressDesc, float64(st.SyncProgress))
		if rv, err := strconv.ParseUint(st.ResourceVersion, 10, 64); err == nil {
			// As client-go: the digits a float64 holds exactly.
			gauge(rvDesc, float64(rv%uint64(rvDigitsDivisor)))
		}
		if st.InitialSync > 0 {
			gauge(initialDesc, st.InitialSync.Seconds())
		}
		if !st.LastEvent.IsZero() {
			gauge(lastEventDesc, time.Since(st.LastEvent).Seconds())
		}
		if st.Shard.Filter != shard.FilterNone {
			ch <- prom.MustNewConstMetric(shardDesc, prom.GaugeValue, 1, append(r.labels[:4:4], st.Shard.Filter.String())...)
			ch <- prom.MustNewConstMetric(droppedDesc, prom.CounterValue, float64(st.Shard.Dropped), r.labels...)
		}
		queued := 0
		for _, h := range r.handlers {
			backlog := h.reg.Backlog()
			queued += backlog
			ch <- prom.MustNewConstMetric(backlogDesc, prom.GaugeValue, float64(backlog), h.labels...)
		}
		gauge(queuedDesc, float64(queued))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
