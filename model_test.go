package informers_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informers"
)

// TestModel is a randomized model test. Each sequence drives an
// informerstest.Source through random adds, updates, deletes,
// deletes-and-recreates (a new UID under the same name), compactions (410),
// clean watch closes, failing lists and watches, lists held between their
// pages, bookmarks and handlers added late, on sources that start empty or
// not, over all namespaces or one, with watch-list streaming or list and
// watch, with or without paging, and without a transform or with one that
// rewrites metadata (strips managed fields, adds annotations, moves or
// clears the resource version) or fails on some objects.
//
// After each quiesce (faults cleared, the informer past a fence, every
// handler idle; see quiesce) it checks that the lister matches the source
// by name, UID and version, that the lister's namespaces, Get and index
// agree with its list, and that every handler's mirror, built from its
// events alone, matches the lister. Each handler checks its events as they
// come: no add of a key it holds, no update or delete of one it does not,
// an update's old object is what it holds, an update is newer, a
// final-state-unknown delete carries what it holds, versions never go back
// per UID and a deleted UID never comes back. The informer's version must
// reach the last change without bookmarks, and a sequence must not make
// thousands of requests (a retry loop without backoff).
//
// The semantics are this library's, not client-go's: a relist does not
// notify unchanged objects; an object deleted and recreated while the
// informer was away arrives as a final-state-unknown delete and an add; an
// Added event for a version already cached is skipped; a failing transform
// keeps the last good state on an update, caches nothing on an add, and
// deletes by key on a delete.
//
// Each sequence derives from its own seed, printed on failure with the
// command that replays it:
//
//	go test -run TestModel -model.seed=N -model.n=1 -model.trace -v
//
// The operations replay exactly; the informer's goroutines interleave with
// them differently from run to run.
var (
	modelSeed     = flag.Int64("model.seed", 0, "model test: base seed; 0 picks one at random (printed)")
	modelN        = flag.Int("model.n", 2000, "model test: number of sequences")
	modelTrace    = flag.Bool("model.trace", false, "model test: log every sequence's operations")
	modelParallel = flag.Int("model.parallel", 4, "model test: sequences run at once")
)

// modelCounts counts what the sequences did, to show what the model
// covers.
type modelCounts struct {
	sequences, quiesces                          atomic.Int64
	adds, initialAdds, updates, deletes, unknown atomic.Int64
	transformErrors                              atomic.Int64
	listPages, watchLists, watches               atomic.Int64
	maxRequests                                  atomic.Int64 // in one sequence
}

var modelStats modelCounts

func (c *modelCounts) reset() {
	for _, n := range c.all() {
		n.Store(0)
	}
}

func (c *modelCounts) all() []*atomic.Int64 {
	return []*atomic.Int64{&c.sequences, &c.quiesces, &c.adds, &c.initialAdds, &c.updates, &c.deletes, &c.unknown,
		&c.transformErrors, &c.listPages, &c.watchLists, &c.watches, &c.maxRequests}
}

func (c *modelCounts) String() string {
	return fmt.Sprintf("%d sequences, %d quiesces; handlers got %d adds (%d initial), %d updates, %d deletes (%d final state unknown); "+
		"%d transform errors; the source served %d list pages, %d watch-list streams, %d watches, at most %d requests in one sequence",
		c.sequences.Load(), c.quiesces.Load(), c.adds.Load(), c.initialAdds.Load(), c.updates.Load(), c.deletes.Load(), c.unknown.Load(),
		c.transformErrors.Load(), c.listPages.Load(), c.watchLists.Load(), c.watches.Load(), c.maxRequests.Load())
}

// modelMaxRequests bounds the requests of one sequence. The informer
// backs off a millisecond between failed requests, and faults last from
// their operation to the next quiesce, at most a few hundred milliseconds:
// sequences make fewer than a hundred requests. Thousands mean a retry
// loop without backoff.
const modelMaxRequests = 2000

// modelQuiesceTimeout bounds the wait for the informer and its handlers to
// catch up with the source once faults are cleared.
const modelQuiesceTimeout = 10 * time.Second

func TestModel(t *testing.T) {
	n := *modelN
	if testing.Short() && !modelFlagSet("model.n") {
		n = 200
	}
	base := *modelSeed
	if base == 0 {
		base = time.Now().UnixNano() & (1<<63 - 1)
	}
	t.Logf("model: %d sequences from base seed %d (rerun them all with -model.seed=%d -model.n=%d)", n, base, base, n)

	modelStats.reset()
	par := max(*modelParallel, 1)
	seeds := make(chan int64)
	type failure struct {
		seed   int64
		report string
	}
	var (
		mu       sync.Mutex
		failures []failure
		ran      int
	)
	const maxFailures = 3 // then stop starting sequences
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				report, failed := runModelSequence(seed)
				mu.Lock()
				ran++
				if failed {
					failures = append(failures, failure{seed, report})
				}
				mu.Unlock()
				if *modelTrace && !failed {
					t.Log(report)
				}
			}
		}()
	}
	start := time.Now()
	for i := range n {
		mu.Lock()
		stop := len(failures) >= maxFailures
		mu.Unlock()
		if stop {
			break
		}
		seeds <- modelSequenceSeed(base, i)
	}
	close(seeds)
	wg.Wait()
	t.Logf("model: ran %d sequences in %v: %v", ran, time.Since(start).Round(time.Millisecond), &modelStats)
	for _, f := range failures {
		t.Errorf("model sequence with seed %d failed (base seed %d):\n%s\nreplay with: go test -run TestModel -model.seed=%d -model.n=1",
			f.seed, base, f.report, f.seed)
	}
}

func modelFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// modelSequenceSeed is the seed of sequence i: the base itself for the
// first, so that -model.seed=N -model.n=1 replays the sequence of seed N.
func modelSequenceSeed(base int64, i int) int64 {
	if i == 0 {
		return base
	}
	s := int64((uint64(base) + uint64(i)*0x9E3779B97F4A7C15) & (1<<63 - 1))
	if s == 0 {
		s = 1
	}
	return s
}

// modelT collects a sequence's failures for require and assert: FailNow
// ends the sequence's goroutine, as testing.T's does.
type modelT struct {
	mu   sync.Mutex
	errs []string
}

func (m *modelT) Errorf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *modelT) FailNow() { runtime.Goexit() }

func (m *modelT) failed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.errs) > 0
}

// runModelSequence runs the sequence of seed on its own goroutine and
// returns its report: its failures, if any, its configuration, its
// operations and every handler's events.
func runModelSequence(seed int64) (string, bool) {
	mt := &modelT{}
	r := &modelRun{t: mt, seed: seed}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run()
	}()
	<-done
	return r.report(), mt.failed()
}

// transformMode is the transform a sequence's informer runs.
type transformMode int

const (
	noTransform transformMode = iota
	// rewriteTransform strips managed fields and adds an annotation, on a
	// copy of the object.
	rewriteTransform
	// moveRVTransform strips managed fields and moves the resource version
	// into an annotation, in place: the cache holds no resource version,
	// yet the model still sees it.
	moveRVTransform
	// clearRVTransform clears the resource version in place, as
	// client-go's transform tests do. The model cannot see versions then:
	// it compares UIDs, presence and the gen label, which it changes with
	// every write and so stands in for the version.
	clearRVTransform
	// poisonTransform rewrites as rewriteTransform does, but fails on the
	// objects the model labels poisoned: it returns an error, or nil, or
	// panics. The informer then keeps the
	// last good state it holds (an update), holds nothing (an add), or
	// deletes by key (a delete): the lister holds, for a key whose current
	// state is poisoned, nothing or one of the key's earlier good states.
	poisonTransform
)

func (m transformMode) String() string {
	return [...]string{"none", "rewrite", "move-rv", "clear-rv", "poison"}[m]
}

const (
	modelAnnSeen = "model.kubetyped.io/seen"
	modelAnnRV   = "model.kubetyped.io/rv"
	modelLblGen  = "gen"
	modelLblCol  = "color"
	// modelLblPoison makes poisonTransform fail, in the way its value says.
	modelLblPoison = "poison"
	// modelLblFence labels the fence object, which the informer's label
	// selector excludes; see quiesce.
	modelLblFence = "model-fence"
)

var modelFence = types.NamespacedName{Namespace: "a", Name: "fence"}

var (
	modelColors = []string{"red", "green", "blue"}
	// A rename is no failure: the object is cached under its new key (see
	// TestTransformRenames).
	modelPoisons = []string{"error", "nil", "panic"}
)

// modelVersion is what the model compares of one object: its UID, its
// resource version (0 when the transform hides it) and its gen label.
type modelVersion struct {
	UID types.UID
	RV  uint64
	Gen uint64
}

func (v modelVersion) String() string {
	rv := "?"
	if v.RV != 0 {
		rv = strconv.FormatUint(v.RV, 10)
	}
	return fmt.Sprintf("%s@%s/g%d", v.UID, rv, v.Gen)
}

// modelRun is one sequence.
type modelRun struct {
	t    *modelT
	seed int64
	rng  *rand.Rand

	// configuration
	namespaces []string
	keys       []types.NamespacedName
	watchNS    string // the informer's namespace, "" for all
	transform  transformMode
	watchList  bool
	pageSize   int64
	lateAt     map[int]int // op index -> handlers to add before it

	src      *podSource
	inf      *informers.SharedInformer[*corev1.Pod]
	color    *informers.Index[*corev1.Pod]
	mirrors  []*modelMirror
	gen      uint64
	relevant uint64                                  // the source's version at the last change the informer can see
	good     map[types.NamespacedName][]modelVersion // every good state of each key, with poisonTransform
	pastZero bool                                    // the informer's version is past "0"; see quiesce
	pages    modelGate
	poisoned sync.Map // keys ever written poisoned: types.NamespacedName -> true
	faults   []string
	quiesced int

	errMu     sync.Mutex
	unexpErrs []string // errors other than failed requests

	traceMu sync.Mutex
	trace   []string
}

func (r *modelRun) logf(format string, args ...any) {
	r.traceMu.Lock()
	defer r.traceMu.Unlock()
	r.trace = append(r.trace, fmt.Sprintf(format, args...))
}

