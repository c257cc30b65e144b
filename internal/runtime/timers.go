package runtime

import (
	"container/heap"
	"fmt"

	"github.com/weirproject/weir/codec"
)

// ProcessingTimeService schedules callbacks at processing times; each runs
// in the task's goroutine, through the mailbox, so operators never lock.
type ProcessingTimeService struct {
	task  *Task
	clock Clock
	stops map[int64]func() bool
	next  int64
}

// Now returns the current processing time in milliseconds.
func (s *ProcessingTimeService) Now() int64 { return s.clock.NowMillis() }

// Schedule runs f(atMillis) in the task's goroutine once processing time
// reaches atMillis. The returned id cancels it with Cancel.
func (s *ProcessingTimeService) Schedule(atMillis int64, f func(atMillis int64)) int64 {
	s.next++
	id := s.next
	t := s.task
	s.stops[id] = s.clock.AfterFunc(atMillis, func() {
		select {
		case t.mailbox <- func() {
			if _, ok := s.stops[id]; !ok {
				return // cancelled after it fired
			}
			delete(s.stops, id)
			f(atMillis)
		}:
		case <-t.ctx.Done():
		}
	})
	return id
}

// Cancel cancels a scheduled callback.
func (s *ProcessingTimeService) Cancel(id int64) {
	if stop, ok := s.stops[id]; ok {
		stop()
		delete(s.stops, id)
	}
}

func (s *ProcessingTimeService) stopAll() {
	for id, stop := range s.stops {
		stop()
		delete(s.stops, id)
	}
}

// TimerService holds the event-time and processing-time timers of a keyed
// operator: at most one timer per key and timestamp, fired in timestamp
// order. Event-time timers fire when the watermark passes them;
// processing-time timers when the clock does, through the task's mailbox.
// Only the earliest processing-time timer is scheduled with the clock.
type TimerService[K comparable] struct {
	oc          *OperatorContext
	onEventTime func(key K, ts int64)
	onProcTime  func(key K, ts int64)
	event       timerHeap[K]
	proc        timerHeap[K]
	watermark   int64
	scheduledAt int64
	scheduledID int64
}

// NewTimerService creates the timer service of a keyed operator; the
// callbacks run with the timer's key.
func NewTimerService[K comparable](oc *OperatorContext, onEventTime, onProcessingTime func(key K, ts int64)) *TimerService[K] {
	return &TimerService[K]{
		oc:          oc,
		onEventTime: onEventTime,
		onProcTime:  onProcessingTime,
		event:       newTimerHeap[K](),
		proc:        newTimerHeap[K](),
		watermark:   NoTimestamp,
		scheduledAt: MaxWatermark,
	}
}

// CurrentWatermark returns the operator's current event time.
func (s *TimerService[K]) CurrentWatermark() int64 { return s.watermark }

// CurrentProcessingTime returns the operator's processing time.
func (s *TimerService[K]) CurrentProcessingTime() int64 { return s.oc.Task.ProcessingTime().Now() }

// RegisterEventTimeTimer sets a timer for key at event time ts; a second
// registration of the same key and time is a no-op.
func (s *TimerService[K]) RegisterEventTimeTimer(key K, ts int64) { s.event.add(key, ts) }

// DeleteEventTimeTimer removes a timer, if set.
func (s *TimerService[K]) DeleteEventTimeTimer(key K, ts int64) { s.event.remove(key, ts) }

// RegisterProcessingTimeTimer sets a timer for key at processing time ts.
func (s *TimerService[K]) RegisterProcessingTimeTimer(key K, ts int64) {
	if s.proc.add(key, ts) {
		s.reschedule()
	}
}

// DeleteProcessingTimeTimer removes a processing-time timer, if set.
func (s *TimerService[K]) DeleteProcessingTimeTimer(key K, ts int64) {
	if s.proc.remove(key, ts) {
		s.reschedule()
	}
}

// NumEventTimeTimers and NumProcessingTimeTimers report the pending timers.
func (s *TimerService[K]) NumEventTimeTimers() int      { return len(s.event.items) }
func (s *TimerService[K]) NumProcessingTimeTimers() int { return len(s.proc.items) }

// AdvanceWatermark fires, in timestamp order, every event-time timer at or
// before wm. Timers registered by the callbacks at or before wm fire too.
func (s *TimerService[K]) AdvanceWatermark(wm int64) {
	if wm > s.watermark {
		s.watermark = wm
	}
	for len(s.event.items) > 0 && s.event.items[0].ts <= wm {
		t := s.event.pop()
		s.oc.Enter()
		s.onEventTime(t.key, t.ts)
	}
}

