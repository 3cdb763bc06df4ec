package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func keyOfInt(n int) types.NamespacedName {
	return types.NamespacedName{Name: string(rune('a' + n%10))}
}

// A mark is reached once everything queued before it was delivered, in a
// plain and in a merging queue, where notifications queued after it for
// other keys may cancel out without reaching it early.
func TestMarkReachedAfterWhatCameBefore(t *testing.T) {
	for _, merging := range []bool{false, true} {
		t.Run(map[bool]string{false: "fifo", true: "merging"}[merging], func(t *testing.T) {
			s := &sink{}
			release := make(chan struct{})
			cfg := Config[int]{Deliver: func(n Notification[int]) {
				<-release
				s.deliver(n)
			}}
			if merging {
				cfg.KeyOf = keyOfInt
			}
			l := New(cfg)
			run(t, l)
			l.Push(Notification[int]{Kind: Add, New: 0})
			l.Push(Notification[int]{Kind: Add, New: 1})
			m := l.Mark()
			assert.Equal(t, 2, l.Backlog(), "a mark is not in the backlog")
			// After the mark: an add and a delete of another key, which a
			// merging queue cancels.
			l.Push(Notification[int]{Kind: Add, New: 2})
			l.Push(Notification[int]{Kind: Delete, Old: 2})
			select {
			case <-m.Done():
				t.Fatal("mark reached before the notifications queued ahead of it were delivered")
			case <-time.After(20 * time.Millisecond):
			}
			close(release)
			<-m.Done()
			require.True(t, m.Reached())
			got := s.values()
			require.GreaterOrEqual(t, len(got), 2)
			assert.Equal(t, []int{0, 1}, got[:2])
			waitFor(t, func() bool { return l.Backlog() == 0 })
		})
	}
}

func TestMarkOnStop(t *testing.T) {
	block := make(chan struct{})
	l := New(Config[int]{Deliver: func(Notification[int]) { <-block }})
	run(t, l)
	l.Push(Notification[int]{Kind: Add, New: 1})
	m := l.Mark()
	l.Stop()
	<-m.Done()
	assert.False(t, m.Reached(), "a mark dropped by Stop is not reached")
	close(block)

	late := l.Mark()
	<-late.Done()
	assert.False(t, late.Reached())
	assert.Equal(t, 0, l.Backlog())
}

func TestMarksInOrder(t *testing.T) {
	l := New(Config[int]{Deliver: func(Notification[int]) {}})
	var marks []*Mark
	for i := range 5 {
		l.Push(Notification[int]{Kind: Add, New: i})
		marks = append(marks, l.Mark())
	}
	run(t, l)
	for _, m := range marks {
		<-m.Done()
		assert.True(t, m.Reached())
	}
}
