package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weirproject/weir/codec"
)

// GateConfig sizes an input gate's credits, Flink style: every channel has
// exclusive credits, and the gate has floating credits any channel may use
// when it runs ahead of the others.
type GateConfig struct {
	BuffersPerChannel int
	FloatingBuffers   int
}

// InputGate is where a consumer subtask receives the buffers of all
// channels of one logical input. A producer must hold a credit to send a
// buffer, and the consumer returns the credit when it has processed the
// buffer, so the records in flight into a gate never exceed its credits
// times the buffer size: a slow consumer backpressures its producers
// instead of growing memory. The same credits will be announced over TCP
// by the network exchange.
type InputGate[T any] struct {
	queue     chan *Buffer[T]
	exclusive []chan struct{}
	floating  chan struct{}
	pool      *sync.Pool
	// buffered counts records sent into the gate and not yet recycled.
	buffered atomic.Int64
	// maxBuffered records the high-water mark of buffered, for tests and
	// metrics.
	maxBuffered atomic.Int64
	// bytesIn counts the encoded bytes that arrived from other processes.
	bytesIn atomic.Int64
	// priority carries the barriers of unaligned checkpoints: they take
	// no credit and are read before the queued buffers, which they
	// overtake.
	priority chan priorityBarrier
	// codec encodes the records in flight that an unaligned checkpoint
	// keeps; records inside the process are typed, so only the gate's
	// creator knows it.
	codec codec.Codec[T]
}

// priorityBarrier is a checkpoint barrier sent past the queued buffers of
// its channel. Since it leaves its place in the stream, it carries that
// place: sent is the number of buffers (records and events) the producer
// had put on the channel before it, so that the consumer still knows
// which buffers precede it.
type priorityBarrier struct {
	channel int
	id      int64
	sent    int64
	// align asks the consumers to align although unaligned checkpoints
	// are on: savepoints must not hold records in flight.
	align bool
}

func newInputGate[T any](channels int, cfg GateConfig, pool *sync.Pool) *InputGate[T] {
	if cfg.BuffersPerChannel < 1 {
		cfg.BuffersPerChannel = 1
	}
	g := &InputGate[T]{
		// Capacity equals all credits, so a send that holds a credit never
		// blocks on the queue itself.
		queue:     make(chan *Buffer[T], channels*cfg.BuffersPerChannel+cfg.FloatingBuffers),
		exclusive: make([]chan struct{}, channels),
		pool:      pool,
	}
	for i := range g.exclusive {
		g.exclusive[i] = make(chan struct{}, cfg.BuffersPerChannel)
	}
	if cfg.FloatingBuffers > 0 {
		g.floating = make(chan struct{}, cfg.FloatingBuffers)
	}
	// Room for a few checkpoints' barriers per channel: a consumer that is
	// itself backpressured reads them only between two buffers.
	g.priority = make(chan priorityBarrier, 4*channels)
	return g
}

// useTypes gives the gate its record codec from the record type's glue,
// which the API may wrap (embedding *Types[T]).
func (g *InputGate[T]) useTypes(types TypeOps) {
	if t, ok := types.(interface{ recordCodec() codec.Codec[T] }); ok {
		g.codec = t.recordCodec()
	}
}

func (t *Types[T]) recordCodec() codec.Codec[T] { return t.Codec }

// NumChannels returns the number of producer channels of the gate.
func (g *InputGate[T]) NumChannels() int { return len(g.exclusive) }

// Buffered returns the number of records in flight into the gate.
func (g *InputGate[T]) Buffered() int64 { return g.buffered.Load() }

// BytesIn returns the bytes that arrived over the network.
func (g *InputGate[T]) BytesIn() int64 { return g.bytesIn.Load() }

// Usage returns the fraction of the gate's buffers (credits) that hold
// data not yet processed.
func (g *InputGate[T]) Usage() float64 {
	return float64(len(g.queue)) / float64(max(1, cap(g.queue)))
}

// MaxBuffered returns the most records that were ever in flight at once.
func (g *InputGate[T]) MaxBuffered() int64 { return g.maxBuffered.Load() }