func (s *TimerService[K]) reschedule() {
	pts := s.oc.Task.ProcessingTime()
	next := MaxWatermark
	if len(s.proc.items) > 0 {
		next = s.proc.items[0].ts
	}
	if next == s.scheduledAt {
		return
	}
	if s.scheduledAt != MaxWatermark {
		pts.Cancel(s.scheduledID)
	}
	s.scheduledAt = next
	if next != MaxWatermark {
		s.scheduledID = pts.Schedule(next, s.fireProcessingTime)
	}
}

func (s *TimerService[K]) fireProcessingTime(int64) {
	s.scheduledAt = MaxWatermark
	now := s.oc.Task.ProcessingTime().Now()
	for len(s.proc.items) > 0 && s.proc.items[0].ts <= now {
		t := s.proc.pop()
		s.oc.Enter()
		s.onProcTime(t.key, t.ts)
	}
	s.reschedule()
}

type timer[K comparable] struct {
	key   K
	ts    int64
	index int
}

type timerID[K comparable] struct {
	key K
	ts  int64
}

// timerHeap is a min-heap of timers by timestamp with a set for
// deduplication and deletion.
type timerHeap[K comparable] struct {
	items []*timer[K]
	set   map[timerID[K]]*timer[K]
}

func newTimerHeap[K comparable]() timerHeap[K] {
	return timerHeap[K]{set: make(map[timerID[K]]*timer[K])}
}

func (h *timerHeap[K]) add(key K, ts int64) bool {
	id := timerID[K]{key, ts}
	if _, ok := h.set[id]; ok {
		return false
	}
	t := &timer[K]{key: key, ts: ts}
	h.set[id] = t
	heap.Push((*timerSlice[K])(&h.items), t)
	return true
}

func (h *timerHeap[K]) remove(key K, ts int64) bool {
	id := timerID[K]{key, ts}
	t, ok := h.set[id]
	if !ok {
		return false
	}
	delete(h.set, id)
	heap.Remove((*timerSlice[K])(&h.items), t.index)
	return true
}

func (h *timerHeap[K]) pop() *timer[K] {
	t := heap.Pop((*timerSlice[K])(&h.items)).(*timer[K])
	delete(h.set, timerID[K]{t.key, t.ts})
	return t
}

type timerSlice[K comparable] []*timer[K]

func (h timerSlice[K]) Len() int           { return len(h) }
func (h timerSlice[K]) Less(i, j int) bool { return h[i].ts < h[j].ts }
func (h timerSlice[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerSlice[K]) Push(x any) {
	t := x.(*timer[K])
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerSlice[K]) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

// Snapshot encodes the pending timers (key and timestamp of each).
func (s *TimerService[K]) Snapshot() ([]byte, error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("timers: %w", err)
	}
	buf := codec.Uint64.Append(nil, uint64(len(s.event.items)))
	for _, t := range s.event.items {
		buf = codec.Int64.Append(kc.Append(buf, t.key), t.ts)
	}
	buf = codec.Uint64.Append(buf, uint64(len(s.proc.items)))
	for _, t := range s.proc.items {
		buf = codec.Int64.Append(kc.Append(buf, t.key), t.ts)
	}
	return buf, nil
}

// Restore loads timers from a snapshot, keeping those whose key keep
// accepts (nil keeps all); it may be called once per old subtask after a
// rescale. Processing-time timers that are already due fire as soon as
// the task runs.
func (s *TimerService[K]) Restore(data []byte, keep func(K) bool) error {
	kc, err := codec.For[K]()
	if err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	for _, h := range []*timerHeap[K]{&s.event, &s.proc} {
		n, used, err := codec.Uint64.Decode(data)
		if err != nil {
			return fmt.Errorf("timers: %w", err)
		}
		data = data[used:]
		for i := uint64(0); i < n; i++ {
			k, m, err := kc.Decode(data)
			if err != nil {
				return fmt.Errorf("timers: %w", err)
			}
			data = data[m:]
			ts, m, err := codec.Int64.Decode(data)
			if err != nil {
				return fmt.Errorf("timers: %w", err)
			}
			data = data[m:]
			if keep == nil || keep(k) {
				h.add(k, ts)
			}
		}
	}
	s.reschedule()
	return nil
}
