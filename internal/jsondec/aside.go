package jsondec

import (
	"errors"
	"sync"
)

// The batches in which elementsAside hands elements over: about
// asideBatch bytes each, asideBatches of them at most between the two
// goroutines. A batch grown past asideKeep by an element larger than
// asideBatch is left to the collector once used.
const (
	asideBatch   = 256 << 10
	asideBatches = 3
	asideKeep    = 4 * asideBatch
)

// elementBatch is a run of consecutive elements, copied: element first+j is
// buf[ends[j-1]:ends[j]], with ends[-1] taken as 0.
type elementBatch struct {
	buf   []byte
	ends  []int
	first int
}

// errAsideStopped ends the reading goroutine of elementsAside once the
// caller's fn has failed.
var errAsideStopped = errors.New("jsondec: reading stopped")

// elementsAside reads the array that starts at the scanner as elements
// does, and calls fn with the index and the bytes of each element, valid
// JSON, in order, as elements does; but it reads and checks the elements
// on a goroutine of its own while fn runs on the caller's, so that
// reading and checking an element's bytes overlaps with what fn does with
// the elements before it (decoding them). The elements travel in batches
// of copied bytes (asideBatch): the memory a list takes to read grows by
// asideBatches batches, whatever its length. fn's first error stops the
// reading and is returned at once: the goroutine ends at its next element,
// or when its read fails, once the caller has closed the body; it uses
// nothing but the scanner, which the caller does not use after an error.
func (s *scanner) elementsAside(fn func(k int, v []byte) error) error {
	free := make(chan *elementBatch, asideBatches)
	for range asideBatches {
		free <- &elementBatch{buf: make([]byte, 0, asideBatch)}
	}
	full := make(chan *elementBatch, asideBatches)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	var readErr error
	go func() {
		defer close(full)
		var b *elementBatch
		send := func() error {
			select {
			case full <- b:
				b = nil
				return nil
			case <-stop:
				return errAsideStopped
			}
		}
		// What was read is handed over before the scanner reads on, which
		// may wait for the server: an element reaches fn as soon as it
		// has arrived, as with elements.
		var stopped bool
		s.beforeRead = func() {
			if b != nil && !stopped {
				stopped = send() != nil
			}
		}
		defer func() { s.beforeRead = nil }() // before full is closed
		readErr = s.elements(func(k int, v []byte) error {
			if stopped {
				return errAsideStopped
			}
			if b != nil && len(b.buf)+len(v) > cap(b.buf) {
				if err := send(); err != nil {
					return err
				}
			}
			if b == nil {
				select {
				case b = <-free:
				case <-stop:
					return errAsideStopped
				}
				b.buf, b.ends, b.first = b.buf[:0], b.ends[:0], k
			}
			b.buf = append(b.buf, v...)
			b.ends = append(b.ends, len(b.buf))
			return nil
		})
		// The elements read before the end, or before a failure, are
		// handed over, as elements hands them; unless fn failed.
		if b != nil && !stopped && readErr != errAsideStopped {
			if err := send(); err != nil {
				readErr = err
			}
		}
	}()
	defer halt() // whatever ends the calls
	for b := range full {
		start := 0
		for j, end := range b.ends {
			if err := fn(b.first+j, b.buf[start:end]); err != nil {
				return err
			}
			start = end
		}
		if cap(b.buf) > asideKeep {
			b.buf = make([]byte, 0, asideBatch)
		}
		free <- b
	}
	return readErr // set before full was closed
}
