package informers

import (
	"time"

	"github.com/kubetyped/informers/shard"
)

// InformerStats is a snapshot of an informer's state, for gauges and
// status pages. Reading it takes no lock the informer's writer holds for
// long.
type InformerStats struct {
	// Objects is the number of objects cached.
	Objects int
	// ResourceVersion is the resource version the cache is at.
	ResourceVersion string
	// Synced reports whether the cache holds a complete list and a watch
	// follows it.
	Synced bool
	// WatchList reports whether the informer gets the server's state by
	// watch-list streaming rather than by listing.
	WatchList bool
	// SyncProgress is the number of objects the list or watch-list in
	// progress has received, or, between them, the last one did.
	SyncProgress int
	// InitialSync is how long the first sync took, from Run; 0 before.
	InitialSync time.Duration
	// LastEvent is when the last list, watch event or bookmark was
	// applied: time.Since(LastEvent) is how stale the cache may be. It is
	// kept only for informers with Metrics; zero before.
	LastEvent time.Time
	// Staleness is how far the cache lags the server, measured now, for
	// an informer with a staleness monitor (Tuning.Staleness); zero
	// otherwise.
	Staleness Staleness
	// Undecodable is the number of objects the server has that cannot be
	// decoded into the informer's Go type (see UndecodableObjectError).
	Undecodable int
	// SchemaCheck says, for an informer of a view, what the view was
	// checked against and which of its fields the schema says nothing
	// of, or why it runs unchecked (see SchemaCheck); "" for other
	// informers, and for a view not checked yet.
	SchemaCheck string
	// Shard is the shard of a sharded informer (Options.Shard), with
	// whether the server or the client filters it; its Filter is
	// shard.FilterNone for an informer that is not sharded.
	Shard shard.Status
}
