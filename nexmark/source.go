package nexmark

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/weirproject/weir/codec"
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

// Digest is an order-independent fingerprint of a multiset of results:
// their number and the sum of their hashes. Engine and loop produce the
// same digest exactly when they produce the same results, in any order
// (up to a 64-bit hash collision).
type Digest struct {
	Count int64
	Sum   uint64
}

func (d Digest) String() string { return fmt.Sprintf("%d results, hash %016x", d.Count, d.Sum) }

// digester hashes values of one result type. Values are hashed through
// their binary encoding (the codec the network uses) when the type has
// one, and through their JSON line otherwise.
type digester[T any] struct {
	c   codec.Codec[T]
	buf []byte
}

func newDigester[T any]() *digester[T] {
	c, _ := codec.For[T]()
	return &digester[T]{c: c}
}

func (h *digester[T]) add(d *Digest, v T) {
	if h.c != nil {
		h.buf = h.c.Append(h.buf[:0], v)
	} else {
		h.buf = append(h.buf[:0], jsonLine(v)...)
	}
	d.Count++
	// A sum is order-independent; mixing the hash first keeps equal
	// results from cancelling out as they would under XOR.
	d.Sum += xxhash.Sum64(h.buf) * 0x9e3779b97f4a7c15
}

// DigestSink is a sink that drops records as Blackhole does, after
// adding each to a Digest.
type DigestSink[T any] struct {
	mu sync.Mutex
	d  Digest
}

// Digest is the digest of the records received so far (complete after
// the job ends).
func (s *DigestSink[T]) Digest() Digest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d
}

// NewWriter implements connector.Sink.
func (s *DigestSink[T]) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[T], error) {
	return &digestWriter[T]{s: s, h: newDigester[T]()}, nil
}

type digestWriter[T any] struct {
	s *DigestSink[T]
	h *digester[T]
	d Digest
}

func (w *digestWriter[T]) Write(v T, _ int64) error { w.h.add(&w.d, v); return nil }

func (w *digestWriter[T]) Flush() error {
	w.s.mu.Lock()
	w.s.d.Count += w.d.Count
	w.s.d.Sum += w.d.Sum
	w.s.mu.Unlock()
	w.d = Digest{}
	return nil
}

func (w *digestWriter[T]) Close() error { return nil }

// ToDigest sends s into a new DigestSink.
func ToDigest[T any](s *stream.Stream[T]) *DigestSink[T] {
	d := &DigestSink[T]{}
	stream.SinkTo[T](s, d, "Digest")
	return d
}
