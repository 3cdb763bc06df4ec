package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Each implementation runs in a child process of its own, the command
// itself started again with the hidden flag -child=<implementation>, so
// that its peak RSS, CPU and heap are its own and none inherits the
// memory of the one before. The parent passes the rest as JSON in the
// environment variable childConfigEnv; the child writes its measurement as
// one line of JSON on its stdout, and its logs go to the parent's stderr.
//
// The child waits for a line on its stdin before it does anything
// measured: by then the parent has moved it into its cgroup, if the limit
// is enforced by one, so that everything it allocates is charged there.

// childConfigEnv is the environment variable holding a child's
// childConfig.
const childConfigEnv = "COLDSTART_CHILD_CONFIG"

// childConfig is what a child needs besides its implementation's name.
type childConfig struct {
	Kubeconfig string       `json:"kubeconfig,omitempty"`
	Context    string       `json:"context,omitempty"`
	Resource   resourceSpec `json:"resource"`
	QPS        float32      `json:"qps"`
	Burst      int          `json:"burst"`
	// Limit is the memory limit in bytes, 0 for none; SelfLimit says that
	// the child enforces it itself.
	Limit     int64         `json:"limit,omitempty"`
	SelfLimit bool          `json:"selfLimit,omitempty"`
	Timeout   time.Duration `json:"timeout"`
}

// childProgressInterval is how often the parent says how a child is
// doing, and childSampleInterval how often it reads the child's peak RSS.
const (
	childProgressInterval = 5 * time.Second
	childSampleInterval   = 50 * time.Millisecond
)

// childStopTimeout bounds how long a child waits for its cache to stop
// once it has written its measurement.
const childStopTimeout = 30 * time.Second

// measureInChild runs implementation im in a child process configured by
// cc, enforcing the limit by enf, and returns what the child measured,
// completed from its rusage. An implementation that fails or goes over
// the limit is a measurement with that outcome; the error is for a child
// that could not be run at all.
func measureInChild(ctx context.Context, im implementation, cc childConfig, enf *enforcer, stderr io.Writer) (measurement, error) {
	exe, err := os.Executable()
	if err != nil {
		return measurement{}, fmt.Errorf("finding this command's executable to run it again: %w", err)
	}
	config, err := json.Marshal(cc)
	if err != nil {
		return measurement{}, err
	}
	cg, err := enf.cgroup(im.name)
	if err != nil {
		return measurement{}, err
	}
	if cg != nil {
		defer cg.remove()
	}

	cmd := exec.CommandContext(ctx, exe, "-"+childFlag+"="+im.name)
	cmd.Env = append(os.Environ(), childConfigEnv+"="+string(config))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	goAhead, err := cmd.StdinPipe()
	if err != nil {
		return measurement{}, err
	}
	if err := cmd.Start(); err != nil {
		return measurement{}, fmt.Errorf("starting the child process: %w", err)
	}
	started := time.Now()
	if cg != nil {
		if err := cg.add(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return measurement{}, err
		}
	}
	_, err = io.WriteString(goAhead, "go\n")
	goAhead.Close()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return measurement{}, fmt.Errorf("starting the child's measurement: %w", err)
	}

	watchDone := make(chan struct{})
	var sampledPeak uint64
	var watchWG sync.WaitGroup
	watchWG.Go(func() { sampledPeak = watchChild(im.name, cmd.Process.Pid, watchDone, stderr) })
	waitErr := cmd.Wait()
	close(watchDone)
	watchWG.Wait()

	// The child's rusage has its CPU time, but not its peak RSS: ru_maxrss
	// counts the parent's memory too, which the child shared until it
	// started the command again.
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = rusageCPU(ru)
	}
	m, ok := lastMeasurement(out.Bytes())
	if ok {
		if m.Outcome != synced {
			m.CPU = cpu // its whole life's, having no sync to measure
		}
		return m, nil
	}
	// The child died before it could say how it did.
	m = measurement{Implementation: im.name, Outcome: failed, PeakRSS: sampledPeak, CPU: cpu}
	if cg != nil {
		if peak, err := cg.peak(); err == nil {
			m.PeakRSS = max(m.PeakRSS, peak)
		}
	}
	if cg != nil {
		if kills, err := cg.oomKills(); err == nil && kills > 0 {
			m.Outcome = oomKilled
			m.Error = fmt.Sprintf("killed by the kernel %v after it started, at memory.max %s",
				formatDuration(time.Since(started)), formatSize(cc.Limit))
			return m, nil
		}
	}
	m.Error = fmt.Sprintf("the child process ended without a result: %v (its output is above)", errors.Join(waitErr, ctx.Err()))
	return m, nil
}

// watchChild reads the peak RSS of child pid every childSampleInterval
// until done is closed, and returns the highest it read; every
// childProgressInterval it prints how long the child has run and its RSS.
// The parent knows the peak of a child killed before it could report its
// own only from these readings.
func watchChild(name string, pid int, done <-chan struct{}, w io.Writer) (peak uint64) {
	start := time.Now()
	sample := time.NewTicker(childSampleInterval)
	defer sample.Stop()
	lastReport := start
	for {
		select {
		case <-done:
			return peak
		case <-sample.C:
		}
		s, err := readProcStatus(strconv.Itoa(pid))
		if err != nil {
			continue // exiting
		}
		peak = max(peak, s.hwm)
		if time.Since(lastReport) >= childProgressInterval {
			lastReport = time.Now()
			progress{w}.printf("      %s: %v, RSS %s, peak %s", name, time.Since(start).Round(time.Second),
				formatSize(int64(s.rss)), formatSize(int64(s.hwm)))
		}
	}
}

