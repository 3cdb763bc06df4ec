// Package watchstream decodes kube-apiserver's watch streams, protobuf
// (watchstream.go) and JSON (jsonstream.go): each object is decoded once,
// straight from its frame or line.
package watchstream

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/protodec"
)

// A watch stream in protobuf is a sequence of frames, each a 4-byte
// big-endian length and a metav1.WatchEvent: its type (field 1) and its
// object (field 2), a runtime.RawExtension whose raw bytes (field 1) are
// the object in the protobuf envelope: the magic prefix, then a
// runtime.Unknown with the object's TypeMeta (field 1: apiVersion 1, kind
// 2) and the object's own encoding (field 2).
//
// client-go's StreamWatcher copies the object's bytes out of the frame
// twice (into the RawExtension, then into the Unknown) before decoding
// them, and hands every event over an unbuffered channel. Watch decodes
// each object straight from the frame, which it reuses, and keeps a short
// queue of decoded events so that decoding and the informer's writes
// overlap.

const (
	// maxWatchFrame bounds one event, as client-go's stream decoder does.
	maxWatchFrame = 16 << 20
	// watchQueue is how many decoded events may wait for the informer.
	watchQueue = 64
)

// unmarshaler is implemented by the generated protobuf types of the API.
type unmarshaler interface {
	Unmarshal([]byte) error
}

// NewFunc returns a function making new empty objects of example's type,
// and whether they decode from protobuf on their own: example's type is a
// pointer to a generated API type. example itself may be a nil pointer.
func NewFunc[T runtime.Object](example T) (func() T, bool) {
	t := reflect.TypeOf(example)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	elem := t.Elem()
	newT := func() T { return reflect.New(elem).Interface().(T) }
	_, ok := any(newT()).(unmarshaler)
	return newT, ok
}

// decodingWatch is a watch whose stream, in protobuf or in JSON, it
// decodes itself into objects of type T, of kind kind, with the decoder of
// the stream's format; a stream in another format it forwards from a watch
// through client-go.
type decodingWatch[T runtime.Object] struct {
	body     io.ReadCloser
	format   Format // the stream's, Sniffed if its first bytes tell
	kind     string
	decoders Decoders[T]
	result   chan watch.Event
	done     chan struct{}
	stop     sync.Once
	log      klog.Logger
}

// Decoders decode the objects of a watch stream, by the stream's format.
// A stream in a format without one (CBOR always) is watched again through
// Again, client-go's decoder, if set.
type Decoders[T runtime.Object] struct {
	Protobuf decoded.EventFunc[T]
	JSON     decoded.EventFunc[T]
	// Again sends the watch request again through client-go.
	Again func() (watch.Interface, error)
}

// Generated returns the decoded.EventFunc of objects that newT makes, generated
// API types (see NewFunc), presized then decoded by their Unmarshal method.
func Generated[T runtime.Object](newT func() T) decoded.EventFunc[T] {
	sizes := sizePlanFor(reflect.TypeOf(newT()).Elem())
	return func(data []byte, _ bool) (T, error) {
		obj := newT()
		if sizes != nil {
			sizes.presize(reflect.ValueOf(obj).UnsafePointer(), data)
		}
		return obj, any(obj).(unmarshaler).Unmarshal(data)
	}
}

// Watch sends req, a watch request preferring protobuf, and decodes its
// stream into objects of kind kind that newT makes, which must be generated
// API types (see NewFunc), with their generated Unmarshal methods.
func Watch[T runtime.Object](ctx context.Context, req *rest.Request, kind string, newT func() T) (watch.Interface, error) {
	if _, ok := any(newT()).(unmarshaler); !ok {
		return nil, fmt.Errorf("watching %s: %T does not decode from protobuf", kind, newT())
	}
	return WatchWith(ctx, req, kind, Generated(newT))
}

