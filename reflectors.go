package informers

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/reflector"
)

// reflectors makes the reflectors of one informer, over its list-watch or
// over the list-watch of one namespace, with the list type erased: the
// one place where an informer's configuration becomes a reflector's. It
// also asks the server for its current version, for consistency waits and
// the staleness monitor.
type reflectors[T Object] struct {
	make          func(reflectorRequest[T]) (runner, error)
	serverVersion func(context.Context) (string, error)
	// tweaked says a tweak edits the requests, so that the client cannot
	// tell what the selectors leave out.
	tweaked bool
}

// reflectorRequest is what a scope asks of one reflector.
type reflectorRequest[T Object] struct {
	// namespace is the namespace the reflector lists and watches, through
	// a list-watch of its own; "" for the informer's list-watch.
	namespace string
	sink      reflector.Sink[T]
	// resume is the version the sink is at already; "" for none.
	resume string
	// version is where the reflector publishes the version it reached.
	version *reflector.Version
	// watchList allows watch-list streaming, if the informer does.
	watchList bool
	// narrow, if set, edits every request before the informer's tweak:
	// the shard selector of a sharded scope.
	narrow func(*metav1.ListOptions)
	// observeList, if set, is shown every list page that arrives.
	observeList func(List)

	onErr func(reflector.Op, error)
	onOK  func(reflector.Op)
	obs   reflector.Observer
	log   klog.Logger
}

// newReflectors returns the maker of reflectors configured by c, over the
// list-watches lwFor returns: lwFor("") is the informer's own; a scope
// that watches namespaces one by one asks for one per namespace.
func newReflectors[T Object, L List](c config[T], lwFor func(namespace string) (*ListWatch[T, L], error)) (*reflectors[T], error) {
	whole, err := lwFor("")
	if err != nil {
		return nil, fmt.Errorf("list-watch of all namespaces: %w", err)
	}
	if whole == nil || whole.ListFunc == nil || whole.WatchFunc == nil {
		return nil, fmt.Errorf("ListWatch needs ListFunc and WatchFunc")
	}
	return &reflectors[T]{
		tweaked: c.tweak != nil || whole.Tweak != nil,
		make: func(req reflectorRequest[T]) (runner, error) {
			lw := whole
			if req.namespace != "" {
				if lw, err = lwFor(req.namespace); err != nil {
					return nil, fmt.Errorf("%s: list-watch of namespace %s: %w", c.desc, req.namespace, err)
				}
				if lw == nil || lw.ListFunc == nil || lw.WatchFunc == nil {
					return nil, fmt.Errorf("%s: list-watch of namespace %s needs ListFunc and WatchFunc", c.desc, req.namespace)
				}
			}
			return reflector.New[T, L](reflectorConfig(c, lw, req), req.sink), nil
		},
		serverVersion: func(ctx context.Context) (string, error) {
			opts := metav1.ListOptions{Limit: 1}
			if c.tweak != nil {
				c.tweak(&opts)
			}
			list, err := whole.List(ctx, opts)
			if err != nil {
				return "", err
			}
			return list.GetResourceVersion(), nil
		},
	}, nil
}

// reflectorConfig is the configuration of the reflector that req asks
// for, over lw, tuned by c. Every request it sends carries, in this
// order, the informer's selectors, the scope's narrowing and the
// informer's tweak; then lw's own tweak edits last.
func reflectorConfig[T Object, L List](c config[T], lw *ListWatch[T, L], req reflectorRequest[T]) reflector.Config[L] {
	edit := func(opts *metav1.ListOptions) {
		c.sel.apply(opts)
		if req.narrow != nil {
			req.narrow(opts)
		}
		if c.tweak != nil {
			c.tweak(opts)
		}
	}
	log := req.log
	if req.namespace != "" {
		log = log.WithValues("namespace", req.namespace)
	}
	return reflector.Config[L]{
		Description: c.desc,
		List: func(ctx context.Context, opts metav1.ListOptions) (L, error) {
			edit(&opts)
			l, err := lw.List(ctx, opts)
			if err == nil && req.observeList != nil {
				req.observeList(l)
			}
			return l, err
		},
		Watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			edit(&opts)
			return lw.Watch(ctx, opts)
		},
		ListStream:      streamOf(lw, edit, req.observeList),
		WatchList:       req.watchList && !lw.DisableWatchList && !c.noWatchList,
		ResourceVersion: req.resume,
		Version:         req.version,
		PageSize:        c.pageSize,
		Backoff:         c.backoff,
		MinWatchTimeout: c.minWatchTimeout,
		NotServedRetry:  notServedRetry(c.waitForResource),
		ListLimiter:     c.listLimiter,
		OnError:         req.onErr,
		OnSuccess:       req.onOK,
		Observer:        req.obs,
		Logger:          log,
	}
}

// streamOf returns the ListStream of a reflector over lw, whose requests
// edit edits, or nil if lw does not stream; observe, if set, is shown the
// metadata of every page.
func streamOf[T Object, L List](lw *ListWatch[T, L], edit func(*metav1.ListOptions), observe func(List)) func(context.Context, metav1.ListOptions, reflector.ListItems) (metav1.ListMeta, error) {
	if lw.StreamFunc == nil {
		return nil
	}
	return func(ctx context.Context, opts metav1.ListOptions, items reflector.ListItems) (metav1.ListMeta, error) {
		edit(&opts)
		page, err := lw.stream(ctx, opts, reflectorItems[T]{items})
		if err == nil && observe != nil {
			observe(&metav1.List{ListMeta: page})
		}
		return page, err
	}
}

// resourcePoll is how often an informer asks again for a resource the
// server does not serve (a custom resource whose definition is not
// installed yet), instead of backing off up to 30 seconds: a controller
// applied with its CRD starts soon after the CRD. WaitForResource polls
// faster still.
const (
	resourcePoll     = time.Second
	resourcePollWait = 500 * time.Millisecond
)

func notServedRetry(waitForResource bool) time.Duration {
	if waitForResource {
		return resourcePollWait
	}
	return resourcePoll
}
