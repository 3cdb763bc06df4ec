package jsondec

import (
	"errors"
	"sync"
)

// The batches in which a handover carries elements: a batch is handed
// over once it holds batchBytes, and before every read that may wait for
// the server; batchesInFlight of them at most are filled or being taken
// at once. A batch's buffer is made once, 2 × batchBytes long, which it
// never outgrows: an element of batchBytes or more is not copied, but fn
// has it on the scanner's goroutine once it has taken every batch before
// it.
const (
	batchBytes      = 16 << 10
	batchesInFlight = 4
)

// errHandoverStopped ends the scanner's reading once fn has failed.
var errHandoverStopped = errors.New("jsondec: fn failed")

// elementBatch is a run of consecutive elements, copied: element first+j
// is buf[ends[j-1]:ends[j]], with ends[-1] taken as 0.
type elementBatch struct {
	buf   []byte
	ends  []int
	first int
}

// handover carries a list's elements, copied in batches, from the scanner
// on the caller's goroutine to fn on a goroutine of its own, so that
// decoding the elements (most of a list's time) runs beside reading and
// checking the ones after them, as whole pages were fetched beside the
// decoding of the one before. The memory it takes is its batches' buffers,
// 128 KiB whatever the list's length, pooled with the handover.
type handover struct {
	fn         func(k int, v []byte) error
	full, free chan *elementBatch // batches to take, batches to fill
	cur        *elementBatch      // the batch being filled, if any
	failed     chan struct{}      // closed when fn fails
	done       chan struct{}      // closed when fn's goroutine ends
	err        error              // fn's error, read once done is closed
}

var handovers = sync.Pool{New: func() any {
	h := &handover{free: make(chan *elementBatch, batchesInFlight)}
	for range batchesInFlight {
		h.free <- &elementBatch{buf: make([]byte, 0, 2*batchBytes), ends: make([]int, 0, 64)}
	}
	return h
}}

// startHandover starts fn's goroutine, which calls fn with each element
// handed over, in order, until fn fails.
func startHandover(fn func(k int, v []byte) error) *handover {
	h := handovers.Get().(*handover)
	h.fn, h.err = fn, nil
	h.full = make(chan *elementBatch, batchesInFlight)
	h.failed, h.done = make(chan struct{}), make(chan struct{})
	go h.take()
	return h
}

// take is fn's goroutine.
func (h *handover) take() {
	defer close(h.done)
	for b := range h.full {
		start := 0
		for j, end := range b.ends {
			if h.err != nil {
				break
			}
			if err := h.fn(b.first+j, b.buf[start:end]); err != nil {
				h.err = err
				close(h.failed)
			}
			start = end
		}
		b.buf, b.ends = b.buf[:0], b.ends[:0]
		h.free <- b
	}
}

// add hands element k, v, over: copied into the batch being filled,
// which goes once it holds batchBytes, or, if v is that long itself,
// straight to fn. It returns fn's error for an element it hands straight,
// and errHandoverStopped once fn has failed on its goroutine.
func (h *handover) add(k int, v []byte) error {
	if len(v) >= batchBytes {
		return h.direct(k, v)
	}
	if h.cur == nil {
		select {
		case <-h.failed:
			return errHandoverStopped
		case h.cur = <-h.free:
		}
		h.cur.first = k
	}
	h.cur.buf = append(h.cur.buf, v...)
	h.cur.ends = append(h.cur.ends, len(h.cur.buf))
	if len(h.cur.buf) >= batchBytes {
		h.send()
	}
	return nil
}

// direct calls fn with element k, v, on the caller's goroutine, once fn's
// own goroutine has taken every batch handed over before it.
func (h *handover) direct(k int, v []byte) error {
	h.send()
	var idle [batchesInFlight]*elementBatch
	for i := range idle {
		idle[i] = <-h.free
	}
	for _, b := range idle {
		h.free <- b
	}
	select {
	case <-h.failed:
		return errHandoverStopped
	default:
	}
	return h.fn(k, v)
}

// send hands over the batch being filled, if any. It never waits: full
// holds as many batches as there are.
func (h *handover) send() {
	if h.cur != nil {
		h.full <- h.cur
		h.cur = nil
	}
}

// finish hands over what the scanner read before it stopped with err (nil
// at the array's end), waits for fn to take it, and returns fn's error,
// or else err. The handover goes back to its pool.
func (h *handover) finish(err error) error {
	h.send()
	close(h.full)
	<-h.done
	if h.err != nil {
		err = h.err
	}
	h.fn, h.full = nil, nil
	handovers.Put(h)
	return err
}
