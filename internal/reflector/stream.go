package reflector

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// streamKind says what a watch stream starts with.
type streamKind uint8

const (
	// streamWatch resumes from a resource version: every event is newer.
	streamWatch streamKind = iota
	// streamSynthetic starts from "" or "0": Added events of the current
	// state come first, in no order of resource version.
	streamSynthetic
	// streamInitial is a watch-list stream before its end bookmark.
	streamInitial
)

// stream is a watch being read, with what consume tracks about it.
type stream struct {
	w     watch.Interface
	kind  streamKind
	start time.Time
	// last is when the last event arrived, and changed when the first
	// Modified or Deleted event did: kept for initial events only.
	last, changed time.Time
	events        int
	unflushed     int // changes applied since the sink's last Flush
}

// newStream returns the stream of w, which was requested at start.
func newStream(w watch.Interface, start time.Time, kind streamKind) *stream {
	return &stream{w: w, kind: kind, start: start, last: start}
}

// consume applies the events of s to the sink until the stream closes or
// fails. A watch-list stream returns true, leaving it open, at the
// bookmark that ends the initial events, and fails with an error of
// errNoInitialEventsEnd when that bookmark is overdue (see watchListIdle
// and watchListChanges).
func (r *Reflector[T, L]) consume(ctx context.Context, s *stream) (bool, error) {
	// The idle timer of initial events is not reset at each event, which
	// a stream of thousands would pay for: when it fires, it is set again
	// for what is left of watchListIdle after the last event.
	var idle clock.Timer
	var idleC <-chan time.Time
	if s.kind == streamInitial {
		idle = r.clock.NewTimer(watchListIdle)
		defer idle.Stop()
		idleC = idle.C()
	}
	ch := s.w.ResultChan()
	for {
		var ev watch.Event
		var open bool
		select {
		case ev, open = <-ch: // an event is waiting: no need for the full select
		default:
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-idleC:
				if s.unflushed > 0 {
					r.sink.Flush()
					s.unflushed = 0
				}
				if err := r.initialEventsOverdue(s, idle); err != nil {
					return false, err
				}
				continue
			case ev, open = <-ch:
			}
		}
		if !open {
			if s.unflushed > 0 {
				r.sink.Flush()
			}
			if s.events == 0 && r.clock.Since(s.start) < shortWatch {
				return false, errShortWatch
			}
			return false, nil
		}
		s.events++
		if idle != nil { // only a watch-list's initial events are timed
			s.last = r.clock.Now()
			if (ev.Type == watch.Modified || ev.Type == watch.Deleted) && s.changed.IsZero() {
				s.changed = s.last
			}
		}
		ended, err := r.apply(s, ev)
		if err == nil && idle != nil && !s.changed.IsZero() && s.last.Sub(s.changed) >= watchListChanges {
			err = errChangesNotEnd
		}
		if err != nil {
			if s.unflushed > 0 {
				r.sink.Flush()
				if s.kind == streamWatch {
					r.publish() // what came before the error is applied
				}
			}
			return false, err
		}
		if ended {
			// The caller publishes the version once the sink has swept
			// what the stream did not contain.
			r.sink.Flush()
			return true, nil
		}
		// Flush when the next event is not already waiting, or after a long
		// run, so handlers are woken once per burst; a long run also checks
		// ctx, which the fast path above does not. A watch-list's initial
		// events are flushed by runs, and by the idle timer: the channel
		// of a stream is short or unbuffered (client-go's), so it is often
		// empty between events, and waking handlers for each event of a
		// stream of thousands costs a goroutine switch per object.
		if s.unflushed++; s.unflushed >= flushEvery || len(ch) == 0 && s.kind != streamInitial {
			r.sink.Flush()
			r.publish()
			if r.cfg.Observer != nil && s.kind != streamInitial {
				r.lastEvent.Store(r.clock.Now().UnixNano())
			}
			s.unflushed = 0
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
		}
	}
}

