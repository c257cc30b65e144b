package runtime

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/network"
)

// TypeOps is the runtime glue for one record type: the stream API creates
// it where the type is known, and the runtime uses it to build gates,
// channels and writers without knowing the type. Everything it returns is
// typed; only construction goes through any.
type TypeOps interface {
	// NewGate returns an *InputGate[T].
	NewGate(channels int, cfg GateConfig) any
	// NewChannel returns a ChannelWriter[T] into channel index of gate.
	NewChannel(gate any, index int, serialize bool) any
	// NewRemoteChannel returns a ChannelWriter[T] whose consumer is in
	// another process, reached through s.
	NewRemoteChannel(s *network.Sender, maxFrame int) any
	// BridgeRemote moves what arrives at a network gate into gate, an
	// *InputGate[T]; channel maps network channel indexes to the gate's.
	BridgeRemote(ctx context.Context, from *network.Gate, gate any, channel func(int) int) error
	// NewBlockingChannel returns a ChannelWriter[T] that writes a blocking
	// partition to f and closes f at the end of the partition.
	NewBlockingChannel(f *os.File) any
	// ReplayBlocking reads blocking partitions into gate, an
	// *InputGate[T], the one of channel i from paths[i] (none if empty).
	ReplayBlocking(ctx context.Context, paths []string, gate any) error
	// ServeBlocking sends the blocking partition at path through s to a
	// consumer in another worker.
	ServeBlocking(ctx context.Context, path string, s *network.Sender, maxFrame int) error
	// NewRecordWriter returns a *RecordWriter[T] over the channels.
	NewRecordWriter(t *Task, channels []any, kind graph.Partitioning, factory any, producer int) (any, error)
	// FanOut combines Output[T] values into one.
	FanOut(outs []any) any
	// Discard returns an Output[T] that drops everything.
	Discard() any
	// TypeName names T for errors.
	TypeName() string
}

// Types implements TypeOps for T.
type Types[T any] struct {
	Codec codec.Codec[T]
	pool  sync.Pool
}

// NewTypes returns the glue for T with its codec.
func NewTypes[T any](c codec.Codec[T]) *Types[T] {
	t := &Types[T]{Codec: c}
	t.pool.New = func() any { return new(Buffer[T]) }
	return t
}

func (t *Types[T]) NewGate(channels int, cfg GateConfig) any {
	return newInputGate[T](channels, cfg, &t.pool)
}

func (t *Types[T]) NewChannel(gate any, index int, serialize bool) any {
	local := localChannel[T]{gate: gate.(*InputGate[T]), index: index}
	if serialize {
		return &serializingChannel[T]{local: local, codec: t.Codec, pool: &t.pool}
	}
	return &local
}

func (t *Types[T]) NewRemoteChannel(s *network.Sender, maxFrame int) any {
	return newRemoteChannel(s, t.Codec, &t.pool, maxFrame)
}

func (t *Types[T]) BridgeRemote(ctx context.Context, from *network.Gate, gate any, channel func(int) int) error {
	return bridgeRemote(ctx, from, gate.(*InputGate[T]), channel, t.Codec)
}

func (t *Types[T]) NewBlockingChannel(f *os.File) any {
	return newBlockingChannel(f, t.Codec, &t.pool)
}

func (t *Types[T]) ReplayBlocking(ctx context.Context, paths []string, gate any) error {
	return replayBlocking(ctx, paths, gate.(*InputGate[T]), t.Codec)
}

func (t *Types[T]) ServeBlocking(ctx context.Context, path string, s *network.Sender, maxFrame int) error {
	return serveBlocking(ctx, path, s, &t.pool, t.Codec, maxFrame)
}

func (t *Types[T]) NewRecordWriter(task *Task, channels []any, kind graph.Partitioning, factory any, producer int) (any, error) {
	if len(channels) == 0 {
		return nil, fmt.Errorf("runtime: %s: record writer without channels", task.Name())
	}
	w := &RecordWriter[T]{
		task:      task,
		channels:  make([]ChannelWriter[T], len(channels)),
		pending:   make([]*Buffer[T], len(channels)),
		capacity:  task.bufferRecords,
		pool:      &t.pool,
		broadcast: kind == graph.PartitionBroadcast,
	}
	for i, c := range channels {
		w.channels[i] = c.(ChannelWriter[T])
		w.pending[i] = t.pool.Get().(*Buffer[T])
		if cc, ok := c.(countingChannel); ok {
			cc.setCounters(waitCounters{backPressured: &task.backPressured, bytesOut: &task.bytesOut})
		}
	}
	if !w.broadcast {
		p, err := newPartitioner[T](kind, factory, producer, len(channels))
		if err != nil {
			return nil, err
		}
		w.part = p
	}
	task.writers = append(task.writers, w)
	return w, nil
}

func (t *Types[T]) FanOut(outs []any) any {
	switch len(outs) {
	case 0:
		return discard[T]{}
	case 1:
		return outs[0].(Output[T])
	}
	f := make(fanOut[T], len(outs))
	for i, o := range outs {
		f[i] = o.(Output[T])
	}
	return f
}

func (t *Types[T]) Discard() any { return discard[T]{} }

func (t *Types[T]) TypeName() string { return fmt.Sprintf("%T", *new(T)) }

// NodeOps is the runtime factory of one stream node, created by the API
// where the node's types are known.
type NodeOps struct {
	// NewOperator builds the operator given its main output (an Output[Out],
	// nil for sinks). It returns the operator's input: an Output[In] for
	// one-input operators, a TwoInput[A, B] for two-input ones, and a
	// SourceHead for sources.
	NewOperator func(oc *OperatorContext, out any) (any, error)
	// RunHead runs a task whose chain this node heads, with its input gates
	// (*InputGate[In]; the second only for two-input nodes).
	RunHead func(t *Task, head any, gates [2]any) error
	// Splits enumerates a source's splits; nil for other nodes.
	Splits func(ctx context.Context, parallelism int) ([]connector.Split, error)
	// Iteration describes the iteration a head node starts; nil elsewhere.
	Iteration *IterationSpec
}
