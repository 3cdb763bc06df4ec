package reflector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

const (
	defaultPageSize = 500
	// watchListIdle is how long a watch-list stream may send nothing, from
	// its request or its last event, before the bookmark that ends its
	// initial events; after that the reflector lists instead. A server
	// that honours sendInitialEvents sends that bookmark soon after the
	// initial events: kube-apiserver's watch cache serves the initial
	// events from memory, in one run, as soon as the request is answered,
	// and sends the bookmark from its bookmark timer, which ticks every
	// 1 to 1.25 seconds; its etcd path sends the bookmark right after the
	// initial events. A stream quiet for longer has most likely lost that
	// bookmark (a proxy that drops it) or was never going to send it (a
	// server that ignores sendInitialEvents). Three seconds leave the
	// timer's 1.25 seconds twice over for a loaded server; a stream
	// mistaken for a lost one costs a list, never correctness.
	watchListIdle = 3 * time.Second
	// watchListChanges is the outer bound: how long a watch-list stream
	// may send changes (Modified or Deleted events, which a server that
	// honours sendInitialEvents sends only after the initial events, and
	// for about a second before the end bookmark) without that bookmark.
	// A stream that never goes quiet, from a server that ignores
	// sendInitialEvents on a busy resource, falls back after this long.
	watchListChanges = 30 * time.Second
	// watchListTries is how many watch-list streams in a row may close
	// before their end bookmark, with backoff between them, before the
	// reflector lists instead; once it has listed so, each later relist
	// tries one stream.
	watchListTries = 2
	// shortWatch is how soon a watch may close without events before the
	// reflector takes it for a failing server and backs off.
	shortWatch = time.Second
	// flushEvery bounds how many changes a burst applies before the sink
	// is flushed, and so how long handlers can be kept waiting.
	flushEvery = 64
	// stopWait bounds how long stopping a watch waits for its result
	// channel to close, that is for the goroutine decoding the stream.
	stopWait = 10 * time.Second
	// progressEvery is how often a long sync logs how far it got.
	progressEvery = 10 * time.Second
	// progressCheck is how many initial events pass between checks of
	// whether to log progress.
	progressCheck = 1024
)

// Reflector lists and watches one resource into a Sink.
type Reflector[T Object, L List] struct {
	cfg   Config[L]
	sink  Sink[T]
	log   klog.Logger
	clock clock.WithTicker
	delay wait.DelayFunc

	// Only the goroutine running Run uses these.
	rv            string // the resource version the sink is at
	rvUnavailable bool   // the last request with rv got 410 or "too large"
	paginated     bool   // the server paged a list at "0": its watch cache is off
	notServed     bool   // the last list failed with 404: the resource is not served
	synced        bool   // the sink was in step once
	relistReason  string // why the next sync is a relist
	syncStart     time.Time
	lastProgress  time.Time // when progress was last logged
	expiredAt     string    // the version at which the last watch expired

	// received counts the objects of the sync in progress, or of the last
	// one; lastEvent is when the last change or bookmark was applied, in
	// Unix nanoseconds, kept only with an Observer.
	received  atomic.Int64
	lastEvent atomic.Int64

	published *Version // rv as of the last flush, for other goroutines

	// streamable says that syncs try watch-list streaming: the config asks
	// for it, client-go's WatchListClient feature gate is on, and the
	// server did not refuse it. Only the goroutine running Run uses it.
	streamable bool

	mu sync.Mutex
	// watchList says that the last sync got the server's state by
	// watch-list streaming, or that the next one will try it first.
	watchList bool
}