// Recycle returns a processed buffer's credit to its producer and the
// buffer to the pool.
func (g *InputGate[T]) Recycle(b *Buffer[T]) {
	// The count goes down before the credit goes back: the other way
	// round, the producer could send on the returned credit first, and the
	// count would show one buffer more than the credits allow.
	if n := len(b.Records); n > 0 {
		g.buffered.Add(-int64(n))
	}
	if b.credit != nil {
		<-b.credit
	}
	b.reset()
	g.pool.Put(b)
}

// ChannelWriter sends buffers to one consumer channel.
type ChannelWriter[T any] interface {
	// Send blocks until the channel has a credit, then hands the buffer
	// over; the caller must not touch the buffer afterwards.
	Send(ctx context.Context, b *Buffer[T]) error
}

// localChannel passes buffers to a gate in the same process without
// copying.
type localChannel[T any] struct {
	gate  *InputGate[T]
	index int
	// sent counts the buffers put into the gate's queue, the position a
	// priority barrier reports.
	sent int64
	// waits is the producing task's back pressure clock; nil for a
	// channel that a network bridge feeds.
	waits *waitClock
}

func (c *localChannel[T]) setCounters(w waitCounters) { c.waits = w.backPressured }

func (c *localChannel[T]) usage() float64 {
	credits := c.gate.exclusive[c.index]
	return float64(len(credits)) / float64(max(1, cap(credits)))
}

func (c *localChannel[T]) Send(ctx context.Context, b *Buffer[T]) error {
	credits := c.gate.exclusive[c.index]
	select {
	case credits <- struct{}{}:
		b.credit = credits
	default:
		// No exclusive credit: the consumer is behind, and the task
		// waits (back pressure) unless a floating buffer is free.
		if c.waits != nil {
			c.waits.start()
		}
		select {
		case credits <- struct{}{}:
			b.credit = credits
		case c.gate.floating <- struct{}{}:
			b.credit = c.gate.floating
		case <-ctx.Done():
			return ctx.Err()
		}
		if c.waits != nil {
			c.waits.stop()
		}
	}
	b.Channel = c.index
	if n := int64(len(b.Records)); n > 0 {
		now := c.gate.buffered.Add(n)
		for {
			high := c.gate.maxBuffered.Load()
			if now <= high || c.gate.maxBuffered.CompareAndSwap(high, now) {
				break
			}
		}
	}
	c.gate.queue <- b
	c.sent++
	return nil
}

