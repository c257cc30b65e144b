package file

import (
	"context"
	"sync"
	"time"
)

// A Pacer slows a FormatSource's reading down to one record at a time, by
// permission: a bounded benchmark that reads at a given rate (RatePacer),
// or a test that decides when each record may come. With a pacer, a Poll
// emits at most one record, and only in the Poll after the one that got
// the permission: between two Polls the task serves its mailbox, so that
// what happened before the permission (a processing-time timer that
// fired, such as the periodic watermark) takes effect before the record.
type Pacer interface {
	// Next waits at most a short while (a few milliseconds: the task
	// serves its mailbox only between Polls) for the permission of
	// subtask to read one more record, and reports whether it got it.
	Next(ctx context.Context, subtask int) bool
	// Emitted is called after the permitted record was emitted.
	Emitted(subtask int)
	// Closed is called when the subtask's reader closes, after the task
	// has finished its output when the input ended.
	Closed(subtask int)
}

// Pace reads the files through p (nil for none). It returns s.
func (s *FormatSource[T]) Pace(p Pacer) *FormatSource[T] {
	s.pacer = p
	return s
}

// RatePacer lets each subtask read perSecond records a second on the wall
// clock.
func RatePacer(perSecond float64) Pacer {
	return &ratePacer{every: time.Duration(float64(time.Second) / perSecond), next: map[int]time.Time{}}
}

type ratePacer struct {
	every time.Duration
	mu    sync.Mutex
	next  map[int]time.Time // by subtask
}

func (p *ratePacer) Next(ctx context.Context, subtask int) bool {
	p.mu.Lock()
	at, ok := p.next[subtask]
	p.mu.Unlock()
	if wait := time.Until(at); ok && wait > 0 {
		t := time.NewTimer(min(wait, pacePoll))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
		if time.Now().Before(at) {
			return false
		}
	}
	if !ok {
		at = time.Now()
	}
	p.mu.Lock()
	p.next[subtask] = at.Add(p.every)
	p.mu.Unlock()
	return true
}

func (p *ratePacer) Emitted(int) {}
func (p *ratePacer) Closed(int)  {}

// pacePoll bounds how long a paced Poll waits, so that the task keeps
// serving its mailbox (checkpoints, timers) while the source waits.
const pacePoll = 2 * time.Millisecond
