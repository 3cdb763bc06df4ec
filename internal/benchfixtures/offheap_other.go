//go:build !unix

package benchfixtures

// offHeap returns n bytes; where memory cannot be mapped outside the Go
// heap, they are on it.
func offHeap(n int) ([]byte, func() error, error) {
	return make([]byte, n), func() error { return nil }, nil
}