// SendPriority sends a barrier that overtakes the channel's queued
// buffers; it needs no credit.
func (c *localChannel[T]) SendPriority(ctx context.Context, id int64, align bool) error {
	select {
	case c.gate.priority <- priorityBarrier{channel: c.index, id: id, sent: c.sent, align: align}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prioritySender is implemented by channels that can send barriers past
// their queued buffers.
type prioritySender interface {
	SendPriority(ctx context.Context, id int64, align bool) error
}

// serializingChannel encodes every buffer with the record codec and
// decodes it into a fresh buffer, exactly what the network exchange does on
// its two ends. Running a job with pipeline.force-serialization proves that
// nothing on the record path relies on producer and consumer sharing
// memory.
type serializingChannel[T any] struct {
	local   localChannel[T]
	codec   codec.Codec[T]
	pool    *sync.Pool
	scratch []byte
}

func (c *serializingChannel[T]) Send(ctx context.Context, b *Buffer[T]) error {
	frame, err := encodeBuffer(c.codec, c.scratch[:0], b)
	if err != nil {
		return err
	}
	c.scratch = frame
	b.reset()
	c.pool.Put(b)
	out := c.pool.Get().(*Buffer[T])
	if err := decodeBuffer(c.codec, frame, out); err != nil {
		return err
	}
	return c.local.Send(ctx, out)
}

func (c *serializingChannel[T]) setCounters(w waitCounters) { c.local.setCounters(w) }

func (c *serializingChannel[T]) usage() float64 { return c.local.usage() }

// SendPriority sends a barrier past the queued buffers; a barrier holds no
// records, so there is nothing to serialize.
func (c *serializingChannel[T]) SendPriority(ctx context.Context, id int64, align bool) error {
	return c.local.SendPriority(ctx, id, align)
}

// encodeBuffer appends the wire form of a buffer: an event kind byte, then
// either the watermark or the records and their timestamps.
func encodeBuffer[T any](c codec.Codec[T], dst []byte, b *Buffer[T]) ([]byte, error) {
	dst = append(dst, byte(b.Event.Kind))
	switch b.Event.Kind {
	case eventNone:
		dst = codec.AppendSlice(c, dst, b.Records)
		dst = appendTimestamps(dst, b.Timestamps)
	case EventWatermark:
		dst = codec.Int64.Append(dst, b.Event.Watermark)
	case EventBarrier:
		dst = codec.Int64.Append(dst, b.Event.Checkpoint)
	case EventSuperstep:
		dst = codec.Int64.Append(dst, b.Event.Superstep)
	case EventEndOfPartition, EventIdle, EventActive:
	default:
		return nil, fmt.Errorf("runtime: cannot encode event kind %d", b.Event.Kind)
	}
	return dst, nil
}

func decodeBuffer[T any](c codec.Codec[T], src []byte, b *Buffer[T]) error {
	if len(src) == 0 {
		return fmt.Errorf("runtime: empty buffer frame: %w", codec.ErrCorrupt)
	}
	b.Event.Kind = EventKind(src[0])
	src = src[1:]
	var err error
	switch b.Event.Kind {
	case eventNone:
		var n int
		if b.Records, n, err = codec.DecodeSlice(c, b.Records[:0], src); err != nil {
			return fmt.Errorf("runtime: decode records: %w", err)
		}
		if b.Timestamps, err = decodeTimestamps(b.Timestamps[:0], len(b.Records), src[n:]); err != nil {
			return fmt.Errorf("runtime: decode timestamps: %w", err)
		}
	case EventWatermark:
		if b.Event.Watermark, _, err = codec.Int64.Decode(src); err != nil {
			return fmt.Errorf("runtime: decode watermark: %w", err)
		}
	case EventBarrier:
		if b.Event.Checkpoint, _, err = codec.Int64.Decode(src); err != nil {
			return fmt.Errorf("runtime: decode barrier: %w", err)
		}
	case EventSuperstep:
		if b.Event.Superstep, _, err = codec.Int64.Decode(src); err != nil {
			return fmt.Errorf("runtime: decode superstep: %w", err)
		}
	case EventEndOfPartition, EventIdle, EventActive:
	default:
		return fmt.Errorf("runtime: unknown event kind %d: %w", b.Event.Kind, codec.ErrCorrupt)
	}
	return nil
}

// The timestamps of a buffer's records follow them as a mode byte and,
// unless none of the records has one, the differences between
// consecutive timestamps (the first from 0) as zigzag varints: records
// without timestamps cost one byte per buffer, and event times that
// advance slowly a byte or two per record instead of ten.
const (
	timestampsNone   = 0
	timestampsDeltas = 1
)

func appendTimestamps(dst []byte, ts []int64) []byte {
	none := true
	for _, t := range ts {
		if t != math.MinInt64 {
			none = false
			break
		}
	}
	if none {
		return append(dst, timestampsNone)
	}
	dst = append(dst, timestampsDeltas)
	prev := int64(0)
	for _, t := range ts {
		dst = binary.AppendVarint(dst, t-prev) // wraps, and wraps back
		prev = t
	}
	return dst
}

func decodeTimestamps(dst []int64, n int, src []byte) ([]int64, error) {
	if len(src) == 0 {
		return dst, fmt.Errorf("no timestamps: %w", codec.ErrCorrupt)
	}
	switch src[0] {
	case timestampsNone:
		start := len(dst)
		dst = slices.Grow(dst, n)[:start+n]
		for i := start; i < len(dst); i++ {
			dst[i] = math.MinInt64
		}
	case timestampsDeltas:
		src = src[1:]
		prev := int64(0)
		for range n {
			d, m := binary.Varint(src)
			if m <= 0 {
				return dst, fmt.Errorf("%d timestamps for %d records: %w", len(dst), n, codec.ErrCorrupt)
			}
			prev += d
			dst = append(dst, prev)
			src = src[m:]
		}
	default:
		return dst, fmt.Errorf("unknown timestamp encoding %d: %w", src[0], codec.ErrCorrupt)
	}
	return dst, nil
}