// lastMeasurement parses the last line of a child's stdout.
func lastMeasurement(out []byte) (measurement, bool) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	var m measurement
	if err := json.Unmarshal(lines[len(lines)-1], &m); err != nil || m.Outcome == "" {
		return measurement{}, false
	}
	return m, true
}

// runChild is the child process measuring implementation name: it reads
// its childConfig, waits for the parent's go-ahead, syncs, measures, and
// writes the measurement on stdout. It returns its exit code.
func runChild(ctx context.Context, name string, stdout io.Writer) int {
	i := slices.IndexFunc(implementations, func(im implementation) bool { return im.name == name })
	if i < 0 {
		fmt.Fprintf(os.Stderr, "coldstart child: unknown implementation %q\n", name)
		return 2
	}
	im := implementations[i]
	var cc childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), &cc); err != nil {
		fmt.Fprintf(os.Stderr, "coldstart child %s: reading %s: %v\n", name, childConfigEnv, err)
		return 2
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintf(os.Stderr, "coldstart child %s: no go-ahead from the parent: %v\n", name, err)
		return 2
	}
	began := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, cc.Timeout, fmt.Errorf("not synced within -timeout %v", cc.Timeout))
	defer cancel()

	out := &resultWriter{w: stdout}
	watchDone := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(ctx)
	if cc.Limit > 0 && cc.SelfLimit {
		go func() {
			defer close(watchDone)
			watchLimit(watchCtx, cc.Limit, selfLimitInterval, func(peak uint64) {
				if out.write(measurement{
					Implementation: name, Outcome: overLimit, PeakRSS: peak,
					Error: fmt.Sprintf("ended itself %v after it started: peak RSS %s, %s over the limit %s",
						formatDuration(time.Since(began)), formatSize(int64(peak)), formatSize(int64(peak)-cc.Limit), formatSize(cc.Limit)),
				}) {
					os.Exit(exitOverLimit) // as the OOM killer would end it: at once
				}
			})
		}()
	} else {
		close(watchDone)
	}

	m, c := measure(ctx, im, cc)
	stopWatch()
	<-watchDone
	if !out.write(m) {
		return exitOverLimit
	}
	if c != nil {
		stopCache(c, name)
	}
	if m.Outcome != synced {
		return 1
	}
	return 0
}

// measure syncs im as cc says and measures it. It returns the synced cache,
// still running, or nil if it did not sync.
func measure(ctx context.Context, im implementation, cc childConfig) (measurement, *syncedCache) {
	m := measurement{Implementation: im.name, Outcome: failed}
	fail := func(err error) (measurement, *syncedCache) {
		m.Error = err.Error()
		return m, nil
	}
	cfg, err := loadConfig(cc.Kubeconfig, cc.Context, cc.QPS, cc.Burst, im.name)
	if err != nil {
		return fail(err)
	}
	m.HeapBefore = liveHeap()
	cpuBefore, err := cpuTime()
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	c, err := im.sync(ctx, cfg, cc.Resource.resource())
	m.Sync = time.Since(start)
	cpuAfter, cpuErr := cpuTime()
	m.CPU = cpuAfter - cpuBefore
	if err != nil {
		return fail(err)
	}
	if cpuErr != nil {
		return fail(cpuErr)
	}
	if m.Objects, err = c.objects(ctx); err != nil {
		m.Error = fmt.Sprintf("counting the cached objects: %v", err)
		return m, c
	}
	m.HeapAfterSync = liveHeap()
	s, err := readProcStatus("self")
	if err != nil {
		m.Error = err.Error()
		return m, c
	}
	m.RSSAfterSync, m.PeakRSS = s.rss, s.hwm
	if m.Objects > 0 && m.HeapAfterSync > m.HeapBefore {
		m.BytesPerObject = float64(m.HeapAfterSync-m.HeapBefore) / float64(m.Objects)
	}
	m.Outcome = synced
	if cc.Limit > 0 && cc.SelfLimit && m.PeakRSS > uint64(cc.Limit) {
		// Past the limit since the last reading: it would have been killed.
		m.Outcome = overLimit
		m.Error = fmt.Sprintf("synced, but its peak RSS %s was %s over the limit %s",
			formatSize(int64(m.PeakRSS)), formatSize(int64(m.PeakRSS)-cc.Limit), formatSize(cc.Limit))
	}
	return m, c
}

// stopCache stops c, giving up after childStopTimeout: the process exits
// either way.
func stopCache(c *syncedCache, name string) {
	stopped := make(chan struct{})
	go func() {
		c.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(childStopTimeout):
		fmt.Fprintf(os.Stderr, "coldstart child %s: the cache did not stop within %v\n", name, childStopTimeout)
	}
}

// resultWriter writes a child's one measurement: the first write wins,
// whether the sync's or the limit watcher's.
type resultWriter struct {
	mu      sync.Mutex
	w       io.Writer
	written bool
}

// write writes m as a line of JSON unless a measurement was written
// before, and reports whether it wrote it.
func (r *resultWriter) write(m measurement) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written {
		return false
	}
	r.written = true
	b, err := json.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(measurement{Implementation: m.Implementation, Outcome: failed, Error: err.Error()})
	}
	r.w.Write(append(b, '\n'))
	return true
}