// New returns a reflector that feeds sink; Run starts it.
func New[T Object, L List](cfg Config[L], sink Sink[T]) *Reflector[T, L] {
	backoff := wait.Backoff{Duration: 800 * time.Millisecond, Cap: 30 * time.Second, Steps: 38, Factor: 2, Jitter: 1}
	if cfg.Backoff != nil {
		backoff = *cfg.Backoff
	}
	if cfg.OnError == nil {
		cfg.OnError = func(Op, error) {}
	}
	if cfg.OnSuccess == nil {
		cfg.OnSuccess = func(Op) {}
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := cfg.Logger
	if log.GetSink() == nil {
		log = klog.Background()
	}
	published := cfg.Version
	if published == nil {
		published = &Version{}
	}
	if cfg.ResourceVersion != "" {
		published.Set(cfg.ResourceVersion)
	}
	log = log.WithValues("resource", cfg.Description)
	streamable := cfg.WatchList
	if streamable && !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		log.V(2).Info("Client-go's WatchListClient feature gate is off; listing instead of watch-list streaming")
		streamable = false
	}
	return &Reflector[T, L]{
		cfg:        cfg,
		sink:       sink,
		log:        log,
		clock:      clk,
		delay:      backoff.DelayWithReset(clk, 2*time.Minute),
		streamable: streamable,
		watchList:  streamable,
		rv:         cfg.ResourceVersion,
		published:  published,
	}
}

// LastSyncResourceVersion returns the resource version the cache is at, as
// of the last batch of changes applied.
func (r *Reflector[T, L]) LastSyncResourceVersion() string { return r.published.Get() }

// SyncProgress returns how many objects the list or watch-list in progress
// has received, or, between them, the last one did.
func (r *Reflector[T, L]) SyncProgress() int { return int(r.received.Load()) }

// LastEvent returns when the last list, watch event or bookmark was
// applied; it is kept only with an Observer, and zero before.
func (r *Reflector[T, L]) LastEvent() time.Time {
	if ns := r.lastEvent.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// UsesWatchList reports whether the reflector gets the server's state by
// watch-list streaming. It is false when the config does not ask for
// streaming or client-go's WatchListClient feature gate is off, and for
// good once the server refused a watch-list request. It turns false too
// when a sync had to list because its streams did not deliver their
// initial events (closed, or went quiet, before the bookmark that ends
// them); each later relist then tries one stream first, and it turns true
// again once a stream delivers.
func (r *Reflector[T, L]) UsesWatchList() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watchList
}

// setWatchList records whether the sink's state came by streaming, and
// reports what it was before.
func (r *Reflector[T, L]) setWatchList(on bool) (was bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was, r.watchList = r.watchList, on
	return was
}

// Run lists and watches until ctx ends, backing off between failures.
func (r *Reflector[T, L]) Run(ctx context.Context) {
	r.log.V(3).Info("Starting reflector")
	defer r.log.V(3).Info("Stopped reflector")
	for ctx.Err() == nil {
		r.listAndWatch(ctx)
		if !r.sleep(ctx, r.retryDelay()) {
			return
		}
	}
}

// retryDelay is how long to wait before listing again.
func (r *Reflector[T, L]) retryDelay() time.Duration {
	if r.notServed && r.cfg.NotServedRetry > 0 {
		return r.cfg.NotServedRetry
	}
	return r.delay()
}

// listAndWatch brings the sink in step, then follows the watch until it
// fails in a way that needs a relist.
func (r *Reflector[T, L]) listAndWatch(ctx context.Context) {
	w, ok := r.syncState(ctx)
	if !ok {
		return
	}
	r.watch(ctx, w)
}

// syncState brings the sink in step with the server, by a watch-list
// stream, which it returns open, or by a list, holding one of the list
// limiter's permits meanwhile. It reports false if it could not.
func (r *Reflector[T, L]) syncState(ctx context.Context) (watch.Interface, bool) {
	if l := r.cfg.ListLimiter; l != nil {
		if err := l.Acquire(ctx, 1); err != nil {
			return nil, false
		}
		defer l.Release(1)
	}
	if r.cfg.Observer != nil && r.synced {
		r.cfg.Observer.Relist(r.relistReason)
	}
	r.relistReason = RelistRetry // unless a watch ends it otherwise
	r.syncStart = r.clock.Now()
	r.lastProgress = r.syncStart
	r.received.Store(0)
	if r.streamable {
		if w := r.streamInitialEvents(ctx); w != nil {
			return w, true
		}
	}
	return nil, ctx.Err() == nil && r.list(ctx)
}