func (r *modelRun) report() string {
	var b strings.Builder
	r.t.mu.Lock()
	errs := slices.Clone(r.t.errs)
	r.t.mu.Unlock()
	if len(errs) > 0 {
		b.WriteString("failures:\n")
		for _, e := range errs {
			b.WriteString(indent(e, "  "))
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "sequence seed %d, operations:\n", r.seed)
	r.traceMu.Lock()
	for i, s := range r.trace {
		fmt.Fprintf(&b, "  %3d %s\n", i, s)
	}
	r.traceMu.Unlock()
	if len(errs) > 0 {
		for _, m := range r.mirrors {
			m.mu.Lock()
			fmt.Fprintf(&b, "handler %s events:\n", m.name)
			for i, e := range m.log {
				fmt.Fprintf(&b, "  %3d %s\n", i, e)
			}
			m.mu.Unlock()
		}
	}
	return b.String()
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// run configures, starts and drives the sequence. require failures end it
// through modelT.FailNow; the deferred stop still runs.
func (r *modelRun) run() {
	r.rng = rand.New(rand.NewPCG(uint64(r.seed), uint64(r.seed)^0x6d6f64656c))
	rng := r.rng

	// Configuration.
	r.namespaces = []string{"a"}
	if rng.IntN(2) == 0 {
		r.namespaces = append(r.namespaces, "b")
	}
	nkeys := 6 + rng.IntN(5)
	for i := range nkeys {
		ns := r.namespaces[i%len(r.namespaces)]
		r.keys = append(r.keys, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("p%d", i/len(r.namespaces))})
	}
	if len(r.namespaces) > 1 && rng.IntN(4) == 0 {
		r.watchNS = "a"
	}
	r.transform = transformMode(rng.IntN(5))
	r.watchList = rng.IntN(2) == 0
	if rng.IntN(3) == 0 {
		r.pageSize = int64(1 + rng.IntN(3))
	}
	nops := 10 + rng.IntN(31)
	handlers := 1 + rng.IntN(3)
	early := rng.IntN(handlers + 1)
	r.lateAt = map[int]int{}
	for range handlers - early {
		r.lateAt[rng.IntN(nops)]++
	}
	initialFault := rng.IntN(6) == 0

	r.src = newPodSource()
	r.src.RefuseWatchList(!r.watchList)
	r.logf("config: keys=%d namespaces=%v watch-namespace=%q transform=%s watch-list=%v page-size=%d ops=%d handlers: %d before run, late at %v",
		nkeys, r.namespaces, r.watchNS, r.transform, r.watchList, r.pageSize, nops, early, r.lateAt)

	// The source's state before the informer starts: empty, or some
	// objects with a history of updates and deletes.
	if rng.IntN(3) > 0 {
		for range 1 + rng.IntN(nkeys+4) {
			r.randomWrite()
		}
	}

	opts := informers.Options[*corev1.Pod]{
		Tuning: informers.Tuning{Backoff: informers.Set(fastBackoff), PageSize: informers.Set[int64](r.pageSize), OnError: informers.Set(func(err error) {
			var lw *informers.ListWatchError
			if errors.As(err, &lw) && lw.Op != "decode" {
				return // the faults the model injects
			}
			var te *informers.TransformError
			if errors.As(err, &te) && r.transform == poisonTransform {
				if _, ok := r.poisoned.Load(te.Key); ok {
					modelStats.transformErrors.Add(1)
					return
				}
			}
			r.errMu.Lock()
			r.unexpErrs = append(r.unexpErrs, err.Error())
			r.errMu.Unlock()
		})},
		LabelSelector: "!" + modelLblFence,
		Indexers: map[string]informers.IndexFunc[*corev1.Pod]{
			"color": func(p *corev1.Pod) []string { return []string{p.Labels[modelLblCol]} },
		},
		Transform: r.transformFunc(),
	}
	lw := r.src.ListWatch(r.watchNS)
	list := lw.ListFunc
	lw.ListFunc = func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
		if opts.Continue != "" {
			r.pages.wait(ctx)
		}
		return list(ctx, opts)
	}
	inf, err := informers.NewInformer(lw, opts)
	require.NoError(r.t, err)
	r.inf = inf
	var ok bool
	r.color, ok = inf.Index("color")
	require.True(r.t, ok)
	for range early {
		r.addHandler("before run")
	}
	if initialFault {
		r.failList()
	}

	// Listed at a version past "0", the informer never watches from "0".
	r.pastZero = r.src.ResourceVersion() != "0"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		r.pages.release()
		cancel()
		calls := r.src.Calls()
		modelStats.sequences.Add(1)
		modelStats.listPages.Add(int64(calls.List))
		modelStats.watchLists.Add(int64(calls.WatchList))
		modelStats.watches.Add(int64(calls.Watch))
		for n := int64(calls.List + calls.WatchList + calls.Watch); ; {
			m := modelStats.maxRequests.Load()
			if n <= m || modelStats.maxRequests.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case err := <-done:
			if err != nil {
				r.t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			r.t.Errorf("Run did not return 10s after its context ended")
		}
		for _, m := range r.mirrors {
			select {
			case <-m.reg.Done():
			case <-time.After(10 * time.Second):
				r.t.Errorf("handler %s not done 10s after Run returned", m.name)
			}
		}
	}()

	if !initialFault && rng.IntN(2) == 0 {
		r.catchUp()
	}
	for i := range nops {
		for range r.lateAt[i] {
			r.addHandler("late")
		}
		r.step()
	}
	r.quiesce()
}

