//go:build !linux

package testenv

import (
	"errors"
	"runtime"
	"time"
)

func processCPU(int) (time.Duration, error) {
	return 0, errors.New("testenv: CPU time of a process is read on linux only, not " + runtime.GOOS)
}