// WatchWith sends req, a watch request preferring protobuf, and decodes
// the objects of kind kind in its stream with decode. Like client-go's
// watches, it is not rate limited. A server answering in JSON, as it does
// when the client's configuration asks for JSON, is watched again through
// client-go's decoder.
func WatchWith[T runtime.Object](ctx context.Context, req *rest.Request, kind string, decode decoded.EventFunc[T]) (watch.Interface, error) {
	req = req.Throttle(nil)
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	return FromStream(ctx, body, kind, decode, func() (watch.Interface, error) { return req.Watch(ctx) }), nil
}

// FromStream decodes body, a protobuf watch stream of objects of kind
// kind, with decode. again watches again through client-go if the stream
// turns out to be JSON.
func FromStream[T runtime.Object](ctx context.Context, body io.ReadCloser, kind string, decode decoded.EventFunc[T], again func() (watch.Interface, error)) watch.Interface {
	return start(ctx, body, Sniffed, kind, Decoders[T]{Protobuf: decode, Again: again})
}

// FromResponse decodes body, a watch stream of objects of kind kind whose
// Content-Type is contentType ("" if unknown: its first bytes tell), with
// the decoder of its format. A content type that is none of the API
// server's is an error naming it; body is then closed.
func FromResponse[T runtime.Object](ctx context.Context, body io.ReadCloser, contentType, kind string, d Decoders[T]) (watch.Interface, error) {
	format, err := FormatOf(contentType)
	if err != nil {
		body.Close()
		return nil, err
	}
	return start(ctx, body, format, kind, d), nil
}

// start returns the watch of body, receiving.
func start[T runtime.Object](ctx context.Context, body io.ReadCloser, format Format, kind string, d Decoders[T]) *decodingWatch[T] {
	w := &decodingWatch[T]{
		body:     body,
		format:   format,
		kind:     kind,
		decoders: d,
		result:   make(chan watch.Event, watchQueue),
		done:     make(chan struct{}),
		log:      klog.FromContext(ctx),
	}
	go w.receive()
	return w
}

// ResultChan returns the decoded events; it is closed when the stream ends.
func (w *decodingWatch[T]) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the stream. The result channel closes soon after.
func (w *decodingWatch[T]) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.body.Close()
	})
}

// send hands ev to the informer, and reports false if the watch was
// stopped first.
func (w *decodingWatch[T]) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	}
}

func (w *decodingWatch[T]) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// receive decodes events until the stream ends or is stopped. A stream
// that breaks off ends the watch; one that does not decode ends it with an
// Error event, as client-go's does, so that the informer watches again.
func (w *decodingWatch[T]) receive() {
	defer close(w.result)
	defer w.Stop()
	r := bufio.NewReaderSize(w.body, 8<<10)
	format := w.format
	if format == Sniffed {
		first, err := r.Peek(len(cborTag))
		if len(first) == 0 {
			w.ended(err)
			return
		}
		format = Sniff(first)
	}
	switch {
	case format == JSON && w.decoders.JSON != nil:
		w.receiveJSON(r)
		return
	case format != Protobuf || w.decoders.Protobuf == nil:
		w.forward(format)
		return
	}
	var frame []byte
	for {
		var err error
		frame, err = readFrame(r, frame)
		if err != nil {
			w.ended(err)
			return
		}
		ev, err := w.decode(frame)
		if err != nil {
			w.fail(err)
			return
		}
		if !w.send(ev) {
			return
		}
	}
}

// ended ends the watch after a read failed with err: quietly if the
// watch was stopped or the stream ended or broke off, with an Error event
// otherwise.
func (w *decodingWatch[T]) ended(err error) {
	if w.stopped() {
		return
	}
	switch {
	case errors.Is(err, io.EOF):
	case errors.Is(err, io.ErrUnexpectedEOF), utilnet.IsProbableEOF(err), utilnet.IsTimeout(err), errors.Is(err, context.Canceled):
		w.log.V(5).Info("Watch stream ended", "err", err)
	default:
		w.fail(err)
	}
}

