package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
)

// Every Env works in a temporary directory named envDirPattern, holding a
// flock on ownerLockName in it for as long as the Env lives. Stop removes the
// directory; when a test binary dies without stopping (a timeout, a signal)
// the kernel drops the lock and the next Start removes the leftover, which
// would otherwise keep etcd's preallocated 64 MB WAL segments forever.
const (
	envDirPattern = "kubetyped-testenv-*"
	ownerLockName = "owner.lock"
	keptName      = "KEPT" // marks a directory kept by Options.KeepDir
	// unlockedGrace spares a directory whose owner has created it but not
	// yet locked it.
	unlockedGrace = time.Hour
)

// newEnvDir creates and locks a temporary directory for an Env, removing
// those left by dead processes first.
func newEnvDir(ctx context.Context) (dir string, lock *os.File, err error) {
	removeStaleEnvDirs(ctx)
	dir, err = os.MkdirTemp("", envDirPattern)
	if err != nil {
		return "", nil, fmt.Errorf("creating the temporary directory: %w", err)
	}
	// The lock file takes its name only once it is locked: a Start that
	// removes stale directories at the same time, in this process or
	// another, must never find ownerLockName unlocked in a live directory
	// and take it for a dead one's.
	pending := filepath.Join(dir, ownerLockName+".new")
	lock, err = lockFile(ctx, pending, nil)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if err := os.Rename(pending, filepath.Join(dir, ownerLockName)); err != nil {
		lock.Close()
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("naming the lock file: %w", err)
	}
	return dir, lock, nil
}

// removeStaleEnvDirs removes the directories of Envs whose process is gone.
func removeStaleEnvDirs(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), envDirPattern))
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, keptName)); err == nil {
			continue
		}
		f, err := os.Open(filepath.Join(dir, ownerLockName))
		if err != nil {
			if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > unlockedGrace {
				os.RemoveAll(dir)
			}
			continue
		}
		if ok, err := tryLock(f); err == nil && ok {
			klog.FromContext(ctx).V(1).Info("removing a test environment left by a dead process", "dir", dir)
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// keepEnvDir marks dir so that removeStaleEnvDirs leaves it alone once its
// owner is gone.
func keepEnvDir(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, keptName), []byte("kept by testenv.Options.KeepDir\n"), 0o644); err != nil {
		return fmt.Errorf("marking %s as kept: %w", dir, err)
	}
	return nil
}
