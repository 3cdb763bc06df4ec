package reflector

import "sync"

// Version is the resource version a reflector has published: the sink has
// applied and been flushed every event up to it. Other goroutines read it,
// and wait for it to change, without touching the reflector. Reflectors
// that feed one sink in turn may publish to one Version. The zero value is
// ready to use.
type Version struct {
	mu sync.Mutex
	rv string
	// changed is closed by the next Set; it is made only when a waiter
	// asks for it, so that publishing costs nothing while nobody waits.
	changed chan struct{}
}

// Get returns the version.
func (v *Version) Get() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rv
}

// Next returns the version and a channel closed at the next Set.
func (v *Version) Next() (string, <-chan struct{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.changed == nil {
		v.changed = make(chan struct{})
	}
	return v.rv, v.changed
}

// Set publishes rv and wakes the waiters of Next.
func (v *Version) Set(rv string) {
	v.mu.Lock()
	v.rv = rv
	if v.changed != nil {
		close(v.changed)
		v.changed = nil
	}
	v.mu.Unlock()
}
