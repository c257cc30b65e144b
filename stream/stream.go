package stream

import (
	"fmt"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// Stream is a stream of records of type T: the output of one operator, a
// side output, or a union of several streams. A Stream value also carries
// how records reach the next operator (its partitioning).
type Stream[T any] struct {
	env    *Environment
	node   *graph.StreamNode // the producing operator; nil for a union
	inputs []streamInput
	types  *recordTypes[T]
}

// streamInput is one upstream a consumer of the stream connects to.
type streamInput struct {
	node       graph.NodeID
	sideOutput string
	part       graph.Partitioning
	// partitioner builds the runtime.PartitionerFactory for HASH and CUSTOM
	// edges once the consumer node is known.
	partitioner func(target *graph.StreamNode) any
	// combiner, if set, is the edge's runtime.CombinerFactory.
	combiner any
}

// recordTypes is the runtime glue for T plus the reason T has no codec, if
// it has none; such a type may still flow between chained operators.
type recordTypes[T any] struct {
	*runtime.Types[T]
	err error
}

func (r *recordTypes[T]) codecErr() error { return r.err }

func newRecordTypes[T any]() *recordTypes[T] {
	c, err := codec.For[T]()
	return &recordTypes[T]{Types: runtime.NewTypes(c), err: err}
}

// Environment returns the stream's environment.
func (s *Stream[T]) Environment() *Environment { return s.env }

func (s *Stream[T]) settable(what string) bool {
	if s.node == nil {
		s.env.fail(fmt.Errorf("stream: cannot set %s on a union of streams; set it on the operators", what))
		return false
	}
	return true
}

// Name sets the operator's name, used in plans, metrics and errors.
func (s *Stream[T]) Name(name string) *Stream[T] {
	if s.settable("a name") {
		s.node.Name = name
	}
	return s
}

// UID sets the operator's stable ID, which matches its state in
// checkpoints and savepoints across changes of the program.
func (s *Stream[T]) UID(uid string) *Stream[T] {
	if s.settable("a UID") {
		s.node.UID = uid
	}
	return s
}

// Parallelism is the operator's number of parallel subtasks as set with
// SetParallelism, or 0 when it takes the job's default. For a union it is
// the parallelism all the union's operators share, or 0 when they differ.
func (s *Stream[T]) Parallelism() int {
	if s.node != nil {
		return s.node.Parallelism
	}
	p := -1
	for _, in := range s.inputs {
		switch n := s.env.graph.Node(in.node).Parallelism; {
		case p < 0:
			p = n
		case p != n:
			return 0
		}
	}
	return max(p, 0)
}

// SetParallelism sets the operator's number of parallel subtasks.
func (s *Stream[T]) SetParallelism(n int) *Stream[T] {
	if s.settable("the parallelism") {
		setParallelism(s.env, s.node, n)
	}
	return s
}

// SetMaxParallelism sets the operator's number of key groups: the upper
// bound for rescaling its keyed state.
func (s *Stream[T]) SetMaxParallelism(n int) *Stream[T] {
	if s.settable("the max parallelism") {
		setMaxParallelism(s.env, s.node, n)
	}
	return s
}

// SlotSharingGroup puts the operator in a slot sharing group; operators of
// different groups never share a slot.
func (s *Stream[T]) SlotSharingGroup(group string) *Stream[T] {
	if s.settable("a slot sharing group") {
		s.node.SlotSharingGroup = group
	}
	return s
}

// DisableChaining keeps the operator out of any chain.
func (s *Stream[T]) DisableChaining() *Stream[T] {
	if s.settable("chaining") {
		s.node.Chaining = graph.ChainNever
	}
	return s
}

// StartNewChain starts a new chain at this operator.
func (s *Stream[T]) StartNewChain() *Stream[T] {
	if s.settable("chaining") {
		s.node.Chaining = graph.ChainHead
	}
	return s
}

// Codec sets the codec of the stream's records, for types the built-in
// codecs do not handle or handle too slowly.
func (s *Stream[T]) Codec(c codec.Codec[T]) *Stream[T] {
	s.types.Codec = c
	s.types.err = nil
	return s
}

func setParallelism(env *Environment, n *graph.StreamNode, p int) {
	if p < 1 {
		env.fail(fmt.Errorf("stream: %s: parallelism %d must be at least 1", n.DisplayName(), p))
		return
	}
	n.Parallelism = p
}

func setMaxParallelism(env *Environment, n *graph.StreamNode, p int) {
	if p < 1 || p > 32768 {
		env.fail(fmt.Errorf("stream: %s: max parallelism %d must be between 1 and 32768", n.DisplayName(), p))
		return
	}
	n.MaxParallelism = p
}

func (s *Stream[T]) withPartitioning(p graph.Partitioning) *Stream[T] {
	out := *s
	out.inputs = make([]streamInput, len(s.inputs))
	for i, in := range s.inputs {
		in.part = p
		in.partitioner, in.combiner = nil, nil
		out.inputs[i] = in
	}
	return &out
}

// Forward sends every record to the consumer subtask with the same index;
// it needs equal parallelism and lets the operators chain.
func (s *Stream[T]) Forward() *Stream[T] { return s.withPartitioning(graph.PartitionForward) }

// Rebalance distributes records round-robin over all consumer subtasks.
func (s *Stream[T]) Rebalance() *Stream[T] { return s.withPartitioning(graph.PartitionRebalance) }

// Rescale distributes records round-robin over a subset of consumer
// subtasks, so that a producer talks to few consumers.
func (s *Stream[T]) Rescale() *Stream[T] { return s.withPartitioning(graph.PartitionRescale) }

// Shuffle sends every record to a random consumer subtask.
func (s *Stream[T]) Shuffle() *Stream[T] { return s.withPartitioning(graph.PartitionShuffle) }

// Broadcast sends every record to every consumer subtask.
func (s *Stream[T]) Broadcast() *Stream[T] { return s.withPartitioning(graph.PartitionBroadcast) }

// Global sends every record to the first consumer subtask.
func (s *Stream[T]) Global() *Stream[T] { return s.withPartitioning(graph.PartitionGlobal) }

// PartitionCustom routes each record to the subtask partition(key(v), n)
// returns, where n is the consumer's parallelism.
func PartitionCustom[T, K any](s *Stream[T], partition func(key K, n int) int, key func(T) K) *Stream[T] {
	out := s.withPartitioning(graph.PartitionCustom)
	for i := range out.inputs {
		out.inputs[i].partitioner = func(target *graph.StreamNode) any {
			return runtime.PartitionerFactory[T](func(producer, channels int) runtime.Partitioner[T] {
				return &customPartitioner[T, K]{fn: partition, key: key, n: channels, target: target}
			})
		}
	}
	return out
}

type customPartitioner[T, K any] struct {
	fn     func(K, int) int
	key    func(T) K
	n      int
	target *graph.StreamNode
}

func (p *customPartitioner[T, K]) Select(v T) int {
	c := p.fn(p.key(v), p.n)
	if c < 0 || c >= p.n {
		panic(fmt.Errorf("custom partitioner returned %d for %d subtasks of %s", c, p.n, p.target.DisplayName()))
	}
	return c
}

// Union merges streams of the same type into one, without any order
// between them.
func Union[T any](first *Stream[T], more ...*Stream[T]) *Stream[T] {
	out := &Stream[T]{env: first.env, types: first.types}
	out.inputs = append(out.inputs, first.inputs...)
	for _, s := range more {
		if s.env != first.env {
			first.env.fail(fmt.Errorf("stream: Union of streams from different environments"))
			continue
		}
		out.inputs = append(out.inputs, s.inputs...)
	}
	return out
}

// addNode creates an operator node consuming in (on input 1) and returns its
// output stream.
func addNode[In, Out any](in *Stream[In], kind, name string, ops *runtime.NodeOps) *Stream[Out] {
	n := in.env.graph.AddNode(&graph.StreamNode{Kind: kind, Name: name, Inputs: 1, Ops: ops})
	connectInput(in, n, 1)
	return newStream[Out](in.env, n)
}

func newStream[T any](env *Environment, n *graph.StreamNode) *Stream[T] {
	return &Stream[T]{env: env, node: n, inputs: []streamInput{{node: n.ID}}, types: newRecordTypes[T]()}
}

func connectInput[T any](in *Stream[T], target *graph.StreamNode, input int) {
	for _, src := range in.inputs {
		e := &graph.StreamEdge{
			Source:       src.node,
			Target:       target.ID,
			Input:        input,
			Partitioning: src.part,
			SideOutput:   src.sideOutput,
			Type:         in.types,
		}
		if src.partitioner != nil {
			e.Partitioner = src.partitioner(target)
		}
		e.Combiner = src.combiner
		in.env.graph.AddEdge(e)
	}
}

// oneInput wraps an operator constructor into the node's runtime factory.
func oneInput[In, Out any](newOp func(oc *runtime.OperatorContext, out runtime.Output[Out]) (runtime.Output[In], error)) *runtime.NodeOps {
	return &runtime.NodeOps{
		NewOperator: func(oc *runtime.OperatorContext, out any) (any, error) {
			o, _ := out.(runtime.Output[Out])
			if o == nil {
				o = discardOutput[Out]{}
			}
			return newOp(oc, o)
		},
		RunHead: runOneInputHead[In],
	}
}

func runOneInputHead[In any](t *runtime.Task, head any, gates [2]any) error {
	return runtime.RunOneInput(t, head.(runtime.Output[In]), gates[0].(*runtime.InputGate[In]))
}

type discardOutput[T any] struct{}

func (discardOutput[T]) Emit(T, int64)       {}
func (discardOutput[T]) EmitWatermark(int64) {}

// Transform adds a custom one-input operator: newOp receives the
// operator's context and its output and returns its input. It is how the
// window and join operators are built; kind and name appear in plans and
// errors. The operator's input is keyed if s came from a KeyedStream.
func Transform[In, Out any](s *Stream[In], kind, name string, newOp func(oc *runtime.OperatorContext, out runtime.Output[Out]) (runtime.Output[In], error)) *Stream[Out] {
	return addNode[In, Out](s, kind, name, oneInput(newOp))
}

// TransformTwoInput adds a custom two-input operator; newOp returns a
// runtime.TwoInput[A, B].
func TransformTwoInput[A, B, Out any](cs *ConnectedStreams[A, B], kind, name string, newOp func(oc *runtime.OperatorContext, out runtime.Output[Out]) (runtime.TwoInput[A, B], error)) *Stream[Out] {
	env := cs.a.env
	ops := &runtime.NodeOps{
		NewOperator: func(oc *runtime.OperatorContext, out any) (any, error) {
			o, _ := out.(runtime.Output[Out])
			if o == nil {
				o = discardOutput[Out]{}
			}
			return newOp(oc, o)
		},
		RunHead: func(t *runtime.Task, head any, gates [2]any) error {
			return runtime.RunTwoInput(t, head.(runtime.TwoInput[A, B]), gates[0].(*runtime.InputGate[A]), gates[1].(*runtime.InputGate[B]))
		},
	}
	n := env.graph.AddNode(&graph.StreamNode{Kind: kind, Name: name, Inputs: 2, Ops: ops})
	connectInput(cs.a, n, 1)
	connectInput(cs.b, n, 2)
	return newStream[Out](env, n)
}

// SideOutputOf returns the runtime output of a side-output tag in an
// operator built with Transform (nil when nobody consumes it).
func SideOutputOf[X any](oc *runtime.OperatorContext, tag OutputTag[X]) runtime.Output[X] {
	if out, ok := oc.SideOutputs[tag.id]; ok {
		return out.(runtime.Output[X])
	}
	return nil
}
