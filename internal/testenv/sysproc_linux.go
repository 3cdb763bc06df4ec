package testenv

import "syscall"

// sysProcAttr puts a child in its own process group, so that Stop can kill
// it together with anything it spawned, and asks the kernel to SIGKILL it
// when its parent dies, so that it cannot outlive a test binary that exits
// through t.Fatal, a panic, a timeout or a signal.
//
// Caveat: Linux delivers the parent-death signal when the OS thread that
// forked the child exits, not when the process does. The Go runtime exits a
// thread when a goroutine locked to it (runtime.LockOSThread) returns
// without unlocking, so a child forked from an arbitrary goroutine could be
// killed at a random moment because some unrelated code ended a locked
// goroutine on the same thread (go.dev/issue/27505). process.run therefore
// forks from a goroutine locked to its thread that stays alive, blocked in
// wait(2), for exactly as long as the child: the thread cannot be handed to
// another goroutine and cannot exit before the child has.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
