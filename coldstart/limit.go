package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A memory limit is enforced one of two ways. Where the harness can create
// a cgroup v2 child cgroup with the memory controller (as root, in a
// cgroup whose subtree has it), each child process runs in its own cgroup
// with memory.max set to the limit, and the kernel kills it there, as it
// kills a container. Elsewhere the child enforces the limit on itself: it
// reads its peak RSS (VmHWM) every selfLimitInterval and ends itself once
// the peak has passed the limit. VmHWM is a high-water mark, so no peak
// between two readings is missed, but the child may run past the limit
// until the next reading; and a cgroup also charges the page cache and
// kernel memory of the process, so memory.max is a little stricter than
// the child's own check.

// selfLimitInterval is how often a child that enforces its own limit reads
// its peak RSS.
const selfLimitInterval = 10 * time.Millisecond

// exitOverLimit is the exit code of a child that ended itself over the
// limit.
const exitOverLimit = 3

// enforcer enforces a memory limit on the children, by one method.
type enforcer struct {
	limit int64
	// cgroups is the cgroup v2 directory where children's cgroups are
	// created; "" if the children enforce the limit themselves.
	cgroups string
	// why says why the children enforce it themselves.
	why string
	// enabled is whether the harness enabled the memory controller in
	// cgroups' subtree, to disable it again in close.
	enabled bool
	next    atomic.Int64
}

// newEnforcer returns the enforcer of limit (none if 0), choosing the
// method: a cgroup if one can be made here, else the children themselves.
func newEnforcer(limit int64) *enforcer {
	e := &enforcer{limit: limit}
	if limit <= 0 {
		return e
	}
	dir, enabled, err := cgroupParent()
	if err != nil {
		e.why = err.Error()
		return e
	}
	e.cgroups, e.enabled = dir, enabled
	return e
}

// self reports whether the children enforce the limit themselves.
func (e *enforcer) self() bool { return e.cgroups == "" }

// method describes how the limit is enforced.
func (e *enforcer) method() string {
	switch {
	case e.limit <= 0:
		return ""
	case e.self():
		return fmt.Sprintf("the child itself (its VmHWM read every %v)", selfLimitInterval)
	default:
		return "cgroup v2 memory.max"
	}
}

// reason says why the children enforce the limit themselves, if they do.
func (e *enforcer) reason() string { return e.why }

// close undoes what newEnforcer changed.
func (e *enforcer) close() {
	if e.enabled {
		os.WriteFile(filepath.Join(e.cgroups, "cgroup.subtree_control"), []byte("-memory"), 0)
	}
}

// cgroup creates the cgroup of one child, with memory.max at the limit,
// or returns nil if the limit is not enforced by cgroups.
func (e *enforcer) cgroup(name string) (*childCgroup, error) {
	if e.limit <= 0 || e.self() {
		return nil, nil
	}
	dir := filepath.Join(e.cgroups, fmt.Sprintf("coldstart-%d-%d-%s", os.Getpid(), e.next.Add(1), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating a cgroup: %w", err)
	}
	c := &childCgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(e.limit, 10)), 0); err != nil {
		c.remove()
		return nil, fmt.Errorf("setting memory.max: %w", err)
	}
	// Without swap, as in a container whose limit is its memory; a kernel
	// without swap accounting has no such file.
	if err := os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.remove()
		return nil, fmt.Errorf("setting memory.swap.max: %w", err)
	}
	return c, nil
}

// childCgroup is the cgroup of one child process.
type childCgroup struct{ dir string }

// add moves process pid into the cgroup.
func (c *childCgroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("moving the child into its cgroup: %w", err)
	}
	return nil
}

// oomKills returns how many processes the kernel killed in the cgroup for
// passing memory.max.
func (c *childCgroup) oomKills() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			return strconv.Atoi(n)
		}
	}
	return 0, fmt.Errorf("%s/memory.events has no oom_kill", c.dir)
}

// peak returns the cgroup's peak memory usage (memory.peak, from Linux
// 5.19).
func (c *childCgroup) peak() (uint64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "memory.peak"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// remove removes the cgroup, which its process has left by exiting.
func (c *childCgroup) remove() { os.Remove(c.dir) }

// cgroupParent returns the cgroup v2 directory of this process, if
// children's cgroups can be created in it with the memory controller, and
// whether the memory controller had to be enabled in its subtree for
// that; otherwise an error saying why not.
func cgroupParent() (dir string, enabled bool, err error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", false, err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	path, ok := "", false
	for line := range strings.Lines(string(self)) {
		if path, ok = strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			break
		}
	}
	if !ok {
		return "", false, errors.New("this process is in no cgroup v2")
	}
	dir = filepath.Join(mount, path)
	controllers, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", false, fmt.Errorf("reading the cgroup's controllers: %w", err)
	}
	if !slices.Contains(strings.Fields(string(controllers)), "memory") {
		return "", false, fmt.Errorf("cgroup v2 %s has no memory controller", dir)
	}
	subtree, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return "", false, fmt.Errorf("reading the cgroup's subtree controllers: %w", err)
	}
	if !slices.Contains(strings.Fields(string(subtree)), "memory") {
		// Only the root cgroup may both hold processes and give its
		// children controllers; elsewhere the kernel refuses (EBUSY).
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			return "", false, fmt.Errorf("cannot give child cgroups of %s the memory controller: %w", dir, err)
		}
		enabled = true
	}
	// A cgroup can be created and removed there: the process may write it.
	probe, err := os.MkdirTemp(dir, "coldstart-probe-")
	if err != nil {
		if enabled {
			os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("-memory"), 0)
		}
		return "", false, fmt.Errorf("cannot create a cgroup in %s: %w", dir, err)
	}
	os.Remove(probe)
	return dir, enabled, nil
}

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("reading /proc/self/mountinfo: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// ID parent major:minor root mount-point options... - type source options
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep >= 5 && sep+1 < len(fields) && fields[sep+1] == "cgroup2" {
			return fields[4], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// watchLimit reads this process's peak RSS every interval until ctx ends,
// and calls over once, with the peak, when it has passed limit.
func watchLimit(ctx context.Context, limit int64, interval time.Duration, over func(peak uint64)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := readProcStatus("self")
		if err == nil && s.hwm > uint64(limit) {
			over(s.hwm)
			return
		}
	}
}

// parseSize parses a size in bytes with an optional unit: B, KiB, MiB,
// GiB, TiB (powers of 1024; Ki, Mi, Gi, Ti too) or kB, MB, GB, TB (powers
// of 1000; k, M, G, T too).
func parseSize(s string) (int64, error) {
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
	unit := strings.TrimSpace(s[len(num):])
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB, TiB, kB, MB, GB or TB)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number with a unit, like 512MiB", s)
	}
	b := v * float64(mult)
	if b > math.MaxInt64 || b < 1 {
		return 0, fmt.Errorf("size %q is out of range", s)
	}
	return int64(b), nil
}

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"Ki": 1 << 10, "KiB": 1 << 10, "Mi": 1 << 20, "MiB": 1 << 20, "Gi": 1 << 30, "GiB": 1 << 30, "Ti": 1 << 40, "TiB": 1 << 40,
	"k": 1e3, "kB": 1e3, "K": 1e3, "KB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9, "T": 1e12, "TB": 1e12,
}

// formatSize formats a size in bytes in binary units.
func formatSize(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, exp := float64(b), 0
	for v >= unit && exp < 4 {
		v /= unit
		exp++
	}
	return fmt.Sprintf("%.1f %s", v, []string{"", "KiB", "MiB", "GiB", "TiB"}[exp])
}