// transformFunc returns the sequence's transform, or nil.
func (r *modelRun) transformFunc() informers.TransformFunc[*corev1.Pod] {
	switch r.transform {
	case rewriteTransform:
		return informers.Chain(informers.StripManagedFields[*corev1.Pod](), func(p *corev1.Pod) (*corev1.Pod, error) {
			c := p.DeepCopy()
			c.Annotations = map[string]string{modelAnnSeen: "true"}
			return c, nil
		})
	case moveRVTransform:
		return func(p *corev1.Pod) (*corev1.Pod, error) {
			p.ManagedFields = nil
			ann := maps.Clone(p.Annotations)
			if ann == nil {
				ann = map[string]string{}
			}
			ann[modelAnnRV] = p.ResourceVersion
			p.Annotations = ann
			p.ResourceVersion = ""
			return p, nil
		}
	case clearRVTransform:
		return func(p *corev1.Pod) (*corev1.Pod, error) {
			p.ResourceVersion = ""
			return p, nil
		}
	case poisonTransform:
		return func(p *corev1.Pod) (*corev1.Pod, error) {
			switch p.Labels[modelLblPoison] {
			case "error":
				return p, errors.New("model: poisoned")
			case "nil":
				return nil, nil
			case "panic":
				panic("model: poisoned")
			}
			p.ManagedFields = nil
			p.Annotations = map[string]string{modelAnnSeen: "true"}
			return p, nil
		}
	}
	return nil
}

