//go:build unix

package benchfixtures

import (
	"fmt"
	"syscall"
)

// offHeap returns n bytes mapped outside the Go heap, so that neither the
// heap's figures nor the collector's pacing count them, and how to unmap
// them.
func offHeap(n int) ([]byte, func() error, error) {
	if n == 0 {
		return nil, func() error { return nil }, nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("benchfixtures: mapping %d bytes: %w", n, err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
