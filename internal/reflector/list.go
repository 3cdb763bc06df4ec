package reflector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// list lists all objects, page by page, into the sink: with
// Config.ListStream, each item as its page is read (see streamPage);
// otherwise each page once returned whole, the next page being fetched
// while the sink takes the current one, so that the server's work and
// the decoding overlap the sink's, and no more than these two pages are
// held at a time (see wholePage).
func (r *Reflector[T, L]) list(ctx context.Context) bool {
	rv := r.relistResourceVersion()
	opts := listOptions(rv, r.pageSize(rv))
	r.sink.StartList()
	var ahead *pageFetch[L] // the next whole page, being fetched
	defer func() {
		if ahead != nil {
			ahead.abandon()
		}
	}()
	for {
		var page metav1.ListMeta
		var err error
		if r.cfg.ListStream != nil {
			page, err = r.streamPage(ctx, opts)
		} else {
			page, err = r.wholePage(ctx, opts, &ahead)
		}
		if ctx.Err() != nil {
			return false
		}
		switch {
		case err == nil:
		case opts.Continue != "" && IsExpired(err):
			// The continue token expired: list again in one piece.
			r.log.V(2).Info("List continuation expired, listing without pages", "err", err)
			opts = metav1.ListOptions{ResourceVersion: rv}
			r.sink.StartList() // what the expired pages put counts for nothing
			continue
		case (IsExpired(err) || isTooLargeResourceVersion(err)) && opts.ResourceVersion != "":
			r.log.V(4).Info("List resource version unavailable; listing the latest", "resourceVersion", opts.ResourceVersion, "err", err)
			r.rvUnavailable = true
			rv = ""
			opts = listOptions(rv, r.pageSize(rv))
			continue
		case isDecodeError(err):
			r.cfg.OnError(OpDecode, err)
			return false
		default:
			r.notServed = apierrors.IsNotFound(err)
			r.cfg.OnError(OpList, err)
			return false
		}
		r.notServed = false
		if opts.Continue == "" && rv == "0" && page.Continue != "" {
			r.paginated = true
		}
		if page.Continue == "" {
			r.rvUnavailable = false
			r.sink.FinishList()
			r.rv = page.ResourceVersion
			r.publish()
			r.cfg.OnSuccess(OpList)
			r.syncDone(OpList)
			return true
		}
		opts = continued(opts, page.Continue)
		r.logProgress()
	}
}

// continued returns the options of the page after the one opts asked
// for: a continuation carries its version in the token.
func continued(opts metav1.ListOptions, token string) metav1.ListOptions {
	opts.Continue = token
	opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	return opts
}

// streamPage lists the page opts asks for with Config.ListStream, each
// item going to the sink as it is read.
func (r *Reflector[T, L]) streamPage(ctx context.Context, opts metav1.ListOptions) (metav1.ListMeta, error) {
	r.request(OpList)
	items := streamItems[T, L]{r: r}
	page, err := r.cfg.ListStream(ctx, opts, &items)
	r.sink.Flush()
	if items.bad != nil {
		r.cfg.OnError(OpDecode, items.bad)
	}
	return page, err
}

// streamItems hands the items of a streamed page to the reflector's sink,
// flushing it every page's worth of items, so that handlers follow a long
// list.
type streamItems[T Object, L List] struct {
	r       *Reflector[T, L]
	pending int   // items put since the last flush
	bad     error // the first item that was not a T
}

func (s *streamItems[T, L]) Put(o runtime.Object) {
	obj, ok := o.(T)
	if !ok {
		if s.bad == nil {
			s.bad = fmt.Errorf("%s: list item is %T, want %T", s.r.cfg.Description, o, *new(T))
		}
		return
	}
	s.r.sink.Put(obj, FromOwnedListItem)
	s.added()
}

func (s *streamItems[T, L]) Undecodable(u Undecodable) {
	s.r.sink.Undecodable(u, false)
	s.added()
}

func (s *streamItems[T, L]) added() {
	s.r.received.Add(1)
	if s.pending++; s.pending == defaultPageSize {
		s.pending = 0
		s.r.sink.Flush()
		s.r.logProgress()
	}
}

