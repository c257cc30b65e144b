package runtime

import (
	"fmt"
	"slices"

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
func (s *TimerService[K]) NumEventTimeTimers() int      { return s.event.len() }
func (s *TimerService[K]) NumProcessingTimeTimers() int { return s.proc.len() }

// AdvanceWatermark fires, in timestamp order, every event-time timer at or
// before wm. Timers registered by the callbacks at or before wm fire too.
func (s *TimerService[K]) AdvanceWatermark(wm int64) {
	if wm > s.watermark {
		s.watermark = wm
	}
	for {
		if ts, ok := s.event.head(); !ok || ts > wm {
			return
		}
		key, ts := s.event.pop()
		s.oc.Enter()
		s.onEventTime(key, ts)
	}
}

// EndKey ends a key in batch execution, which processes one key at a
// time: every pending timer fires, the event-time ones as if the
// watermark had reached its maximum, then the processing-time ones, each
// in timestamp order, and so on while the callbacks set new ones. Event
// time then starts afresh for the next key.
func (s *TimerService[K]) EndKey() {
	for s.event.len() > 0 || s.proc.len() > 0 {
		s.AdvanceWatermark(MaxWatermark)
		for s.proc.len() > 0 {
			key, ts := s.proc.pop()
			s.oc.Enter()
			s.onProcTime(key, ts)
		}
	}
	if s.scheduledAt != MaxWatermark {
		s.oc.Task.ProcessingTime().Cancel(s.scheduledID)
		s.scheduledAt = MaxWatermark
	}
	s.watermark = NoTimestamp
}

func (s *TimerService[K]) reschedule() {
	pts := s.oc.Task.ProcessingTime()
	next := MaxWatermark
	if ts, ok := s.proc.head(); ok {
		next = ts
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
	for {
		if ts, ok := s.proc.head(); !ok || ts > now {
			break
		}
		key, ts := s.proc.pop()
		s.oc.Enter()
		s.onProcTime(key, ts)
	}
	s.reschedule()
}

type timerID[K comparable] struct {
	key K
	ts  int64
}

// timerHeap holds timers by time: a min-heap of the distinct times that
// have timers, and per time a bucket of its keys in the order they were
// registered. Keyed operators set many timers for few times (a window's
// end, the millisecond of a batch of records): the heap moves once per
// time rather than once per timer, and a timer allocates nothing of its
// own. A bucket of a few keys is searched by scanning it, which costs
// less than hashing a (key, time) pair in a set of every timer; a bucket
// that grows past smallTimerBucket keys gets a set of its live keys, and
// a key deleted from it stays in its list until its time comes up.
type timerHeap[K comparable] struct {
	times   []int64
	buckets map[int64]*timerBucket[K]
	n       int // pending timers
	// top caches the bucket of times[0] (at topTS) between head and pop.
	top   *timerBucket[K]
	topTS int64
	spare []*timerBucket[K]
}

// smallTimerBucket is the number of keys a bucket holds before it keeps a
// set of them.
const smallTimerBucket = 8

type timerBucket[K comparable] struct {
	keys  []K
	first int            // keys[first:] are pending (or deleted, with live)
	live  map[K]struct{} // nil while the bucket is small
}

func (b *timerBucket[K]) index(key K) int {
	for i := b.first; i < len(b.keys); i++ {
		if b.keys[i] == key {
			return i
		}
	}
	return -1
}

func (b *timerBucket[K]) has(key K) bool {
	if b.live != nil {
		_, ok := b.live[key]
		return ok
	}
	return b.index(key) >= 0
}

func newTimerHeap[K comparable]() timerHeap[K] {
	return timerHeap[K]{buckets: make(map[int64]*timerBucket[K])}
}

// len is the number of pending timers.
func (h *timerHeap[K]) len() int { return h.n }

func (h *timerHeap[K]) add(key K, ts int64) bool {
	b := h.buckets[ts]
	if b == nil {
		if n := len(h.spare); n > 0 {
			b = h.spare[n-1]
			h.spare = h.spare[:n-1]
		} else {
			b = &timerBucket[K]{}
		}
		h.buckets[ts] = b
		h.pushTime(ts)
	} else if b.has(key) {
		return false
	}
	b.keys = append(b.keys, key)
	if b.live != nil {
		b.live[key] = struct{}{}
	} else if len(b.keys)-b.first > smallTimerBucket {
		b.live = make(map[K]struct{}, 2*smallTimerBucket)
		for _, k := range b.keys[b.first:] {
			b.live[k] = struct{}{}
		}
	}
	h.n++
	return true
}

func (h *timerHeap[K]) remove(key K, ts int64) bool {
	b := h.buckets[ts]
	if b == nil {
		return false
	}
	if b.live != nil {
		if _, ok := b.live[key]; !ok {
			return false
		}
		delete(b.live, key)
	} else {
		i := b.index(key)
		if i < 0 {
			return false
		}
		b.keys = slices.Delete(b.keys, i, i+1)
	}
	h.n--
	return true
}

// head returns the time of the earliest pending timer, dropping the
// deleted timers and empty buckets ahead of it.
func (h *timerHeap[K]) head() (int64, bool) {
	for len(h.times) > 0 {
		ts := h.times[0]
		b := h.top
		if b == nil || h.topTS != ts {
			b = h.buckets[ts]
			h.top, h.topTS = b, ts
		}
		for b.first < len(b.keys) {
			if b.live == nil {
				return ts, true
			}
			if _, ok := b.live[b.keys[b.first]]; ok {
				return ts, true
			}
			b.dropFirst()
		}
		h.dropTop(ts, b)
	}
	return 0, false
}

func (b *timerBucket[K]) dropFirst() {
	var zero K
	b.keys[b.first] = zero
	b.first++
}

// dropTop removes the earliest time, whose bucket b is empty.
func (h *timerHeap[K]) dropTop(ts int64, b *timerBucket[K]) {
	delete(h.buckets, ts)
	h.popTime()
	h.top = nil
	if b.live == nil && cap(b.keys) <= 4*smallTimerBucket && len(h.spare) < 64 {
		clear(b.keys[:b.first])
		b.keys, b.first = b.keys[:0], 0
		h.spare = append(h.spare, b)
	}
}

// pop takes the earliest pending timer; there must be one.
func (h *timerHeap[K]) pop() (K, int64) {
	h.head()
	ts, b := h.topTS, h.top
	key := b.keys[b.first]
	b.dropFirst()
	if b.live != nil {
		delete(b.live, key)
	}
	h.n--
	if b.first == len(b.keys) {
		h.dropTop(ts, b)
	}
	return key, ts
}

// pending lists the pending timers, by time and then in the order they
// were registered.
func (h *timerHeap[K]) pending() []timerID[K] {
	times := slices.Clone(h.times)
	slices.Sort(times)
	out := make([]timerID[K], 0, h.n)
	for _, ts := range times {
		b := h.buckets[ts]
		var seen map[K]struct{}
		if b.live != nil {
			seen = make(map[K]struct{}, len(b.live))
		}
		for _, k := range b.keys[b.first:] {
			if b.live != nil {
				if _, ok := b.live[k]; !ok {
					continue
				}
				if _, dup := seen[k]; dup {
					continue // deleted and set again: it fires once
				}
				seen[k] = struct{}{}
			}
			out = append(out, timerID[K]{k, ts})
		}
	}
	return out
}

func (h *timerHeap[K]) pushTime(ts int64) {
	h.times = append(h.times, ts)
	i := len(h.times) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h.times[parent] <= ts {
			break
		}
		h.times[i] = h.times[parent]
		i = parent
	}
	h.times[i] = ts
}

func (h *timerHeap[K]) popTime() {
	n := len(h.times) - 1
	last := h.times[n]
	h.times = h.times[:n]
	if n == 0 {
		return
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.times[c+1] < h.times[c] {
			c++
		}
		if last <= h.times[c] {
			break
		}
		h.times[i] = h.times[c]
		i = c
	}
	h.times[i] = last
}

// Snapshot encodes the pending timers (key and timestamp of each).
func (s *TimerService[K]) Snapshot() ([]byte, error) {
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("timers: %w", err)
	}
	var buf []byte
	for _, h := range []*timerHeap[K]{&s.event, &s.proc} {
		ts := h.pending()
		buf = codec.Uint64.Append(buf, uint64(len(ts)))
		for _, t := range ts {
			buf = codec.Int64.Append(kc.Append(buf, t.key), t.ts)
		}
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
