package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// requestKind is what a request asks of a resource.
type requestKind int

const (
	otherRequest     requestKind = iota // discovery, another resource, a write
	listRequest                         // a list or a page of one
	watchRequest                        // a watch from a resource version
	watchListRequest                    // a watch-list stream (sendInitialEvents=true)
)

// kindOf tells what a request of method for u asks of resource.
func kindOf(method string, u *url.URL, resource string) requestKind {
	if method != http.MethodGet || !pathEndsWith(u.Path, resource) {
		return otherRequest
	}
	q := u.Query()
	switch {
	case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
		return watchListRequest
	case q.Get("watch") == "true":
		return watchRequest
	}
	return listRequest
}

func pathEndsWith(p, resource string) bool {
	return len(p) >= len(resource)+1 && p[len(p)-len(resource)-1:] == "/"+resource
}

// listFault is how a list request fails; see faults.FailLists.
type listFault int

const (
	// failWithStatus answers 500 Internal Server Error.
	failWithStatus listFault = iota
	// breakOff lets the response through but breaks its body off halfway,
	// as a connection reset in the middle of a response does.
	breakOff
	// failNextPage lets the first page of a paged list through and
	// answers the request for the next page with 500; a list that asks
	// for no page size fails with 500 at once.
	failNextPage
	// expireNextPage is failNextPage with 410 Gone, as the server answers
	// a continue token that has expired.
	expireNextPage
)

// faults is a client transport (install its wrap as a
// rest.Config.WrapTransport) that injects faults into the requests of one
// client for one resource, the way they happen between a client and a
// real API server:
//
//   - Cut cuts the client off the server: requests fail as if the
//     connection were refused, and open responses (watches) break off;
//     Heal lets requests through again.
//   - EndWatches ends the open watches cleanly, as the server ends a watch
//     at its timeout.
//   - ExpireWatches answers the next watches with 410 Gone, as the server
//     answers a watch from a version it no longer has.
//   - FailLists makes the next list requests fail, in given ways.
//   - ThrottleWatches and ThrottleLists answer the next watch, or list and
//     watch-list, requests with 429 Too Many Requests and Retry-After: 1,
//     as API Priority and Fairness answers a client over its share;
//     client-go's REST client waits and sends them again.
//   - RefuseWatchList answers every watch-list request with 422 Invalid,
//     as a server without watch-list streaming does.
type faults struct {
	resource string
	next     http.RoundTripper

	mu       sync.Mutex
	cut      bool
	refuseWL bool
	expire   int // watches still to answer with 410 Gone
	// watches, and lists and watch-lists, still to answer with 429
	throttleWatches, throttleLists int
	listFaults                     []listFault // how the next list requests fail, in order
	bodies                         map[*faultyBody]struct{}
	sent                           map[requestKind]int // requests let through to the server
	refused                        int                 // requests refused while cut off
	watches                        int                 // watch and watch-list streams opened
}

func newFaults(resource string) *faults {
	return &faults{resource: resource, bodies: map[*faultyBody]struct{}{}, sent: map[requestKind]int{}}
}

// wrap is a rest.Config.WrapTransport.
func (f *faults) wrap(rt http.RoundTripper) http.RoundTripper {
	f.next = rt
	return f
}

func (f *faults) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := kindOf(req.Method, req.URL, f.resource)
	answer, breakBody, refused := f.decide(req, kind)
	if refused {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	if answer != nil {
		return statusResponse(req, answer), nil
	}
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	b := &faultyBody{ReadCloser: resp.Body, f: f, kind: kind, left: -1}
	if breakBody {
		b.left = 256
		if resp.ContentLength > 0 {
			b.left = resp.ContentLength / 2
		}
	}
	f.mu.Lock()
	f.bodies[b] = struct{}{}
	if resp.StatusCode == http.StatusOK && (kind == watchRequest || kind == watchListRequest) {
		f.watches++
	}
	f.mu.Unlock()
	resp.Body = b
	return resp, nil
}

