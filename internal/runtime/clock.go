package runtime

import (
	"container/heap"
	"math"
	"sync"
	"time"
)

// Clock is the source of processing time. Tasks use the wall clock; tests
// install a ManualClock to make processing-time behaviour deterministic.
type Clock interface {
	// NowMillis returns the current time in milliseconds since the epoch.
	NowMillis() int64
	// AfterFunc calls f in its own goroutine once the clock reaches
	// atMillis; stop cancels it and reports whether it had not fired.
	AfterFunc(atMillis int64, f func()) (stop func() bool)
}

// WallClock is the real clock.
type WallClock struct{}

// NowMillis implements Clock.
func (WallClock) NowMillis() int64 { return time.Now().UnixMilli() }

// AfterFunc implements Clock.
func (WallClock) AfterFunc(atMillis int64, f func()) func() bool {
	ms := atMillis - time.Now().UnixMilli()
	// Beyond ~292 years a Duration overflows; such a timer never fires.
	const maxMillis = int64(math.MaxInt64 / int64(time.Millisecond))
	if ms > maxMillis || atMillis == math.MaxInt64 {
		return func() bool { return true }
	}
	t := time.AfterFunc(max(time.Duration(ms)*time.Millisecond, 0), f)
	return t.Stop
}

// ManualClock is a clock that moves only when told to: Advance and Set
// fire the callbacks that became due, in time order.
type ManualClock struct {
	mu      sync.Mutex
	now     int64
	pending manualTimers
	seq     int64
}

// NewManualClock returns a manual clock reading startMillis.
func NewManualClock(startMillis int64) *ManualClock { return &ManualClock{now: startMillis} }

// NowMillis implements Clock.
func (c *ManualClock) NowMillis() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements Clock. A time that has already passed fires at once
// (in its own goroutine, as the wall clock's timers do).
func (c *ManualClock) AfterFunc(atMillis int64, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if atMillis <= c.now {
		go f()
		return func() bool { return false }
	}
	c.seq++
	t := &manualTimer{at: atMillis, seq: c.seq, f: f}
	heap.Push(&c.pending, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.index < 0 {
			return false
		}
		heap.Remove(&c.pending, t.index)
		return true
	}
}

// Advance moves the clock forward by d and fires due callbacks.
func (c *ManualClock) Advance(d time.Duration) { c.Set(c.NowMillis() + d.Milliseconds()) }

// Set moves the clock to atMillis (never backwards) and fires due
// callbacks, each in the calling goroutine, in time order.
func (c *ManualClock) Set(atMillis int64) {
	for {
		c.mu.Lock()
		if atMillis > c.now {
			c.now = atMillis
		}
		if len(c.pending) == 0 || c.pending[0].at > c.now {
			c.mu.Unlock()
			return
		}
		t := heap.Pop(&c.pending).(*manualTimer)
		c.mu.Unlock()
		t.f()
	}
}

type manualTimer struct {
	at, seq int64
	f       func()
	index   int
}

type manualTimers []*manualTimer

func (h manualTimers) Len() int { return len(h) }
func (h manualTimers) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h manualTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *manualTimers) Push(x any) {
	t := x.(*manualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *manualTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
