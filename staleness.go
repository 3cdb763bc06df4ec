package informers

import (
	"context"
	"strconv"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// StalenessOptions turns on an informer's staleness monitor (set it with
// Set in Tuning.Staleness, of Options or FactoryOptions). Every Interval, the
// monitor asks the server for its current resource version, with a
// consistent list of at most one object, as kube-controller-manager's
// informer staleness monitor does, and measures how far the cache lags it:
// see Staleness. A watch that stays open but silent, which keeps an
// informer synced forever, shows as a lag that grows.
//
// An informer of a resource that nobody writes advances only with the
// bookmarks the API server sends on every watch about once a minute, while
// the server's version moves with writes to any resource: its lag rises to
// about a minute, then drops back. Choose a Threshold above that.
type StalenessOptions struct {
	// Interval is how often the server is asked; 0 means 5 seconds.
	Interval time.Duration
	// Threshold, if positive, makes ReadyCheck fail, with a
	// *StalenessError, while the cache lags by more than this.
	Threshold time.Duration
}

// defaultStalenessInterval is the default of StalenessOptions.Interval.
const defaultStalenessInterval = 5 * time.Second

// Staleness is how far an informer's cache lags the server, as its
// staleness monitor measures it; see InformerStats and StalenessMetrics.
type Staleness struct {
	// Lag is how long ago the server was at the oldest of its versions
	// the monitor saw that the cache has not reached: the cache may miss
	// changes that old. 0 once the cache has reached them all.
	Lag time.Duration
	// Versions is how far the cache's version is behind the server's, as
	// numbers: how many writes, to any resource of the cluster, it may
	// miss. 0 when caught up or when versions are not numbers.
	Versions uint64
	// ServerVersion is the server's version at the last probe, and
	// CacheVersion the cache's now.
	ServerVersion, CacheVersion string
	// Probed is when the server last answered a probe; zero before.
	Probed time.Time
	// Err is why the last probe failed, or a *VersionError for versions
	// that do not compare; nil otherwise. Lag counts only what answered
	// probes showed: while the server does not answer, it does not grow.
	Err error
}

// StalenessMetrics is an optional interface of InformerMetrics: the
// InformerMetrics of an informer with a staleness monitor that implements
// it is told the staleness after every probe. Metrics systems export it
// as gauges (the prometheus module: informer_staleness_seconds and
// informer_staleness_resource_versions).
type StalenessMetrics interface {
	Staleness(s Staleness)
}

// StalenessError is ReadyCheck's error for an informer whose cache lags
// the server by more than its StalenessOptions.Threshold.
type StalenessError struct {
	Resource  string
	Staleness Staleness
	Threshold time.Duration
}

func (e *StalenessError) Error() string {
	return message("cache of %s is stale: it lags the server by %v (over %v; cache at version %s, server at %s)",
		e.Resource, e.Staleness.Lag.Round(time.Millisecond), e.Threshold, e.Staleness.CacheVersion, e.Staleness.ServerVersion)
}

// maxUnreached bounds the versions a monitor remembers that the cache has
// not reached; beyond it, the newest but one are dropped, which keeps the
// oldest, which sets the lag.
const maxUnreached = 1024

// stalenessMonitor keeps the server versions its probes saw and measures
// the cache's lag behind them.
type stalenessMonitor struct {
	opts StalenessOptions

	mu sync.Mutex
	// unreached are the versions seen that the cache had not reached when
	// last measured, oldest first.
	unreached []versionSeen
	latest    versionSeen
	lastErr   error
	stale     bool // the lag was over the threshold when last measured
}

// versionSeen is a server version and when a probe saw it.
type versionSeen struct {
	rv string
	at time.Time
}

// newStalenessMonitor returns the monitor that o asks for, or nil.
func newStalenessMonitor(o *StalenessOptions) *stalenessMonitor {
	if o == nil {
		return nil
	}
	m := &stalenessMonitor{opts: *o}
	if m.opts.Interval <= 0 {
		m.opts.Interval = defaultStalenessInterval
	}
	return m
}

// observe records what a probe at time at returned.
func (m *stalenessMonitor) observe(resource, rv string, at time.Time, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		if _, err = compareVersions(rv, rv); err != nil {
			err = &VersionError{Resource: resource, Version: rv, Err: err}
		}
	}
	m.lastErr = err
	if err != nil {
		return
	}
	m.latest = versionSeen{rv: rv, at: at}
	if len(m.unreached) >= maxUnreached {
		m.unreached = append(m.unreached[:1], m.unreached[2:]...)
	}
	m.unreached = append(m.unreached, m.latest)
}

// measure returns the staleness of a cache at version cache at time now,
// and forgets the versions it has reached.
func (m *stalenessMonitor) measure(resource, cache string, now time.Time) Staleness {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Staleness{ServerVersion: m.latest.rv, CacheVersion: cache, Probed: m.latest.at, Err: m.lastErr}
	for cache != "" && !beforeAll(cache) && len(m.unreached) > 0 {
		c, err := compareVersions(cache, m.unreached[0].rv)
		if err != nil {
			st.Err = &VersionError{Resource: resource, Version: cache, Cached: true, Err: err}
			m.unreached = nil
			break
		}
		if c < 0 {
			break
		}
		m.unreached[0] = versionSeen{}
		m.unreached = m.unreached[1:]
	}
	if len(m.unreached) > 0 {
		st.Lag = now.Sub(m.unreached[0].at)
	}
	server, errS := strconv.ParseUint(st.ServerVersion, 10, 64)
	cached, errC := strconv.ParseUint(cache, 10, 64)
	if errS == nil && errC == nil && server > cached {
		st.Versions = server - cached
	}
	return st
}

// crossed records whether st is over the threshold, and reports it and
// whether that changed since the last time.
func (m *stalenessMonitor) crossed(st Staleness) (stale, changed bool) {
	if m.opts.Threshold <= 0 {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	stale = m.over(st)
	changed, m.stale = stale != m.stale, stale
	return stale, changed
}

// over reports whether st lags past the threshold, if there is one.
func (m *stalenessMonitor) over(st Staleness) bool {
	return m.opts.Threshold > 0 && st.Lag > m.opts.Threshold
}

// stalenessProbe is what a staleness monitor measures: one informer's
// cache against its server.
type stalenessProbe struct {
	desc          string
	synced        <-chan struct{} // closed once the cache has synced
	cacheVersion  func() string
	serverVersion func(context.Context) (string, error)
	metrics       StalenessMetrics // nil if the informer's metrics take none
}

// run probes the server every interval, once the cache has synced, until
// ctx ends, and passes the staleness to the metrics.
func (m *stalenessMonitor) run(ctx context.Context, p stalenessProbe) {
	select {
	case <-p.synced:
	case <-ctx.Done():
		return
	}
	log := klog.FromContext(ctx)
	tick := time.NewTicker(m.opts.Interval)
	defer tick.Stop()
	for {
		probeCtx, cancel := context.WithTimeout(ctx, max(m.opts.Interval, 10*time.Second))
		rv, err := p.serverVersion(probeCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		m.observe(p.desc, rv, time.Now(), err)
		st := m.measure(p.desc, p.cacheVersion(), time.Now())
		if p.metrics != nil {
			p.metrics.Staleness(st)
		}
		if stale, changed := m.crossed(st); changed && stale {
			log.Info("Cache is stale", "lag", st.Lag.Round(time.Millisecond), "threshold", m.opts.Threshold, "cacheVersion", st.CacheVersion, "serverVersion", st.ServerVersion)
		} else if changed {
			log.Info("Cache caught up with the server", "cacheVersion", st.CacheVersion)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}
