package runtime

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/weirproject/weir/internal/graph"
)

// Partitioner picks the target channel of a record among a producer's
// connected consumer channels.
type Partitioner[T any] interface {
	Select(v T) int
}

// PartitionerFactory builds the partitioner of one producer subtask for an
// edge whose routing depends on the record (HASH, CUSTOM).
type PartitionerFactory[T any] func(producer, channels int) Partitioner[T]

// KeyGroupPartitioner routes a record to the subtask that owns its key's
// key group.
type KeyGroupPartitioner[K, T any] struct {
	Key            func(T) K
	Hash           KeyHasher[K]
	MaxParallelism int
	Channels       int
}

func (p *KeyGroupPartitioner[K, T]) Select(v T) int {
	kg := KeyGroupFor(p.Hash(p.Key(v)), p.MaxParallelism)
	return OperatorIndexForKeyGroup(kg, p.MaxParallelism, p.Channels)
}

type roundRobin[T any] struct{ next, n int }

func (p *roundRobin[T]) Select(T) int {
	c := p.next
	p.next++
	if p.next == p.n {
		p.next = 0
	}
	return c
}

type shuffle[T any] struct {
	rng *rand.Rand
	n   int
}

func (p *shuffle[T]) Select(T) int { return p.rng.IntN(p.n) }

type global[T any] struct{}

func (global[T]) Select(T) int { return 0 }

func newPartitioner[T any](kind graph.Partitioning, factory any, producer, channels int) (Partitioner[T], error) {
	switch kind {
	case graph.PartitionForward, graph.PartitionGlobal:
		return global[T]{}, nil
	case graph.PartitionRebalance:
		// Start producers at different channels so that small inputs
		// still spread.
		return &roundRobin[T]{next: producer % channels, n: channels}, nil
	case graph.PartitionRescale:
		return &roundRobin[T]{n: channels}, nil
	case graph.PartitionShuffle:
		return &shuffle[T]{rng: rand.New(rand.NewPCG(uint64(producer), 0x9e3779b97f4a7c15)), n: channels}, nil
	case graph.PartitionHash, graph.PartitionCustom:
		f, ok := factory.(PartitionerFactory[T])
		if !ok {
			return nil, fmt.Errorf("runtime: %s edge without a partitioner for its record type", kind)
		}
		return f(producer, channels), nil
	}
	return nil, fmt.Errorf("runtime: unknown partitioning %q", kind)
}

// Writer is the non-generic face of a record writer, for the task.
type Writer interface {
	// Flush sends every non-empty pending buffer.
	Flush()
	// EndOfPartition flushes and tells every channel that no more data
	// will come.
	EndOfPartition()
	// Barrier flushes and sends a checkpoint barrier on every channel.
	Barrier(checkpointID int64)
	// PriorityBarrier flushes and sends a barrier of an unaligned
	// checkpoint on every channel: it overtakes the buffers queued at the
	// consumer. With align the consumers align on it all the same.
	PriorityBarrier(checkpointID int64, align bool)
	// Superstep flushes and ends superstep k of an iteration on every
	// channel.
	Superstep(k int64)
}

// RecordWriter is the Output at the end of a chain: it batches records per
// target channel and sends full buffers. Send blocks while the channel has
// no credit; that is where backpressure stops a producer.
type RecordWriter[T any] struct {
	task      *Task
	channels  []ChannelWriter[T]
	pending   []*Buffer[T]
	capacity  int
	part      Partitioner[T]
	broadcast bool
	pool      *sync.Pool
}

// Emit adds a record to the buffer of its channel.
func (w *RecordWriter[T]) Emit(v T, ts int64) {
	if w.broadcast {
		for c := range w.pending {
			w.add(c, v, ts)
		}
		return
	}
	c := 0
	if len(w.pending) > 1 {
		c = w.part.Select(v)
	}
	w.add(c, v, ts)
}

func (w *RecordWriter[T]) add(c int, v T, ts int64) {
	b := w.pending[c]
	b.Records = append(b.Records, v)
	b.Timestamps = append(b.Timestamps, ts)
	if len(b.Records) >= w.capacity {
		w.send(c)
	}
}

