package shard

// Filter says where a sharded informer's shard is filtered: on the
// server, which sends only the shard, or on the client, which receives
// everything and drops what is outside the shard. A server without the
// ShardedListAndWatch feature gate ignores shard selectors silently.
type Filter uint8

// Where the shard is filtered.
const (
	// FilterNone: the informer is not sharded.
	FilterNone Filter = iota
	// FilterUnknown: no list response has told yet.
	FilterUnknown
	// FilterServer: the last list response echoed the shard selector and
	// no object outside the shard arrived since.
	FilterServer
	// FilterClient: the server ignores the shard selector; the informer
	// drops what is outside its shard.
	FilterClient
)

// String returns "none", "unknown", "server" or "client".
func (f Filter) String() string {
	switch f {
	case FilterUnknown:
		return "unknown"
	case FilterServer:
		return "server"
	case FilterClient:
		return "client"
	}
	return "none"
}

// Status is what a sharded informer reports of its shard. The zero Status
// (FilterNone) is that of an informer that is not sharded.
type Status struct {
	// Shard is the informer's shard, as last set, ranges merged.
	Shard Shard
	// Filter says whether the server or the client filters the shard.
	Filter Filter
	// Synced is true once the informer holds all of Shard: a list of it
	// is complete and a watch of it is open.
	Synced bool
	// Received counts the objects the server sent, as list items and
	// watch events; Dropped counts those outside the shard, which the
	// client filter dropped. With the server filtering, Dropped stays 0.
	Received, Dropped uint64
}