// fail sends err, why the client could not go on reading the stream, as
// an Error event. Its status says the failure is the client's: no HTTP
// code (client-go's decoder says 500, as if the server had failed), and
// client-go's cause type for a stream that does not decode,
// ClientWatchDecoding.
func (w *decodingWatch[T]) fail(err error) {
	msg := fmt.Sprintf("the client failed reading the watch stream of %s: %v", w.what(), err)
	w.send(watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status:  metav1.StatusFailure,
		Message: msg,
		Reason:  metav1.StatusReasonUnknown,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ClientWatchDecoding", Message: msg}}},
	}})
}

// what names the objects of the stream.
func (w *decodingWatch[T]) what() string {
	if w.kind == "" {
		return "objects"
	}
	return w.kind
}

// forward closes the stream, which is in format, watches again through
// client-go's decoder, and forwards its events. Nothing of the first stream
// was used, so the second one resumes from the same point.
func (w *decodingWatch[T]) forward(format Format) {
	w.body.Close()
	if w.decoders.Again == nil {
		w.fail(fmt.Errorf("a watch stream of %s in %s, which this watch does not decode", w.kind, format))
		return
	}
	inner, err := w.decoders.Again()
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			w.fail(err)
			return
		}
		s := status.Status()
		w.send(watch.Event{Type: watch.Error, Object: &s})
		return
	}
	defer inner.Stop()
	for {
		select {
		case ev, open := <-inner.ResultChan():
			if !open || !w.send(ev) {
				return
			}
		case <-w.done:
			return
		}
	}
}

// readFrame reads the next frame of r into buf, growing it if needed.
func readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return buf, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxWatchFrame {
		return buf, fmt.Errorf("watch event of %d bytes is larger than %d", n, maxWatchFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	return buf, nil
}

// decode decodes one frame. The object shares no memory with the frame:
// the generated Unmarshal methods copy every string and byte slice.
func (w *decodingWatch[T]) decode(frame []byte) (watch.Event, error) {
	typ, raw, err := watchEventFields(frame)
	if err != nil {
		return watch.Event{}, err
	}
	evType, err := eventType(typ)
	if err != nil {
		return watch.Event{}, err
	}
	kind, data, err := protodec.Unwrap(raw)
	if err != nil {
		return watch.Event{}, fmt.Errorf("watch event object: %w", err)
	}
	switch string(kind) {
	case w.kind:
		return w.object(evType, w.decoders.Protobuf, data)
	case "Status":
		status := &metav1.Status{}
		if err := status.Unmarshal(data); err != nil {
			return watch.Event{}, fmt.Errorf("decoding Status: %w", err)
		}
		return watch.Event{Type: evType, Object: status}, nil
	}
	return watch.Event{}, fmt.Errorf("watch event carries a %s, want %s", kind, w.kind)
}

// object returns the event of type typ whose object, encoded in data, it
// decodes with decode. An object that decode names as undecodable is the
// event's object, an *decoded.Undecodable, and the stream goes on; any
// other failure ends it.
func (w *decodingWatch[T]) object(typ watch.EventType, decode decoded.EventFunc[T], data []byte) (watch.Event, error) {
	obj, err := decode(data, typ == watch.Bookmark)
	if err != nil {
		if u, ok := errors.AsType[*decoded.Undecodable](err); ok {
			w.log.V(4).Info("Watch event object does not decode", "type", typ, "kind", w.kind, "err", u)
			return watch.Event{Type: typ, Object: u}, nil
		}
		return watch.Event{}, fmt.Errorf("decoding %s: %w", w.kind, err)
	}
	return watch.Event{Type: typ, Object: obj}, nil
}

// eventType returns the watch event type named typ.
func eventType(typ []byte) (watch.EventType, error) {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if string(typ) == string(t) {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown watch event type %q", typ)
}

// watchEventFields returns the type of a metav1.WatchEvent and the raw
// bytes of its object.
func watchEventFields(b []byte) (typ, raw []byte, err error) {
	err = protodec.EachBytesField(b, func(num int32, v []byte) error {
		switch num {
		case 1:
			typ = v
		case 2: // a RawExtension: its raw bytes are field 1
			return protodec.EachBytesField(v, func(num int32, v []byte) error {
				if num == 1 {
					raw = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("decoding watch event: %w", err)
	}
	return typ, raw, nil
}
