package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a child process running in its own process group, its output
// appended to a log file.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd

	done chan struct{} // closed once the child has exited and been reaped
	err  error         // result of cmd.Wait; read only after done is closed

	mu     sync.Mutex // guards reaped against signalling a reused pid
	reaped bool
}

// startProcess starts cmd with its stdout and stderr appended to logPath,
// after a header line naming the command.
func startProcess(name string, cmd *exec.Cmd, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s log: %w", name, err)
	}
	// The child gets its own descriptor; ours is not needed after Start.
	defer f.Close()
	fmt.Fprintf(f, "=== %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()

	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go p.run(started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return p, nil
}

// run starts the child and waits for it on one goroutine locked to its OS
// thread, which therefore lives exactly as long as the child; see
// sysProcAttr for why the parent-death signal needs that.
func (p *process) run(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := p.cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil
	err := p.cmd.Wait()
	p.mu.Lock()
	p.reaped = true
	p.err = err
	p.mu.Unlock()
	close(p.done)
}

// signal sends sig to the child's process group unless the child is gone.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return nil
	}
	if err := signalGroup(p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signalling %s: %w", p.name, err)
	}
	return nil
}

// kill kills the child's process group and waits for the child to exit.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// stop asks the child to terminate with SIGTERM and kills it if it has not
// exited after grace or when ctx is done. It returns once the child is gone.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return p.kill()
}

// exited reports whether the child has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// cpu returns the CPU time the child has used.
func (p *process) cpu() (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return 0, fmt.Errorf("%s exited", p.name)
	}
	d, err := processCPU(p.cmd.Process.Pid)
	if err != nil {
		return 0, fmt.Errorf("CPU time of %s: %w", p.name, err)
	}
	return d, nil
}

// exitError describes the child's exit.
func (p *process) exitError() error {
	if p.err == nil {
		return fmt.Errorf("%s exited", p.name)
	}
	return fmt.Errorf("%s exited: %w", p.name, p.err)
}

// readyTimeout bounds how long waitFor waits for a server to become ready.
const readyTimeout = 2 * time.Minute

// pollInterval is how often waitFor checks readiness.
const pollInterval = 50 * time.Millisecond

// waitFor polls check until it succeeds, p exits, ctx is done or
// readyTimeout has passed. The error names the last failed check.
func waitFor(ctx context.Context, p *process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeoutCause(ctx, readyTimeout, fmt.Errorf("%s not ready after %v", p.name, readyTimeout))
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		checkCtx, cancelCheck := context.WithTimeout(ctx, 5*time.Second)
		err := check(checkCtx)
		cancelCheck()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %v)", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// logTailLines is how many lines of a log an error quotes.
const logTailLines = 30

// logTail returns the last lines of the log at path, formatted to be
// appended to an error message, or "" if there is nothing to show.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxBytes = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	lines = lines[max(0, len(lines)-logTailLines):]
	return fmt.Sprintf("\n--- last lines of %s ---\n%s", path, bytes.Join(lines, []byte("\n")))
}