// initialEventsOverdue is called when the idle timer of a watch-list
// stream s fires. It returns the error of a stream whose end bookmark is
// overdue, and otherwise sets idle again for the rest of watchListIdle
// after the last event.
func (r *Reflector[T, L]) initialEventsOverdue(s *stream, idle clock.Timer) error {
	now := r.clock.Now()
	if !s.changed.IsZero() && now.Sub(s.changed) >= watchListChanges {
		return errChangesNotEnd
	}
	quiet := now.Sub(s.last)
	if quiet >= watchListIdle {
		return errIdle
	}
	idle.Reset(watchListIdle - quiet)
	return nil
}

// apply hands one event to the sink and advances the resource version. It
// returns the error an Error event carries, and true at the bookmark that
// ends a watch-list stream's initial events.
func (r *Reflector[T, L]) apply(s *stream, ev watch.Event) (ended bool, err error) {
	if ev.Type == watch.Error {
		return false, apierrors.FromObject(ev.Object)
	}
	if u, ok := ev.Object.(Undecodable); ok {
		return r.applyUndecodable(s, ev.Type, u)
	}
	obj, ok := ev.Object.(T)
	if !ok {
		r.cfg.OnError(OpDecode, fmt.Errorf("%s: %s watch event carries %T, want %T", r.cfg.Description, ev.Type, ev.Object, *new(T)))
		return false, nil
	}
	// Read before the sink sees obj: a transform may change it in place.
	rv := obj.GetResourceVersion()
	switch ev.Type {
	case watch.Added:
		if s.kind == streamInitial {
			r.sink.Put(obj, FromInitialEvents)
			if r.received.Add(1)%progressCheck == 0 {
				r.logProgress()
			}
		} else {
			r.sink.Put(obj, FromAdded)
		}
	case watch.Modified:
		r.sink.Put(obj, FromModified)
	case watch.Deleted:
		r.sink.Delete(obj)
	case watch.Bookmark:
		if s.kind == streamInitial {
			if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				// A server that honours sendInitialEvents annotates its
				// first bookmark; its version would not be a resume point.
				return false, errBookmarkNotEnd
			}
			ended = true
		}
	default:
		r.cfg.OnError(OpDecode, fmt.Errorf("%s: unknown watch event type %q", r.cfg.Description, ev.Type))
		return false, nil
	}
	r.advance(s, ev.Type, rv)
	return ended, nil
}

// advance moves the resume point to rv, the version of an event of s.
// Every event that carries a version advances it, with two exceptions: the
// initial events of a watch-list stream, which come in no version order
// and count only once their end bookmark arrives; and the synthetic Added
// events of a watch from "" or "0", which also come in no order, and move
// the version only forward where versions compare as numbers.
func (r *Reflector[T, L]) advance(s *stream, typ watch.EventType, rv string) {
	switch {
	case rv == "":
	case s.kind == streamInitial:
		if typ == watch.Bookmark {
			r.rv = rv
		}
	case s.kind == streamSynthetic && typ == watch.Added:
		if olderThan(rv, r.rv) {
			return
		}
		r.rv = rv
	default:
		r.rv = rv
	}
}

// olderThan reports whether resource version a is numerically below b.
// Versions that do not parse as numbers never compare as older.
func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// applyUndecodable hands the sink an event whose object could not be
// decoded into T, and advances the resource version as its event would:
// the stream goes on, and no other object waits for it.
func (r *Reflector[T, L]) applyUndecodable(s *stream, typ watch.EventType, u Undecodable) (bool, error) {
	_, _, _, rv := u.Identity()
	switch typ {
	case watch.Added, watch.Modified:
		r.sink.Undecodable(u, false)
		if s.kind == streamInitial {
			r.received.Add(1)
		}
	case watch.Deleted:
		r.sink.Undecodable(u, true)
	default:
		// A bookmark carries no object a controller reads: what cannot be
		// decoded of it is the server's fault.
		r.cfg.OnError(OpDecode, fmt.Errorf("%s: %s watch event: %w", r.cfg.Description, typ, u))
		return false, nil
	}
	r.advance(s, typ, rv)
	return false, nil
}