// cachedVersion returns the version of an object the informer holds or
// handed to a handler, and what is wrong with it if the transform did not
// run on it.
func (r *modelRun) cachedVersion(p *corev1.Pod) (modelVersion, string) {
	v := modelVersion{UID: p.UID}
	gen, err := strconv.ParseUint(p.Labels[modelLblGen], 10, 64)
	if err != nil {
		return v, fmt.Sprintf("bad gen label %q", p.Labels[modelLblGen])
	}
	v.Gen = gen
	rv := p.ResourceVersion
	var problem string
	switch r.transform {
	case noTransform:
		if len(p.ManagedFields) != 1 {
			problem = "managed fields lost without a transform"
		}
	case rewriteTransform, poisonTransform:
		if p.ManagedFields != nil || p.Annotations[modelAnnSeen] != "true" {
			problem = "not transformed (managed fields or annotation)"
		}
		if _, poisoned := p.Labels[modelLblPoison]; poisoned {
			problem = "a poisoned object, which the transform refuses"
		}
	case moveRVTransform:
		if p.ManagedFields != nil || p.ResourceVersion != "" {
			problem = "not transformed (managed fields or resource version)"
		}
		rv = p.Annotations[modelAnnRV]
	case clearRVTransform:
		if p.ResourceVersion != "" {
			problem = "not transformed (resource version)"
		}
		return v, problem
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || n == 0 {
		return v, strings.TrimPrefix(problem+"; bad resource version "+strconv.Quote(rv), "; ")
	}
	v.RV = n
	return v, problem
}

// sourceVersion returns the version the model expects the informer to
// hold for p, an object of the source.
func (r *modelRun) sourceVersion(p *corev1.Pod) modelVersion {
	gen, _ := strconv.ParseUint(p.Labels[modelLblGen], 10, 64)
	v := modelVersion{UID: p.UID, Gen: gen}
	if r.transform != clearRVTransform {
		v.RV, _ = strconv.ParseUint(p.ResourceVersion, 10, 64)
	}
	return v
}

// visible reports whether the informer watches key's namespace.
func (r *modelRun) visible(key types.NamespacedName) bool {
	return r.watchNS == "" || key.Namespace == r.watchNS
}

// present returns the keys the source holds, in the model's order.
func (r *modelRun) present() (in, out []types.NamespacedName) {
	have := map[types.NamespacedName]bool{}
	for _, p := range r.src.Objects() {
		have[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = true
	}
	for _, k := range r.keys {
		if have[k] {
			in = append(in, k)
		} else {
			out = append(out, k)
		}
	}
	return in, out
}

func (r *modelRun) newPod(key types.NamespacedName) *corev1.Pod {
	r.gen++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: key.Namespace,
		Name:      key.Name,
		Labels: map[string]string{
			modelLblGen: strconv.FormatUint(r.gen, 10),
			modelLblCol: modelColors[r.rng.IntN(len(modelColors))],
		},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "model", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	if r.transform == poisonTransform && r.rng.IntN(4) == 0 {
		p.Labels[modelLblPoison] = modelPoisons[r.rng.IntN(len(modelPoisons))]
		r.poisoned.Store(key, true)
	}
	return p
}

// describe returns what the trace says of a write of p.
func describe(p *corev1.Pod) string {
	s := fmt.Sprintf("gen=%s color=%s", p.Labels[modelLblGen], p.Labels[modelLblCol])
	if v, ok := p.Labels[modelLblPoison]; ok {
		s += " poison=" + v
	}
	return s
}

// wrote records a write of p (nil for a delete) under key at version rv.
func (r *modelRun) wrote(key types.NamespacedName, p *corev1.Pod, rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(r.t, err)
	if r.visible(key) {
		r.relevant = n
	}
	if p == nil {
		return
	}
	if _, poisoned := p.Labels[modelLblPoison]; poisoned {
		return
	}
	var uid types.UID
	for _, o := range r.src.Objects() {
		if o.Namespace == key.Namespace && o.Name == key.Name {
			uid = o.UID
		}
	}
	gen, err := strconv.ParseUint(p.Labels[modelLblGen], 10, 64)
	require.NoError(r.t, err)
	if r.good == nil {
		r.good = map[types.NamespacedName][]modelVersion{}
	}
	r.good[key] = append(r.good[key], modelVersion{UID: uid, RV: n, Gen: gen})
}

func (r *modelRun) add(key types.NamespacedName)    { r.put(key, "add", r.src.Add) }
func (r *modelRun) update(key types.NamespacedName) { r.put(key, "update", r.src.Update) }

// put writes a new pod under key with write, the source's Add or Update.
func (r *modelRun) put(key types.NamespacedName, verb string, write func(*corev1.Pod) (string, error)) {
	p := r.newPod(key)
	rv, err := write(p)
	require.NoError(r.t, err)
	r.wrote(key, p, rv)
	r.logf("%s %s rv=%s %s", verb, key, rv, describe(p))
}

func (r *modelRun) delete(key types.NamespacedName) {
	rv, err := r.src.Delete(key.Namespace, key.Name)
	require.NoError(r.t, err)
	r.wrote(key, nil, rv)
	r.logf("delete %s rv=%s", key, rv)
}

// randomWrite adds, updates or deletes a random key: how the source's
// state before the informer starts is made.
func (r *modelRun) randomWrite() {
	in, out := r.present()
	switch {
	case len(out) > 0 && (len(in) == 0 || r.rng.IntN(3) < 2):
		r.add(out[r.rng.IntN(len(out))])
	case r.rng.IntN(3) == 0:
		r.delete(in[r.rng.IntN(len(in))])
	default:
		r.update(in[r.rng.IntN(len(in))])
	}
}

func (r *modelRun) addHandler(when string) {
	m := &modelMirror{
		run:     r,
		name:    fmt.Sprintf("h%d", len(r.mirrors)),
		objs:    map[types.NamespacedName]modelVersion{},
		lastUID: map[types.UID]modelVersion{},
		gone:    map[types.UID]bool{},
	}
	if r.rng.IntN(3) == 0 {
		m.lag = time.Duration(20+r.rng.IntN(200)) * time.Microsecond
	}
	reg, err := r.inf.AddHandlerWith(m, informers.HandlerOptions{Name: m.name})
	require.NoError(r.t, err)
	m.reg = reg
	r.mirrors = append(r.mirrors, m)
	r.logf("add handler %s (%s), taking %v per event", m.name, when, m.lag)
}

// modelGate holds the informer's list requests for later pages, so that
// the model's operations happen between the pages of a list.
type modelGate struct {
	mu     sync.Mutex
	opened chan struct{} // nil while open
}

func (g *modelGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened == nil {
		g.opened = make(chan struct{})
	}
}

// release opens the gate and reports whether it was held.
func (g *modelGate) release() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened == nil {
		return false
	}
	close(g.opened)
	g.opened = nil
	return true
}

func (g *modelGate) wait(ctx context.Context) {
	g.mu.Lock()
	opened := g.opened
	g.mu.Unlock()
	if opened != nil {
		select {
		case <-opened:
		case <-ctx.Done():
		}
	}
}

// modelErr returns one of the errors the model fails requests with.
func (r *modelRun) modelErr(expired bool) error {
	errs := []error{
		apierrors.NewServiceUnavailable("model: down"),
		apierrors.NewInternalError(errors.New("model: internal")),
		apierrors.NewTooManyRequests("model: slow down", 1),
	}
	if expired {
		errs = append(errs, apierrors.NewResourceExpired("model: expired"))
	}
	return errs[r.rng.IntN(len(errs))]
}

func (r *modelRun) failList() {
	err := r.modelErr(true)
	r.src.FailList(err)
	r.faults = append(r.faults, "list")
	r.logf("fail lists: %v", err)
}

// step applies one random operation.
func (r *modelRun) step() {
	in, out := r.present()
	type op struct {
		weight int
		do     func()
	}
	ops := []op{
		{20 * min(len(out), 1), func() { r.add(out[r.rng.IntN(len(out))]) }},
		{25 * min(len(in), 1), func() { r.update(in[r.rng.IntN(len(in))]) }},
		{10 * min(len(in), 1), func() { r.delete(in[r.rng.IntN(len(in))]) }},
		{8 * min(len(in), 1), func() {
			key := in[r.rng.IntN(len(in))]
			r.logf("recreate %s:", key)
			r.delete(key)
			r.add(key)
		}},
		{4, func() {
			r.src.Compact()
			r.logf("compact at %s", r.src.ResourceVersion())
		}},
		{5, func() {
			r.src.CloseWatches()
			r.logf("close watches")
		}},
		{3, r.failList},
		{4, func() {
			// Fail new watches; usually also end the open ones, so that
			// what follows happens while the informer is disconnected.
			// 429 makes it retry from its version, others relist.
			err := r.modelErr(false)
			r.src.FailWatch(err)
			r.faults = append(r.faults, "watch")
			closed := r.rng.IntN(4) > 0
			if closed {
				r.src.CloseWatches()
			}
			r.logf("fail watches: %v (open ones closed: %v)", err, closed)
		}},
		{3 * min(len(r.faults), 1), func() {
			r.src.FailList(nil)
			r.src.FailWatch(nil)
			r.faults = nil
			r.logf("clear faults")
		}},
		{4, func() {
			r.src.Bookmark()
			r.logf("bookmark at %s", r.src.ResourceVersion())
		}},
		{8, r.quiesce},
		{4 * min(int(r.pageSize), 1), func() {
			r.pages.hold()
			r.logf("hold lists before their next page")
		}},
		{4 * min(int(r.pageSize), 1), func() {
			if r.pages.release() {
				r.logf("release lists")
			}
		}},
		{10, r.catchUp},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := r.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			o.do()
			return
		}
		n -= o.weight
	}
}

