//go:build unix

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path, creating the file if needed.
// It polls rather than blocking in flock(2) so that ctx can cancel the wait;
// waiting is called once if the lock is held by someone else. The lock is
// released by closing the returned file, or by the kernel when the process
// dies, so a crashed holder never wedges the next one.
func lockFile(ctx context.Context, path string, waiting func()) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	delay := 10 * time.Millisecond
	for first := true; ; first = false {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if ok {
			return f, nil
		}
		if first && waiting != nil {
			waiting()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// tryLock takes an exclusive flock on f without blocking and reports
// whether it got it.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
