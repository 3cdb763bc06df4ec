//go:build unix && !linux

package testenv

import "syscall"

// sysProcAttr puts a child in its own process group, so that Stop can kill
// it together with anything it spawned. Only Linux has a parent-death
// signal; elsewhere a child may outlive a test binary that crashes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