// catchUp lets the informer run until it has caught up with the source
// and delivered everything, or a few milliseconds pass: without it, most
// operations would happen before the informer reacts to the ones before
// them. Faults stay, and nothing is checked: it only varies the timing.
func (r *modelRun) catchUp() {
	deadline := time.Now().Add(10 * time.Millisecond)
	for !r.caughtUp(r.relevant) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	r.logf("let the informer catch up: %s", r.state(r.relevant))
}

// informerVersion returns the informer's version as a number, 0 if it has
// none.
func (r *modelRun) informerVersion() uint64 {
	rv, _ := strconv.ParseUint(r.inf.LastSyncResourceVersion(), 10, 64)
	return rv
}

// caughtUp reports whether the informer is at or past want, the last
// change it can see, and every handler has nothing queued.
func (r *modelRun) caughtUp(want uint64) bool {
	rv, err := strconv.ParseUint(r.inf.LastSyncResourceVersion(), 10, 64)
	if err != nil || rv < want {
		return false
	}
	for _, m := range r.mirrors {
		if m.reg.Backlog() != 0 {
			return false
		}
	}
	return true
}

// quiesce clears the faults, waits until the informer has caught up with
// the source and every handler has been delivered all its events, then
// compares the source, the lister and every handler's mirror.
//
// Caught up means at or past a fence: a write the informer does not see
// (its label selector excludes the fence object), followed by bookmarks,
// which the source queues behind everything it sent before, and which
// carry the fence's version. The informer's version alone is not enough:
// one that synced an empty source at version "0" watches from "0", and
// gets the current objects as Added events in no version order, so its
// version runs ahead of its cache until the last of them; and one that
// watches from "0" after an object was added and deleted, or that watches
// one namespace, hears nothing that would move its version. A server sends
// bookmarks every minute or so; quiesce sends one every few milliseconds
// while it waits. A bookmark also turns a lost event into a difference the
// comparison shows, rather than a wait that times out.
//
// First, though, the informer's version must reach that of the last change
// it can see without any bookmark: it advances with every event. That
// holds once it is past "0", which it is once it listed a source whose
// version was past "0": before, it may watch from "0" and miss an object
// added and deleted meanwhile without harm.
func (r *modelRun) quiesce() {
	r.src.FailList(nil)
	r.src.FailWatch(nil)
	r.faults = nil
	r.pages.release()
	r.quiesced++
	modelStats.quiesces.Add(1)
	r.pastZero = r.pastZero || r.informerVersion() > 0
	if r.pastZero {
		deadline := time.Now().Add(modelQuiesceTimeout)
		for r.informerVersion() < r.relevant {
			if time.Now().After(deadline) {
				r.t.Errorf("quiesce %d: the informer's version did not reach the last change it can see, %d, in %v: %s",
					r.quiesced, r.relevant, modelQuiesceTimeout, r.state(r.relevant))
				r.t.FailNow()
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	fence := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: modelFence.Namespace,
		Name:      modelFence.Name,
		Labels:    map[string]string{modelLblFence: strconv.Itoa(r.quiesced)},
	}}
	write := r.src.Update
	if r.quiesced == 1 {
		write = r.src.Add
	}
	rv, err := write(fence)
	require.NoError(r.t, err)
	want, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(r.t, err)
	start := time.Now()
	deadline := start.Add(modelQuiesceTimeout)
	var nextBookmark time.Time
	bookmarks := 0
	for !r.settled(want) {
		now := time.Now()
		if now.After(deadline) {
			r.t.Errorf("quiesce %d: not settled after %v and %d bookmarks: %s", r.quiesced, modelQuiesceTimeout, bookmarks, r.state(want))
			r.t.FailNow()
		}
		if now.After(nextBookmark) {
			r.src.Bookmark()
			bookmarks++
			nextBookmark = now.Add(2 * time.Millisecond)
		}
		time.Sleep(200 * time.Microsecond)
	}
	r.logf("quiesce %d, fence at %d: %s", r.quiesced, want, r.state(want))
	r.compare()
}

// settled reports whether the informer has synced, is at or past want,
// the last change it can see, with no failed request pending, and every
// handler has synced and has nothing queued. The reflector queues the
// notifications of a change before it publishes the change's version, so
// a backlog of 0 read after the version means they have all been
// delivered.
func (r *modelRun) settled(want uint64) bool {
	if !r.inf.HasSynced() || !r.caughtUp(want) {
		return false
	}
	for _, m := range r.mirrors {
		if !m.reg.HasSynced() {
			return false
		}
	}
	return true
}

func (r *modelRun) state(want uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "source at %s (waiting for %d), informer at %q, synced %v, last error %v, watches %d, calls %+v",
		r.src.ResourceVersion(), want, r.inf.LastSyncResourceVersion(), r.inf.HasSynced(), r.inf.LastError(), r.src.Watchers(), r.src.Calls())
	for _, m := range r.mirrors {
		fmt.Fprintf(&b, "; %s synced %v backlog %d", m.name, m.reg.HasSynced(), m.reg.Backlog())
	}
	return b.String()
}

