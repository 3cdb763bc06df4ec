//go:build !unix

package testenv

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
)

var errUnsupported = errors.New("testenv: the control plane runs on unix systems only, not " + runtime.GOOS)

func lockFile(context.Context, string, func()) (*os.File, error) { return nil, errUnsupported }

func tryLock(*os.File) (bool, error) { return false, errUnsupported }

func signalGroup(int, syscall.Signal) error { return errUnsupported }

func sysProcAttr() *syscall.SysProcAttr { return nil }