// streamInitialEvents gets the initial state with a watch-list request and
// returns the watch, left open, once the server marked the end of the
// initial events. It returns nil when the caller should list instead.
//
// A stream that closes before that end is asked for again after a backoff
// delay, up to watchListTries streams in all, or just one once a sync has
// had to list so (see UsesWatchList): a proxy that cuts every stream at
// the bookmark, which would otherwise be asked for again and again, costs
// a stream or two per sync. A stream that ends otherwise without
// delivering its initial events (see errNoInitialEventsEnd) is not asked
// for again in this sync.
func (r *Reflector[T, L]) streamInitialEvents(ctx context.Context) watch.Interface {
	tries := 1
	if r.UsesWatchList() {
		tries = watchListTries
	}
	closed := 0 // streams closed before the end of their initial events
	for ctx.Err() == nil {
		r.request(OpWatchList)
		start := r.clock.Now()
		w, err := r.cfg.Watch(ctx, metav1.ListOptions{
			ResourceVersion:      r.rewatchResourceVersion(),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents:    ptr.To(true),
			AllowWatchBookmarks:  true,
			TimeoutSeconds:       r.watchTimeout(),
		})
		if err == nil {
			r.sink.StartList()
			var ended bool
			ended, err = r.consume(ctx, newStream(w, start, streamInitial))
			if ended {
				r.rvUnavailable = false
				r.sink.FinishList()
				r.publish()
				r.cfg.OnSuccess(OpWatchList)
				r.syncDone(OpWatchList)
				if !r.setWatchList(true) {
					r.log.Info("Watch-list streaming delivered the initial events again; streaming from now on")
				}
				r.sink.Watching()
				return w
			}
			r.stop(w)
			if ctx.Err() != nil {
				return nil
			}
			switch {
			case err == nil:
				err = errClosedBeforeEnd
			case errors.Is(err, errShortWatch):
				err = fmt.Errorf("%w: %w", errClosedBeforeEnd, err)
			}
		}
		switch {
		case errors.Is(err, errClosedBeforeEnd):
			if closed++; closed >= tries {
				r.fallBack(closed, err)
				return nil
			}
			r.log.V(2).Info("Watch-list stream ended early; streaming again after a delay", "err", err)
			if !r.sleep(ctx, r.delay()) {
				return nil
			}
		case errors.Is(err, errNoInitialEventsEnd):
			r.fallBack(closed+1, err)
			return nil
		case refusesWatchList(err):
			// Expected of older servers and of sources without streaming:
			// not an error, just the other way to get the initial state.
			r.log.V(2).Info("Server does not serve watch-list; using list and watch", "err", err)
			r.streamable = false
			r.setWatchList(false)
			return nil
		case isRetriable(err):
			r.cfg.OnError(OpWatchList, err)
			if !r.sleep(ctx, r.delay()) {
				return nil
			}
		case (IsExpired(err) || isTooLargeResourceVersion(err)) && !r.rvUnavailable:
			// Once only: from "" the version cannot be unavailable, and a
			// server that says so anyway gets backoff, not a storm.
			r.log.V(4).Info("Watch-list resource version unavailable; streaming the latest", "err", err)
			r.rvUnavailable = true
		default:
			r.cfg.OnError(OpWatchList, err)
			return nil
		}
	}
	return nil
}

// fallBack records that this sync lists, after streams streams did not
// deliver their initial events, the last for reason. It logs at Info when
// the reflector stops streaming, not at each relist that tries again.
func (r *Reflector[T, L]) fallBack(streams int, reason error) {
	if r.setWatchList(false) {
		r.log.Info("Watch-list streaming did not deliver the initial events; listing instead, and trying one stream again at each later relist",
			"streams", streams, "reason", reason.Error())
		return
	}
	r.log.V(2).Info("Watch-list streaming did not deliver the initial events again; listing", "streams", streams, "reason", reason.Error())
}

