package watchstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informers/internal/decoded"
	"github.com/kubetyped/informers/internal/jsondec"
)

// A watch stream in JSON is a sequence of metav1.WatchEvent objects,
// {"type":"ADDED","object":{...}}, each on a line of its own as
// kube-apiserver writes them. WatchJSON decodes each event's object
// straight from the line, once, with the library's JSON decoder (or any
// decoded.EventFunc), where client-go's decoder reads the event into a
// RawExtension and decodes the object from a copy.

// WatchJSON sends req, a watch request asking for JSON, and decodes the
// objects of kind kind (any but Status if kind is "") in its stream with
// decode; a stream in another format ends with an Error event. Like
// client-go's watches, it is not rate limited.
func WatchJSON[T runtime.Object](ctx context.Context, req *rest.Request, kind string, decode decoded.EventFunc[T]) (watch.Interface, error) {
	req = req.Throttle(nil)
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	return start(ctx, body, Sniffed, kind, Decoders[T]{JSON: decode}), nil
}

// maxJSONEvent bounds one JSON event, as client-go's stream decoder does.
const maxJSONEvent = maxWatchFrame

// receiveJSON decodes the JSON events of r until the stream ends or is
// stopped.
func (w *decodingWatch[T]) receiveJSON(r *bufio.Reader) {
	var line []byte
	for {
		var err error
		line, err = readLine(r, line[:0])
		if err != nil {
			w.ended(err)
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ev, err := w.decodeJSON(line)
		if err != nil {
			w.fail(err)
			return
		}
		if !w.send(ev) {
			return
		}
	}
}

// readLine appends the next line of r to buf, without its newline. A
// stream that ends amid a line is cut short.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		part, err := r.ReadSlice('\n')
		buf = append(buf, part...)
		if len(buf) > maxJSONEvent {
			return buf, fmt.Errorf("watch event of more than %d bytes", maxJSONEvent)
		}
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(buf)) > 0:
			return buf, io.ErrUnexpectedEOF
		default:
			return buf, err
		}
	}
}

// decodeJSON decodes one JSON event.
func (w *decodingWatch[T]) decodeJSON(line []byte) (watch.Event, error) {
	typ, raw, kind, valid := jsondec.Event(line)
	if !valid {
		return watch.Event{}, fmt.Errorf("watch event is not valid JSON: %w", json.Unmarshal(line, new(any)))
	}
	if len(typ) < 2 || typ[0] != '"' || len(raw) == 0 {
		return watch.Event{}, fmt.Errorf("malformed watch event %.100q", line)
	}
	evType, err := eventType(typ[1 : len(typ)-1])
	if err != nil {
		return watch.Event{}, err
	}
	switch {
	case kind == w.kind, w.kind == "" && kind != "Status":
		return w.object(evType, w.decoders.JSON, raw)
	case kind == "Status":
		status := &metav1.Status{}
		if err := json.Unmarshal(raw, status); err != nil {
			return watch.Event{}, fmt.Errorf("decoding Status: %w", err)
		}
		status.TypeMeta = metav1.TypeMeta{} // as client-go's decoder leaves it
		return watch.Event{Type: evType, Object: status}, nil
	}
	return watch.Event{}, fmt.Errorf("watch event carries a %q, want %s", kind, w.kind)
}
