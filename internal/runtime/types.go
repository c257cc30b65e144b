// Package runtime executes job graphs: tasks that run operator chains from
// a mailbox loop, the exchange of batched buffers between tasks with
// credit-based flow control, and the local mini cluster.
//
// The per-record path is typed end to end: chained operators call each
// other through Output[T], record writers append to typed buffers, and
// only an exchange that leaves the process (or one forced to serialize)
// encodes records with their codec.
package runtime

import (
	"math"
)

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp int64 = math.MinInt64

// MaxWatermark is the watermark a bounded input emits at its end: every
// event-time timer and window fires.
const MaxWatermark int64 = math.MaxInt64

// Output receives what an operator emits. A chained operator is itself the
// Output of its predecessor, so a chain is a sequence of direct calls.
type Output[T any] interface {
	// Emit passes one record and its timestamp (NoTimestamp if none).
	Emit(v T, ts int64)
	// EmitWatermark passes a watermark: no record with a smaller
	// timestamp is expected any more.
	EmitWatermark(wm int64)
}

// StatusOutput is implemented by outputs that pass on watermark status:
// an idle input (a source split or channel without data) must not hold
// back the watermark downstream. Operators that do not implement it stop
// the status, which is safe: they keep the last watermark.
type StatusOutput interface {
	EmitWatermarkStatus(idle bool)
}

// EmitStatus passes a watermark status to out if it takes one.
func EmitStatus(out any, idle bool) {
	if s, ok := out.(StatusOutput); ok {
		s.EmitWatermarkStatus(idle)
	}
}

// TwoInput is the head of a chain with two logical inputs (Connect).
type TwoInput[A, B any] interface {
	Emit1(v A, ts int64)
	Emit2(v B, ts int64)
	// EmitWatermark receives the combined watermark of both inputs.
	EmitWatermark(wm int64)
}

// Lifecycle is implemented by operators that need to act when the task
// starts, when their input ends, or when the task stops.
type Lifecycle interface {
	// Open runs before the first record.
	Open() error
	// Finish runs when all input has ended, head of the chain first; an
	// operator may still emit (for example final aggregates).
	Finish() error
	// Close runs last, after success or failure, and releases resources.
	Close() error
}

// EventKind distinguishes the in-band events a buffer may carry instead of
// records.
type EventKind uint8

const (
	eventNone EventKind = iota
	// EventEndOfPartition: the producer has finished; no more buffers will
	// arrive on the channel.
	EventEndOfPartition
	// EventWatermark carries a watermark.
	EventWatermark
	// EventIdle and EventActive carry a watermark status change.
	EventIdle
	EventActive
	// EventBarrier is a checkpoint barrier: everything before it on the
	// channel belongs to the checkpoint, everything after it does not.
	EventBarrier
	// EventSuperstep ends a superstep of an iteration (iteration.go): the
	// channel's records of that superstep all came before it.
	EventSuperstep
)

// Event is an in-band event. Events travel on the same channel as records,
// so they keep their position in the stream (checkpoint barriers will too).
type Event struct {
	Kind       EventKind
	Watermark  int64
	Checkpoint int64
	Superstep  int64
}

// Buffer is the unit of exchange between tasks: a batch of records with
// their timestamps, or a single event.
type Buffer[T any] struct {
	// Channel is the index of the input channel at the consumer.
	Channel    int
	Records    []T
	Timestamps []int64
	Event      Event
	// credit is the semaphore slot the buffer holds at its gate; the
	// consumer releases it when it recycles the buffer.
	credit chan struct{}
}

// Len returns the number of records in the buffer.
func (b *Buffer[T]) Len() int { return len(b.Records) }

func (b *Buffer[T]) reset() {
	clear(b.Records) // drop references so the GC can free recycled records
	b.Records = b.Records[:0]
	b.Timestamps = b.Timestamps[:0]
	b.Event = Event{}
	b.credit = nil
	b.Channel = 0
}