// The ways a watch-list stream fails to deliver its initial events.
var (
	// errClosedBeforeEnd: the stream closed, without an error, before
	// the bookmark that ends the initial events, as a proxy that cuts
	// streams at that bookmark closes it.
	errClosedBeforeEnd = errors.New("watch-list stream closed before the " + metav1.InitialEventsAnnotationKey + " bookmark")
	// errNoInitialEventsEnd: the stream goes on, but shows that the end
	// of its initial events is not coming; its causes follow.
	errNoInitialEventsEnd = errors.New("watch-list stream without the " + metav1.InitialEventsAnnotationKey + " bookmark")
	// errIdle: nothing came for watchListIdle.
	errIdle = fmt.Errorf("%w: nothing for %v", errNoInitialEventsEnd, watchListIdle)
	// errBookmarkNotEnd: a bookmark came without the annotation, as from
	// a server that took the request for a plain watch.
	errBookmarkNotEnd = fmt.Errorf("%w: a bookmark without that annotation, as from a server that ignores sendInitialEvents", errNoInitialEventsEnd)
	// errChangesNotEnd: changes came for watchListChanges.
	errChangesNotEnd = fmt.Errorf("%w: changes for %v", errNoInitialEventsEnd, watchListChanges)
)

// watch follows watch streams from the last resource version, reopening them
// when they time out, until one fails in a way that needs a relist. w, if
// not nil, is an open stream to start with.
func (r *Reflector[T, L]) watch(ctx context.Context, w watch.Interface) {
	if w != nil && ctx.Err() != nil {
		r.stop(w) // ended as the stream became the watch
		return
	}
	watching := w != nil
	for ctx.Err() == nil {
		kind := streamWatch
		// A watch's age counts from its request, as client-go's does.
		start := r.clock.Now()
		if w == nil {
			if r.rv == "" || r.rv == "0" {
				// The server starts such a watch with synthetic Added
				// events of the current state, in no version order.
				kind = streamSynthetic
			}
			var err error
			r.request(OpWatch)
			w, err = r.cfg.Watch(ctx, metav1.ListOptions{
				ResourceVersion:     r.rv,
				TimeoutSeconds:      r.watchTimeout(),
				AllowWatchBookmarks: true,
			})
			if ctx.Err() != nil {
				if err == nil {
					r.stop(w)
				}
				return
			}
			if err != nil {
				r.cfg.OnError(OpWatch, err)
				if isRetriable(err) && r.sleep(ctx, r.delay()) {
					continue
				}
				if IsExpired(err) {
					r.watchExpired()
				}
				r.relistReason = relistReason(err)
				return
			}
			r.cfg.OnSuccess(OpWatch)
			if !watching {
				watching = true
				r.sink.Watching()
			}
		}
		_, err := r.consume(ctx, newStream(w, start, kind))
		r.stop(w)
		w = nil
		if kind == streamSynthetic && ctx.Err() == nil {
			// The synthetic adds come in no order: a stream cut among
			// them may not have sent some, which no version resumes.
			r.log.V(4).Info("Watch from the current state ended; relisting", "err", err)
			if err != nil {
				r.cfg.OnError(OpWatch, err)
			}
			r.relistReason = RelistWatchEnded
			return
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case IsExpired(err):
			// A list at the last version returns data at least as fresh:
			// relist from it before falling back to a consistent read.
			r.log.V(4).Info("Watch expired; relisting", "err", err)
			r.watchExpired()
			r.cfg.OnError(OpWatch, err)
			r.relistReason = RelistExpired
			return
		case isTooLargeResourceVersion(err):
			r.log.V(4).Info("Watch resource version too large; relisting the latest", "err", err)
			r.rvUnavailable = true
			r.cfg.OnError(OpWatch, err)
			r.relistReason = RelistTooLarge
			return
		case apierrors.IsTooManyRequests(err):
			if !r.sleep(ctx, r.delay()) {
				return
			}
		default:
			r.cfg.OnError(OpWatch, err)
			r.relistReason = RelistWatchEnded
			return
		}
	}
}