// decide picks the fault for a request of kind: refused, answered with
// a status instead of the server, or sent with its body to break off.
func (f *faults) decide(req *http.Request, kind requestKind) (answer *metav1.Status, breakBody, refused bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		f.refused++
		return nil, false, true
	}
	switch {
	case kind == watchListRequest && f.refuseWL:
		answer = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"}
	case kind == watchRequest && f.throttleWatches > 0:
		f.throttleWatches--
		answer = throttled()
	case kind == watchRequest && f.expire > 0:
		f.expire--
		answer = &apierrors.NewResourceExpired("too old resource version (injected)").ErrStatus
	case (kind == listRequest || kind == watchListRequest) && f.throttleLists > 0:
		f.throttleLists--
		answer = throttled()
	case (kind == listRequest || kind == watchListRequest) && len(f.listFaults) > 0:
		q := req.URL.Query()
		firstPage := kind == listRequest && q.Get("continue") == "" && q.Get("limit") != "" && q.Get("limit") != "0"
		switch lf := f.listFaults[0]; {
		case (lf == failNextPage || lf == expireNextPage) && firstPage:
			// Let it through; the next page fails.
		case lf == breakOff:
			f.listFaults = f.listFaults[1:]
			breakBody = true
		case lf == expireNextPage:
			f.listFaults = f.listFaults[1:]
			answer = &apierrors.NewResourceExpired("the provided continue parameter is too old (injected)").ErrStatus
		default:
			f.listFaults = f.listFaults[1:]
			answer = &apierrors.NewInternalError(errors.New("injected list failure")).ErrStatus
		}
	}
	if answer == nil {
		f.sent[kind]++
	}
	return answer, breakBody, false
}

// throttled is the status of a request that API Priority and Fairness
// rejects: 429, to be sent again in a second.
func throttled() *metav1.Status {
	return &apierrors.NewTooManyRequests("the request has been throttled (injected)", 1).ErrStatus
}

// statusResponse is the response of a server that answers req with st,
// with a Retry-After header if st asks the client to retry after a delay.
func statusResponse(req *http.Request, st *metav1.Status) *http.Response {
	st.Kind, st.APIVersion = "Status", "v1"
	body, _ := json.Marshal(st)
	header := http.Header{"Content-Type": {"application/json"}}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		header.Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	return &http.Response{
		Status:        strconv.Itoa(int(st.Code)) + " " + http.StatusText(int(st.Code)),
		StatusCode:    int(st.Code),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Cut cuts the client off and breaks its open responses off.
func (f *faults) Cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = true
	for b := range f.bodies {
		b.end(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
	}
}

// Heal lets requests through again.
func (f *faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = false
}

// EndWatches ends the open watch and watch-list streams cleanly.
func (f *faults) EndWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for b := range f.bodies {
		if b.kind == watchRequest || b.kind == watchListRequest {
			b.end(io.EOF)
		}
	}
}

// ExpireWatches answers the next n watch requests with 410 Gone.
func (f *faults) ExpireWatches(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire += n
}

// FailLists makes the next list requests, and watch-list requests, fail
// in the ways given, one each, in order.
func (f *faults) FailLists(how ...listFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listFaults = append(f.listFaults, how...)
}

// ThrottleWatches answers the next n watch requests with 429.
func (f *faults) ThrottleWatches(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.throttleWatches += n
}

// ThrottleLists answers the next n list and watch-list requests with 429.
func (f *faults) ThrottleLists(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.throttleLists += n
}

// RefuseWatchList makes the server seem not to serve watch-list streams.
func (f *faults) RefuseWatchList() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseWL = true
}

// faultStats is what a faults transport has done so far.
type faultStats struct {
	lists, watches, watchLists int // requests let through
	refused                    int // requests refused while cut off
	opened                     int // watch and watch-list streams opened
	open                       int // streams open now
	pending                    int // 410s, 429s and list failures still to inject
}

func (f *faults) stats() faultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := faultStats{
		lists: f.sent[listRequest], watches: f.sent[watchRequest], watchLists: f.sent[watchListRequest],
		refused: f.refused, opened: f.watches, pending: f.expire + f.throttleWatches + f.throttleLists + len(f.listFaults),
	}
	for b := range f.bodies {
		if b.kind == watchRequest || b.kind == watchListRequest {
			s.open++
		}
	}
	return s
}

// faultyBody is a response body that a fault can end, and that may break
// off after a number of bytes.
type faultyBody struct {
	io.ReadCloser
	f    *faults
	kind requestKind
	left int64 // bytes to read before it breaks off; -1: no limit

	mu    sync.Mutex
	ended error // what reads return once a fault ended the body
}

func (b *faultyBody) Read(p []byte) (int, error) {
	if err := b.endedWith(); err != nil {
		return 0, err
	}
	if b.left == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err != nil {
		if ended := b.endedWith(); ended != nil {
			err = ended // the fault, not the closed body it left
		}
	}
	return n, err
}

func (b *faultyBody) endedWith() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended
}

// end makes reads return err from now on, unblocking one in progress.
func (b *faultyBody) end(err error) {
	b.mu.Lock()
	if b.ended == nil {
		b.ended = err
	}
	b.mu.Unlock()
	b.ReadCloser.Close()
}

func (b *faultyBody) Close() error {
	b.f.mu.Lock()
	delete(b.f.bodies, b)
	b.f.mu.Unlock()
	return b.ReadCloser.Close()
}
