// Package prometheus exports the metrics of informers and their handlers to
// a Prometheus registry:
//
//	m, err := prometheus.New(registry)
//	factory := informers.NewFactoryWith(client, informers.FactoryOptions{
//		Tuning: informers.Tuning{Metrics: informers.Set[informers.Metrics](m)},
//	})
//
// Where client-go has a metric, it has client-go's name and labels (name,
// group, version, resource): informer_queued_items,
// informer_processing_latency_seconds (with a handler label added) and
// informer_store_resource_version. The others are listed by MetricNames.
// informer_staleness_seconds and informer_staleness_resource_versions are
// set for informers with a staleness monitor (informers.StalenessOptions).
package prometheus
