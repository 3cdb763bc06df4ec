package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	bf "github.com/kubetyped/informers/internal/benchfixtures"
)

// outcome is how an implementation's run ended.
type outcome string

const (
	// synced: the cache synced, under the memory limit if there was one.
	synced outcome = "synced"
	// overLimit: the child's peak RSS passed the memory limit, so it
	// ended itself, as the OOM killer would have ended it (the limit
	// enforced by the child itself).
	overLimit outcome = "over-limit"
	// oomKilled: the kernel killed the child at the cgroup's memory.max.
	oomKilled outcome = "oom-killed"
	// failed: the sync failed, or the child died for another reason.
	failed outcome = "failed"
)

// measurement is what one implementation's run cost. The child measures
// it and writes it as JSON on its stdout; the parent completes it from
// the child's rusage when the child could not.
type measurement struct {
	Implementation string  `json:"implementation"`
	Outcome        outcome `json:"outcome"`
	Error          string  `json:"error,omitempty"`
	// Objects is the number of objects the synced cache holds.
	Objects int `json:"objects"`
	// Sync is the time from creating the cache to its having synced.
	Sync time.Duration `json:"sync_ns"`
	// CPU is the user and system time of the child from creating the
	// cache to its having synced, every goroutine included (its whole
	// life's, from its rusage, if it did not sync).
	CPU time.Duration `json:"cpu_ns"`
	// PeakRSS is the child's peak resident set size (VmHWM), at any time
	// of its life.
	PeakRSS uint64 `json:"peak_rss_bytes"`
	// RSSAfterSync is the child's resident set size (VmRSS) once synced,
	// after two garbage collections.
	RSSAfterSync uint64 `json:"rss_after_sync_bytes"`
	// HeapBefore and HeapAfterSync are the bytes of Go heap objects after
	// two garbage collections, before the cache is created and once it
	// has synced.
	HeapBefore    uint64 `json:"heap_before_bytes"`
	HeapAfterSync uint64 `json:"heap_after_sync_bytes"`
	// BytesPerObject is the heap the synced cache added per object:
	// (HeapAfterSync - HeapBefore) / Objects.
	BytesPerObject float64 `json:"bytes_per_object"`
}

// summary is a progress line of m.
func (m measurement) summary() string {
	switch m.Outcome {
	case synced:
		return fmt.Sprintf("synced %d objects in %v, peak RSS %s, heap %s", m.Objects, m.Sync.Round(time.Millisecond),
			formatSize(int64(m.PeakRSS)), formatSize(int64(m.HeapAfterSync)))
	case oomKilled:
		return fmt.Sprintf("%s: %s (peak RSS %s)", m.Outcome, m.Error, formatSize(int64(m.PeakRSS)))
	default:
		return fmt.Sprintf("%s: %s", m.Outcome, m.Error)
	}
}

// procStatus is what the harness reads of /proc/<pid>/status.
type procStatus struct {
	hwm, rss uint64 // VmHWM and VmRSS, in bytes
}

// readProcStatus reads /proc/<pid>/status, pid "self" for this process.
func readProcStatus(pid string) (procStatus, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return procStatus{}, fmt.Errorf("reading the peak RSS: %w", err)
	}
	return parseProcStatus(b)
}

// parseProcStatus parses the VmHWM and VmRSS lines of a
// /proc/<pid>/status file.
func parseProcStatus(b []byte) (procStatus, error) {
	var s procStatus
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(key) {
		case "VmHWM":
			dst = &s.hwm
		case "VmRSS":
			dst = &s.rss
		default:
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(value), []byte(" kB"))), 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc status: %s: %w", key, err)
		}
		*dst = kb * 1024
		found++
	}
	if found != 2 {
		return s, fmt.Errorf("/proc status: no VmHWM and VmRSS (not Linux?)")
	}
	return s, nil
}

// cpuTime returns the user and system time this process has used.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return rusageCPU(&ru), nil
}

// rusageCPU returns the user and system time of ru.
func rusageCPU(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap collects garbage twice and returns the bytes of Go heap
// objects left.
func liveHeap() uint64 { return bf.LiveHeap() }