// compare checks lister == source and every mirror == lister.
func (r *modelRun) compare() {
	t := r.t
	at := fmt.Sprintf("quiesce %d", r.quiesced)

	lister := r.inf.Lister()
	got := map[types.NamespacedName]modelVersion{}
	gotColor := map[string][]string{}
	for _, p := range lister.List(nil) {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		_, dup := got[key]
		require.False(t, dup, "%s: lister lists %s twice", at, key)
		v, problem := r.cachedVersion(p)
		require.Empty(t, problem, "%s: cached %s", at, key)
		got[key] = v
		gotColor[p.Labels[modelLblCol]] = append(gotColor[p.Labels[modelLblCol]], key.String())
	}

	// lister == source
	want := map[types.NamespacedName]modelVersion{}
	for _, p := range r.src.Objects() {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if _, fence := p.Labels[modelLblFence]; fence || !r.visible(key) {
			continue
		}
		v := r.sourceVersion(p)
		if _, poisoned := p.Labels[modelLblPoison]; poisoned {
			// See poisonTransform: nothing, or an earlier good state.
			if held, ok := got[key]; ok {
				require.True(t, held.Gen < v.Gen && slices.Contains(r.good[key], held),
					"%s: %s, poisoned at %s, holds %s, not one of its earlier good states %v", at, key, v, held, r.good[key])
				want[key] = held
			}
			continue
		}
		want[key] = v
	}
	require.Equal(t, want, got, "%s: lister == source", at)

	// The lister's other views agree with its list.
	require.Equal(t, len(got), lister.Len(), "%s: lister Len", at)
	for _, ns := range r.namespaces {
		var wantNS, gotNS []string
		for key := range got {
			if key.Namespace == ns {
				wantNS = append(wantNS, key.String())
			}
		}
		for _, p := range lister.Namespace(ns).List(nil) {
			gotNS = append(gotNS, p.Namespace+"/"+p.Name)
		}
		require.ElementsMatch(t, wantNS, gotNS, "%s: namespace %s lister", at, ns)
		require.Equal(t, len(wantNS), lister.Namespace(ns).Len(), "%s: namespace %s Len", at, ns)
	}
	for _, key := range r.keys {
		p, err := lister.Namespace(key.Namespace).Get(key.Name)
		if v, ok := got[key]; ok {
			require.NoError(t, err, "%s: Get %s", at, key)
			gv, _ := r.cachedVersion(p)
			require.Equal(t, v, gv, "%s: Get %s", at, key)
		} else {
			require.True(t, apierrors.IsNotFound(err), "%s: Get %s of an absent object: %v", at, key, err)
		}
	}
	for _, c := range modelColors {
		var inIndex []string
		for _, p := range r.color.List(c) {
			inIndex = append(inIndex, p.Namespace+"/"+p.Name)
		}
		require.ElementsMatch(t, gotColor[c], inIndex, "%s: color index %s", at, c)
	}

	calls := r.src.Calls()
	require.LessOrEqual(t, calls.List+calls.WatchList+calls.Watch, modelMaxRequests,
		"%s: a request storm: %+v; the informer retries without backing off", at, calls)

	r.errMu.Lock()
	unexp := slices.Clone(r.unexpErrs)
	r.errMu.Unlock()
	require.Empty(t, unexp, "%s: unexpected errors", at)

	live := map[types.UID]string{}
	for _, p := range r.src.Objects() {
		live[p.UID] = p.Namespace + "/" + p.Name
	}
	for _, m := range r.mirrors {
		mirror, violations, gone := m.snapshot()
		require.Empty(t, violations, "%s: handler %s event invariants", at, m.name)
		require.Equal(t, got, mirror, "%s: handler %s mirror == lister", at, m.name)
		for uid := range gone {
			_, alive := live[uid]
			require.False(t, alive, "%s: handler %s got a delete of %s, which the source still holds as %s", at, m.name, uid, live[uid])
		}
	}
}

// modelMirror is a handler that rebuilds the cache from its events alone,
// checking each event against what it holds.
type modelMirror struct {
	run  *modelRun
	name string
	reg  *informers.Registration[*corev1.Pod]
	// lag is how long the handler takes per event: some handlers are
	// slower than the informer, so that their queue grows and events
	// reach them while others have caught up. Not synchronisation.
	lag time.Duration

	mu         sync.Mutex
	objs       map[types.NamespacedName]modelVersion
	lastUID    map[types.UID]modelVersion // the last version seen of every UID, deleted ones included
	gone       map[types.UID]bool         // UIDs seen deleted
	live       bool                       // an add outside the initial state was seen
	violations []string
	log        []string
}

