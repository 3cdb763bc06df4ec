//go:build unix

package testenv

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helperEnv makes the test binary act as a parent that starts a child and
// dies without stopping it.
const helperEnv = "TESTENV_ORPHAN_HELPER"

func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		p, err := startProcess("sleep", exec.Command(sleep, "600"), os.DevNull)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(p.cmd.Process.Pid) + "\n")
		switch mode {
		case "panic":
			panic("helper dies without stopping its child")
		case "interrupt":
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			<-p.done // never: the signal ends the helper first
		}
		os.Exit(0)
	}

	for _, mode := range []string{"exit", "panic", "interrupt"} {
		t.Run(mode, func(t *testing.T) {
			helper := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildDiesWithParent$")
			helper.Env = append(os.Environ(), helperEnv+"="+mode)
			out, err := helper.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, helper.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err, "reading the child's pid")
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			require.NoError(t, err)
			helper.Wait() // fails unless mode is exit

			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			for alive(pid) {
				select {
				case <-ctx.Done():
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("child %d outlived its parent", pid)
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
}

// alive reports whether pid runs; a zombie (exited, not yet reaped by its
// new parent) does not count.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestProcessStop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	p, err := startProcess("sleep", exec.Command(sleep, "600"), filepath.Join(t.TempDir(), "sleep.log"))
	require.NoError(t, err)
	require.NoError(t, p.stop(t.Context(), time.Minute))
	exited, err := p.exited()
	assert.True(t, exited)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, syscall.SIGTERM, ee.Sys().(syscall.WaitStatus).Signal())
	assert.NoError(t, p.kill(), "killing an exited process")
}

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := lockFile(t.Context(), path, nil)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	waited := false
	_, err = lockFile(ctx, path, func() { waited = true })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, waited, "waiting callback")

	require.NoError(t, first.Close())
	second, err := lockFile(t.Context(), path, nil)
	require.NoError(t, err)
	require.NoError(t, second.Close())
}

func TestRemoveStaleEnvDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	live, liveLock, err := newEnvDir(t.Context())
	require.NoError(t, err)
	defer liveLock.Close()
	stale, staleLock, err := newEnvDir(t.Context())
	require.NoError(t, err)
	staleLock.Close() // as the kernel does when the owner dies

	kept, keptLock, err := newEnvDir(t.Context())
	require.NoError(t, err)
	require.NoError(t, keepEnvDir(kept))
	keptLock.Close()

	removeStaleEnvDirs(t.Context())
	assert.DirExists(t, live)
	assert.DirExists(t, kept)
	_, err = os.Stat(stale)
	assert.True(t, errors.Is(err, os.ErrNotExist), "stale dir: %v", err)
}

// TestNewEnvDirsStartingTogether starts environments' directories while
// other Starts remove stale ones, as a test that starts several control
// planes at once does: none removes a live directory.
func TestNewEnvDirsStartingTogether(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	const n = 300
	done := make(chan struct{})
	var removers sync.WaitGroup
	for range 2 {
		removers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					removeStaleEnvDirs(t.Context())
				}
			}
		})
	}
	dirs := make([]string, n)
	locks := make([]*os.File, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dirs[i], locks[i], errs[i] = newEnvDir(t.Context()) })
	}
	wg.Wait()
	close(done)
	removers.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		defer locks[i].Close()
		assert.FileExists(t, filepath.Join(dirs[i], ownerLockName))
	}
}