// wholePage lists the page opts asks for with Config.List, or takes it
// from *ahead, where the previous call started fetching it; it starts
// fetching the page after it into *ahead, then hands the items to the
// sink.
func (r *Reflector[T, L]) wholePage(ctx context.Context, opts metav1.ListOptions, ahead **pageFetch[L]) (metav1.ListMeta, error) {
	var list L
	var err error
	if *ahead != nil {
		list, err = (*ahead).wait()
		*ahead = nil
	} else {
		r.request(OpList)
		list, err = r.cfg.List(ctx, opts)
	}
	if err != nil {
		return metav1.ListMeta{}, err
	}
	page := metav1.ListMeta{ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue()}
	if page.Continue != "" {
		*ahead = r.fetchPage(ctx, continued(opts, page.Continue))
	}
	if err := r.putItems(list); err != nil {
		return metav1.ListMeta{}, decodeError{err}
	}
	return page, nil
}

// decodeError is a page that was fetched but could not be read: it is
// reported as OpDecode rather than OpList.
type decodeError struct{ error }

func (e decodeError) Unwrap() error { return e.error }

func isDecodeError(err error) bool {
	_, ok := err.(decodeError)
	return ok
}

// listOptions returns the options of the first request of a list at rv
// with the given limit. A list at a version with a limit is, by the API's
// legacy rule, an exact read, which etcd serves at that version for as
// long as it keeps it: after an API server restart, the very state the
// watch just called expired. So such a list asks for data not older than
// rv, as a list without a limit gets by default.
func listOptions(rv string, limit int64) metav1.ListOptions {
	opts := metav1.ListOptions{ResourceVersion: rv, Limit: limit}
	if limit > 0 && rv != "" && rv != "0" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	return opts
}

// pageFetch is a list page being fetched on a goroutine of its own.
type pageFetch[L any] struct {
	cancel context.CancelFunc
	done   chan struct{}
	list   L
	err    error
}

// fetchPage starts fetching the list page opts asks for.
func (r *Reflector[T, L]) fetchPage(ctx context.Context, opts metav1.ListOptions) *pageFetch[L] {
	ctx, cancel := context.WithCancel(ctx)
	f := &pageFetch[L]{cancel: cancel, done: make(chan struct{})}
	r.request(OpList)
	go func() {
		defer close(f.done)
		f.list, f.err = r.cfg.List(ctx, opts)
	}()
	return f
}

// wait returns the page once fetched.
func (f *pageFetch[L]) wait() (L, error) {
	<-f.done
	f.cancel()
	return f.list, f.err
}

// abandon cancels the fetch and waits for its goroutine.
func (f *pageFetch[L]) abandon() {
	f.cancel()
	<-f.done
}

// pageSize is the limit of a list at rv. A page size given in the config
// pages every list. By default, a list at a given version is not paged, so
// that the watch cache serves it (a limit would send it to etcd), unless
// the first list showed that the watch cache is off.
func (r *Reflector[T, L]) pageSize(rv string) int64 {
	switch {
	case r.cfg.PageSize > 0:
		return r.cfg.PageSize
	case r.paginated || rv == "" || rv == "0":
		return defaultPageSize
	}
	return 0
}

// putItems hands every item of a list page to the sink. Items are not
// copied here: for a list of structs each T points into the page's item
// array, and the sink copies out the ones it keeps; the items of a list
// with OwnedItems are its own.
func (r *Reflector[T, L]) putItems(list L) error {
	if bad, ok := any(list).(UndecodableItems); ok {
		for _, u := range bad.UndecodableItems() {
			r.sink.Undecodable(u, false)
			r.received.Add(1)
		}
	}
	if owned, ok := any(list).(OwnedItems[T]); ok {
		for _, obj := range owned.OwnedItems() {
			r.sink.Put(obj, FromOwnedListItem)
			r.received.Add(1)
		}
		r.sink.Flush()
		return nil
	}
	var bad error
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(T)
		if !ok {
			if bad == nil {
				bad = fmt.Errorf("%s: list item is %T, want %T", r.cfg.Description, o, *new(T))
			}
			return nil
		}
		r.sink.Put(obj, FromList)
		r.received.Add(1)
		return nil
	})
	r.sink.Flush()
	if err != nil {
		return fmt.Errorf("%s: reading list %T: %w", r.cfg.Description, list, err)
	}
	if bad != nil {
		r.cfg.OnError(OpDecode, bad)
	}
	return nil
}