func (w *RecordWriter[T]) send(c int) {
	b := w.pending[c]
	w.pending[c] = w.pool.Get().(*Buffer[T])
	w.task.recordsOut.Add(int64(len(b.Records)))
	if err := w.channels[c].Send(w.task.ctx, b); err != nil {
		w.task.abort(err)
	}
}

// EmitWatermark flushes pending records, then sends the watermark on every
// channel, so that it stays behind the records that precede it.
func (w *RecordWriter[T]) EmitWatermark(wm int64) {
	w.task.outputWatermark.Store(wm)
	w.broadcastEvent(Event{Kind: EventWatermark, Watermark: wm})
}

func (w *RecordWriter[T]) broadcastEvent(e Event) {
	for c := range w.pending {
		if len(w.pending[c].Records) > 0 {
			w.send(c)
		}
		b := w.pool.Get().(*Buffer[T])
		b.Event = e
		if err := w.channels[c].Send(w.task.ctx, b); err != nil {
			w.task.abort(err)
		}
	}
}

// EmitWatermarkStatus tells every channel that this producer became idle
// or active.
func (w *RecordWriter[T]) EmitWatermarkStatus(idle bool) {
	if idle {
		w.broadcastEvent(Event{Kind: EventIdle})
	} else {
		w.broadcastEvent(Event{Kind: EventActive})
	}
}

// usage is the highest fraction of credits in use over the writer's
// channels that can tell.
func (w *RecordWriter[T]) usage() float64 {
	u := 0.0
	for _, c := range w.channels {
		if b, ok := c.(bufferUsage); ok {
			u = max(u, b.usage())
		}
	}
	return u
}

// Flush sends every non-empty pending buffer.
func (w *RecordWriter[T]) Flush() {
	for c, b := range w.pending {
		if len(b.Records) > 0 {
			w.send(c)
		}
	}
}

// Barrier flushes and sends a checkpoint barrier on every channel.
func (w *RecordWriter[T]) Barrier(id int64) {
	w.broadcastEvent(Event{Kind: EventBarrier, Checkpoint: id})
}

// PriorityBarrier flushes, so that everything emitted before the barrier
// counts in the position it reports, and sends the barrier past the
// queued buffers of every channel.
func (w *RecordWriter[T]) PriorityBarrier(id int64, align bool) {
	w.Flush()
	for _, c := range w.channels {
		ps, ok := c.(prioritySender)
		if !ok {
			w.task.abort(fmt.Errorf("runtime: channel %T cannot send the barriers of unaligned checkpoints; turn off execution.checkpointing.unaligned.enabled", c))
		}
		if err := ps.SendPriority(w.task.ctx, id, align); err != nil {
			w.task.abort(err)
		}
	}
}

// Superstep flushes and sends the end of superstep k on every channel.
func (w *RecordWriter[T]) Superstep(k int64) {
	w.broadcastEvent(Event{Kind: EventSuperstep, Superstep: k})
}

// EndOfPartition flushes and sends the end-of-partition event.
func (w *RecordWriter[T]) EndOfPartition() {
	w.broadcastEvent(Event{Kind: EventEndOfPartition})
}

// fanOut passes records to several outputs: a node with more than one
// consumer, or a chained consumer next to a network one.
type fanOut[T any] []Output[T]

func (f fanOut[T]) Emit(v T, ts int64) {
	for _, o := range f {
		o.Emit(v, ts)
	}
}

func (f fanOut[T]) EmitWatermark(wm int64) {
	for _, o := range f {
		o.EmitWatermark(wm)
	}
}

func (f fanOut[T]) EmitWatermarkStatus(idle bool) {
	for _, o := range f {
		EmitStatus(o, idle)
	}
}

// discard is the output of a node nobody consumes (an unused side output).
type discard[T any] struct{}

func (discard[T]) Emit(T, int64)       {}
func (discard[T]) EmitWatermark(int64) {}
