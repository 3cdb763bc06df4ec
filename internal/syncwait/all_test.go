package syncwait

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncer is a syncer of the tests: done once synced, ended once stopped.
type syncer struct{ done, ended chan struct{} }

func newSyncer() *syncer { return &syncer{make(chan struct{}), make(chan struct{})} }

func done(s *syncer) <-chan struct{}  { return s.done }
func ended(s *syncer) <-chan struct{} { return s.ended }

// closedWithin reports whether c is closed within d.
func closedWithin(c <-chan struct{}, d time.Duration) bool {
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}

func TestAll(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		assert.True(t, isClosed(All[*syncer](nil, done, ended)))
	})
	t.Run("all done already: no goroutine", func(t *testing.T) {
		a, b := newSyncer(), newSyncer()
		close(a.done)
		close(b.done)
		before := runtime.NumGoroutine()
		assert.True(t, isClosed(All([]*syncer{a, b}, done, ended)))
		assert.Equal(t, before, runtime.NumGoroutine())
	})
	t.Run("closed once the last is done", func(t *testing.T) {
		a, b := newSyncer(), newSyncer()
		close(a.done)
		ch := All([]*syncer{a, b}, done, ended)
		assert.False(t, isClosed(ch))
		close(b.done)
		assert.True(t, closedWithin(ch, 10*time.Second))
	})
	t.Run("left open when one ends first", func(t *testing.T) {
		a, b := newSyncer(), newSyncer()
		ch := All([]*syncer{a, b}, done, ended)
		close(a.ended)
		close(b.done)
		assert.False(t, closedWithin(ch, 50*time.Millisecond))
	})
}

func TestMemo(t *testing.T) {
	a, b := newSyncer(), newSyncer()
	var m Memo[*syncer]
	all := func(xs []*syncer) <-chan struct{} { return All(xs, done, ended) }
	first := m.Get([]*syncer{a}, all)
	before := runtime.NumGoroutine()
	for range 10_000 {
		require.Equal(t, first, m.Get([]*syncer{a}, all), "one channel for the same syncers")
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "no goroutine per call")
	second := m.Get([]*syncer{a, b}, all)
	assert.NotEqual(t, first, second, "a new syncer, a new channel")
	close(a.done)
	close(b.done)
	assert.True(t, closedWithin(first, 10*time.Second))
	assert.True(t, closedWithin(second, 10*time.Second))
}
