package informers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informers"
	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// fixture=json of BenchmarkUpdate: an update of a custom resource (an
// Application, 4.6 KB of JSON) arriving as a JSON watch event, decoded,
// applied to the cache and delivered to one handler. The events are
// encoded once; the loop hands them to the watch's body, whose reader
// decodes them as an informer over a server would: client-go's typed
// informer through its watch decoder (the framer, the streaming decoder
// and the object decoder of rest.Request.Watch, then the informer's
// store and a typed handler), ours through a Factory's JSON watch path.

// benchJSONUpdateCount is how many applications the cache holds.
const benchJSONUpdateCount = 1000

// benchJSONUpdate is one implementation of fixture=json: it starts a cache
// over a list body and a watch stream, counting updates with onUpdate, and
// returns how to stop it, after the cache has synced.
type benchJSONUpdate struct {
	name  string
	start func(list []byte, stream io.ReadCloser, onUpdate func()) (stop func(), err error)
}

// benchJSONUpdates are the implementations of fixture=json; client-go's,
// typed, is added by bench_clientgo_typed_test.go.
var benchJSONUpdates = []benchJSONUpdate{
	{"informers", benchJSONUpdateInformers},
}

// benchJSONUpdateFixture returns the list body of count applications and,
// for v in 0 and 1, lines[v][i]: a MODIFIED watch event of application i,
// so that a benchmark can alternate them and every event is a change.
func benchJSONUpdateFixture(count int) ([]byte, [2][][]byte, error) {
	var lines [2][][]byte
	l := bf.ApplicationList{TypeMeta: metav1.TypeMeta{Kind: "ApplicationList", APIVersion: bf.ApplicationGV.String()}}
	l.ResourceVersion = strconv.Itoa(1000 + count)
	for i := range count {
		app := bf.NewApplication(i, 1)
		l.Items = append(l.Items, *app)
		for v := range lines {
			app.ResourceVersion = strconv.Itoa(1_000_000*(v+1) + i)
			app.Generation++
			raw, err := json.Marshal(app)
			if err != nil {
				return nil, lines, err
			}
			line, err := json.Marshal(&metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: raw}})
			if err != nil {
				return nil, lines, err
			}
			lines[v] = append(lines[v], append(line, '\n'))
		}
	}
	list, err := json.Marshal(&l)
	return list, lines, err
}

// benchLines is the body of a watch: the lines the benchmark sends, up to
// 1024 waiting, as a buffered fake watch holds events.
type benchLines struct {
	lines chan []byte
	line  []byte // the rest of the line being read
	done  chan struct{}
	once  sync.Once
}

func newBenchLines() *benchLines {
	return &benchLines{lines: make(chan []byte, 1024), done: make(chan struct{})}
}

func (l *benchLines) Read(p []byte) (int, error) {
	if len(l.line) == 0 {
		select {
		case l.line = <-l.lines:
		case <-l.done:
			return 0, io.EOF
		}
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}

func (l *benchLines) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// benchJSONUpdateInformers is ours: the list and the watch decoded by the
// library's JSON decoder as a Factory's informer of the type decodes them.
func benchJSONUpdateInformers(list []byte, stream io.ReadCloser, onUpdate func()) (func(), error) {
	lw, err := informers.JSONListWatch[*bf.Application](
		func(metav1.ListOptions) ([]byte, error) { return list, nil },
		func() io.ReadCloser { return stream })
	if err != nil {
		return nil, err
	}
	lw.DisableWatchList = true
	inf, err := informers.NewInformer(lw, informers.Options[*bf.Application]{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddHandler(informers.HandlerFuncs[*bf.Application]{OnUpdate: func(_, _ *bf.Application) { onUpdate() }}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			panic(fmt.Sprintf("benchmark: informer: %v", err))
		}
	}, nil
}

// benchUpdateJSON runs fixture=json of BenchmarkUpdate for impl: one op
// is one event, and the loop waits, timed, until the handler has seen
// every event. cpu-ns/op is the CPU time of the whole process per event.
func benchUpdateJSON(b *testing.B, impl benchJSONUpdate, list []byte, lines [2][][]byte) {
	stream := newBenchLines()
	defer stream.Close()
	var updates atomic.Int64
	stop, err := impl.start(list, stream, func() { updates.Add(1) })
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	// Synced once the watch delivers: one event of every object, untimed,
	// so that the loop starts from a warm cache and decoder.
	for i := range lines[0] {
		stream.lines <- lines[0][i]
	}
	benchWait(b, func() bool { return updates.Load() >= int64(len(lines[0])) })
	updates.Store(0)

	rng := rand.New(rand.NewPCG(1, 2))
	version := make([]uint8, len(lines[0]))
	for i := range version {
		version[i] = 1
	}
	b.SetBytes(int64(len(lines[0][0])))
	b.ReportAllocs()
	cpu := benchProcessCPU(b)
	for b.Loop() {
		k := rng.IntN(len(version))
		stream.lines <- lines[version[k]][k]
		version[k] ^= 1
	}
	b.StartTimer() // the events still in flight are part of the work
	benchWait(b, func() bool { return updates.Load() >= int64(b.N) })
	b.StopTimer()
	// The process's CPU per event: steadier than the time on a shared
	// machine.
	b.ReportMetric(float64(benchProcessCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}
