package nexmark

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/stream"
)

// OutOfOrderness is the watermark delay of the reference Nexmark DDL
// (WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND).
const OutOfOrderness = 4 * time.Second

// Source is the bounded source of events 0 to n−1 (unbounded when n < 0):
// a stream.Generator, so its splits (one per subtask, each generating
// every parallelism-th event) run in parallel and are checkpointed as
// positions with the generator's JSON SplitSerializer.
func Source(c Config, n int64) *stream.Generator[Event] {
	return &stream.Generator[Event]{Count: n, Fn: c.Event, Timestamps: c.Timestamp}
}

// Events adds the Nexmark source of n events to env, with event
// timestamps (DateTime) and watermarks OutOfOrderness behind them,
// generated per split in the source.
func Events(env *stream.Environment, c Config, n int64) *stream.Stream[Event] {
	return withWatermarks(env, Source(c, n))
}

// EventsOf adds a source of the given events, for example made in advance
// with Generate, with timestamps and watermarks as Events: a benchmark
// that leaves the cost of generating them out.
func EventsOf(env *stream.Environment, events []Event) *stream.Stream[Event] {
	return withWatermarks(env, &stream.Generator[Event]{
		Count:      int64(len(events)),
		Fn:         func(i int64) Event { return events[i] },
		Timestamps: func(i int64) int64 { return events[i].Timestamp() },
	})
}

func withWatermarks(env *stream.Environment, src *stream.Generator[Event]) *stream.Stream[Event] {
	strategy := stream.ForBoundedOutOfOrderness[Event](OutOfOrderness).
		WithTimestampAssigner(func(e Event, _ int64) int64 { return e.Timestamp() })
	return stream.FromSourceWithWatermarks[Event](env, src, "Nexmark", strategy).Name("Nexmark").UID("nexmark-source")
}

// Blackhole is a sink that counts the records it gets and drops them, as
// the blackhole connector of the reference benchmark.
type Blackhole[T any] struct {
	n atomic.Int64
}

// Count is the number of records received so far (complete after the
// job ends).
func (b *Blackhole[T]) Count() int64 { return b.n.Load() }

// NewWriter implements connector.Sink.
func (b *Blackhole[T]) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[T], error) {
	return &blackholeWriter[T]{b: b}, nil
}

type blackholeWriter[T any] struct {
	b *Blackhole[T]
	n int64
}

func (w *blackholeWriter[T]) Write(T, int64) error { w.n++; return nil }

func (w *blackholeWriter[T]) Flush() error {
	w.b.n.Add(w.n)
	w.n = 0
	return nil
}

func (w *blackholeWriter[T]) Close() error { return nil }

// ToBlackhole sends s into a new Blackhole sink.
func ToBlackhole[T any](s *stream.Stream[T]) *Blackhole[T] {
	b := &Blackhole[T]{}
	stream.SinkTo[T](s, b, "Blackhole")
	return b
}