// watchExpired records that a watch from r.rv got 410 Expired. The relist
// then asks for data not older than r.rv, unless a watch expired at r.rv
// before: the relist since then returned no newer state (a server that
// serves an old version from etcd after a restart, say), so the next one
// is a consistent read, and the cache cannot stay behind.
func (r *Reflector[T, L]) watchExpired() {
	if r.rv == r.expiredAt {
		r.rvUnavailable = true
	}
	r.expiredAt = r.rv
}

// relistReason names why a watch that failed with err needs a relist.
func relistReason(err error) string {
	switch {
	case IsExpired(err):
		return RelistExpired
	case isTooLargeResourceVersion(err):
		return RelistTooLarge
	}
	return RelistWatchEnded
}

// request tells the observer that a request of op is about to be sent.
func (r *Reflector[T, L]) request(op Op) {
	if r.cfg.Observer != nil {
		r.cfg.Observer.Request(op)
	}
}

// syncDone records that op brought the sink in step with the server.
func (r *Reflector[T, L]) syncDone(op Op) {
	took := r.clock.Since(r.syncStart)
	if took >= progressEvery {
		r.log.Info("Synced", "method", string(op), "objects", r.received.Load(), "took", took)
	}
	if o := r.cfg.Observer; o != nil {
		r.lastEvent.Store(r.clock.Now().UnixNano())
		o.Synced(op, took, !r.synced)
	}
	r.synced = true
}

// logProgress logs, at most every progressEvery, how many objects the sync
// in progress has received, so that a long sync is not a silent one.
func (r *Reflector[T, L]) logProgress() {
	if now := r.clock.Now(); now.Sub(r.lastProgress) >= progressEvery {
		r.lastProgress = now
		r.log.Info("Sync in progress", "objects", r.received.Load(), "elapsed", now.Sub(r.syncStart).Round(time.Millisecond))
	}
}

// stop stops w and waits, for a bounded time, until its result channel is
// closed: the goroutine that decodes a stream must not outlive the
// informer.
func (r *Reflector[T, L]) stop(w watch.Interface) {
	w.Stop()
	ch := w.ResultChan()
	for drained := false; !drained; {
		select {
		case _, open := <-ch:
			if !open {
				return // closed by Stop already: no timer needed
			}
		default:
			drained = true
		}
	}
	timeout := r.clock.NewTimer(stopWait)
	defer timeout.Stop()
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-timeout.C():
			r.log.Info("Watch did not close its result channel after Stop", "waited", stopWait)
			return
		}
	}
}

// relistResourceVersion is the version to list at: "0" (any cached state) at
// first, the last synced version after that, and "" (a consistent read)
// after the last version turned out to be unavailable.
func (r *Reflector[T, L]) relistResourceVersion() string {
	switch {
	case r.rvUnavailable:
		return ""
	case r.rv == "":
		return "0"
	}
	return r.rv
}

// rewatchResourceVersion is the version to stream initial events from.
func (r *Reflector[T, L]) rewatchResourceVersion() string {
	if r.rvUnavailable {
		return ""
	}
	return r.rv
}

// publish makes the current resource version visible to other goroutines.
func (r *Reflector[T, L]) publish() { r.published.Set(r.rv) }

// watchTimeout picks a server-side timeout between the minimum and twice it,
// so that many watchers do not reconnect at once.
func (r *Reflector[T, L]) watchTimeout() *int64 {
	min := r.cfg.MinWatchTimeout.Seconds()
	return ptr.To(int64(min + rand.Float64()*min))
}

// sleep waits d and reports false if ctx ended first.
func (r *Reflector[T, L]) sleep(ctx context.Context, d time.Duration) bool {
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