func (m *modelMirror) snapshot() (objs map[types.NamespacedName]modelVersion, violations []string, gone map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objs), slices.Clone(m.violations), maps.Clone(m.gone)
}

// violate records a broken invariant; the caller holds mu.
func (m *modelMirror) violate(format string, args ...any) {
	msg := fmt.Sprintf("event %d: ", len(m.log)-1) + fmt.Sprintf(format, args...)
	m.violations = append(m.violations, msg)
	m.log[len(m.log)-1] += "  <-- " + fmt.Sprintf(format, args...)
}

// version returns obj's version, recording a violation if the transform
// did not run on it.
func (m *modelMirror) version(what string, obj *corev1.Pod) modelVersion {
	v, problem := m.run.cachedVersion(obj)
	if problem != "" {
		m.violate("%s object: %s", what, problem)
	}
	return v
}

// goesBack reports whether v is older than the last version seen of its
// UID.
func (m *modelMirror) goesBack(v modelVersion) (modelVersion, bool) {
	last, ok := m.lastUID[v.UID]
	return last, ok && (v.RV < last.RV || v.Gen < last.Gen)
}

func (m *modelMirror) HandleAdd(obj *corev1.Pod, initial bool) {
	time.Sleep(m.lag)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	v, problem := m.run.cachedVersion(obj)
	m.log = append(m.log, fmt.Sprintf("add %s %s initial=%v", key, v, initial))
	if problem != "" {
		m.violate("added object: %s", problem)
	}
	if initial && m.live {
		m.violate("initial add after a live add")
	}
	m.live = m.live || !initial
	modelStats.adds.Add(1)
	if initial {
		modelStats.initialAdds.Add(1)
	}
	if cur, ok := m.objs[key]; ok {
		m.violate("add of a present key (holds %s)", cur)
	}
	if m.gone[v.UID] {
		m.violate("add of a UID deleted before")
	}
	if last, back := m.goesBack(v); back {
		m.violate("version goes back from %s", last)
	}
	m.objs[key] = v
	m.lastUID[v.UID] = v
}

func (m *modelMirror) HandleUpdate(oldObj, newObj *corev1.Pod) {
	time.Sleep(m.lag)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: newObj.Namespace, Name: newObj.Name}
	ov, problem := m.run.cachedVersion(oldObj)
	nv, problem2 := m.run.cachedVersion(newObj)
	m.log = append(m.log, fmt.Sprintf("update %s %s -> %s", key, ov, nv))
	modelStats.updates.Add(1)
	if problem != "" || problem2 != "" {
		m.violate("updated objects: %q %q", problem, problem2)
	}
	if oldKey := (types.NamespacedName{Namespace: oldObj.Namespace, Name: oldObj.Name}); oldKey != key {
		m.violate("old object is %s", oldKey)
	}
	cur, ok := m.objs[key]
	switch {
	case !ok:
		m.violate("update of an absent key")
	case cur != ov:
		m.violate("old object is not what the handler holds (%s)", cur)
	}
	if nv.UID != ov.UID {
		m.violate("update changes the UID")
	}
	// Every update is a change on the server: its version and gen are new.
	if nv.Gen <= ov.Gen || nv.RV != 0 && nv.RV <= ov.RV {
		m.violate("update to a version not newer")
	}
	if last, back := m.goesBack(nv); back {
		m.violate("version goes back from %s", last)
	}
	m.objs[key] = nv
	m.lastUID[nv.UID] = nv
}

func (m *modelMirror) HandleDelete(d informers.Deleted[*corev1.Pod]) {
	time.Sleep(m.lag)
	m.mu.Lock()
	defer m.mu.Unlock()
	v, problem := m.run.cachedVersion(d.Object)
	m.log = append(m.log, fmt.Sprintf("delete %s %s unknown=%v", d.Key, v, d.FinalStateUnknown))
	modelStats.deletes.Add(1)
	if d.FinalStateUnknown {
		modelStats.unknown.Add(1)
	}
	if problem != "" {
		m.violate("deleted object: %s", problem)
	}
	if objKey := (types.NamespacedName{Namespace: d.Object.Namespace, Name: d.Object.Name}); objKey != d.Key {
		m.violate("object is %s", objKey)
	}
	cur, ok := m.objs[d.Key]
	switch {
	case !ok:
		m.violate("delete of an absent key")
	case v.UID != cur.UID:
		m.violate("delete of another UID than held (%s)", cur)
	case d.FinalStateUnknown && v != cur:
		// The last state the cache held, which the handler holds too.
		m.violate("final-state-unknown delete does not carry the held state (%s)", cur)
	case !d.FinalStateUnknown && (v.Gen != cur.Gen || v.RV != 0 && v.RV <= cur.RV) &&
		!(m.run.transform == poisonTransform && v == cur):
		// The server's final state: what the handler holds, at the
		// deletion's newer version; or, if the transform refused the
		// final state, the last state the cache held.
		m.violate("delete seen on the watch does not follow the held state (%s)", cur)
	}
	if last, back := m.goesBack(v); back {
		m.violate("version goes back from %s", last)
	}
	delete(m.objs, d.Key)
	m.gone[v.UID] = true
	m.lastUID[v.UID] = v
}
