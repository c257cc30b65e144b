package stream

import (
	"fmt"
	"sync"

	"github.com/weirproject/weir/codec"
	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/graph"
	"github.com/weirproject/weir/internal/runtime"
)

// Iterations over bounded data, as the seeds' bulk and delta iterations:
// a step function builds the loop's operators once; the job then runs them
// superstep after superstep, synchronised across all subtasks. Inside the
// loop, operators that gather (Reduce, Sum, JoinWithStatic,
// MapWithBroadcastSet, JoinWithSolutionSet) emit at the end of each
// superstep. An iteration takes no checkpoints: its job restarts from the
// beginning after a failure.

// Iteration is the handle a step function gets: it registers aggregators
// and convergence criteria.
type Iteration struct {
	env  *Environment
	spec *runtime.IterationSpec
	// criteria end the iteration after a superstep (k >= 1) with the
	// superstep's global aggregates.
	criteria []func(k int64, aggs []any) bool
	// worksetAgg is the index of the delta iteration's workset counter,
	// -1 in a bulk iteration.
	worksetAgg int
	head       *graph.StreamNode
	// joins read a delta iteration's solution set: they run with the
	// head's parallelism.
	joins []*graph.StreamNode
}

// ID returns the iteration's ID within the job.
func (it *Iteration) ID() string { return it.spec.ID }

func newIteration(env *Environment, maxSupersteps int) *Iteration {
	env.iterations++
	it := &Iteration{env: env, worksetAgg: -1, spec: &runtime.IterationSpec{ID: fmt.Sprintf("iteration-%d", env.iterations), MaxSupersteps: int64(maxSupersteps)}}
	it.spec.Converged = func(k int64, aggs []any) bool {
		if it.worksetAgg >= 0 && *aggs[it.worksetAgg].(*int64) == 0 {
			return true // the workset is empty
		}
		if k == 0 {
			return false
		}
		for _, c := range it.criteria {
			if c(k, aggs) {
				return true
			}
		}
		return false
	}
	if maxSupersteps < 1 {
		env.fail(fmt.Errorf("stream: %s: maxSupersteps %d, want at least 1", it.spec.ID, maxSupersteps))
	}
	return it
}

// Aggregator is a value that every subtask of an iteration's loop adds to
// during a superstep; its global value (over all subtasks) is readable in
// the next superstep and after the iteration.
type Aggregator[V any] struct {
	it    *Iteration
	index int
	name  string
	merge func(a, b V) V
}

// NewAggregator registers an aggregator with the iteration: merge combines
// two values and must be associative and commutative; the zero value of V
// is its identity. V needs a codec: aggregates cross processes.
func NewAggregator[V any](it *Iteration, name string, merge func(a, b V) V) *Aggregator[V] {
	c, err := codec.For[V]()
	if err != nil {
		it.env.fail(fmt.Errorf("stream: aggregator %q: %w", name, err))
	}
	a := &Aggregator[V]{it: it, index: len(it.spec.Aggregators), name: name, merge: merge}
	it.spec.Aggregators = append(it.spec.Aggregators, runtime.AggregatorSpec{
		Name:  name,
		New:   func() any { return new(V) },
		Merge: func(into, from any) { p := into.(*V); *p = merge(*p, *from.(*V)) },
		Encode: func(v any) ([]byte, error) {
			return c.Append(nil, *v.(*V)), nil
		},
		Decode: func(b []byte) (any, error) {
			v, _, err := c.Decode(b)
			if err != nil {
				return nil, err
			}
			return &v, nil
		},
	})
	return a
}

// SumAggregator registers an aggregator that sums numbers.
func SumAggregator[N Number](it *Iteration, name string) *Aggregator[N] {
	return NewAggregator(it, name, func(a, b N) N { return a + b })
}

// CountAggregator registers an aggregator that counts; Add(ctx, 1) per
// event.
func CountAggregator(it *Iteration, name string) *Aggregator[int64] {
	return SumAggregator[int64](it, name)
}

// Add adds v to the aggregator in the running superstep. ctx must be the
// context of an operator inside the iteration's loop.
func (a *Aggregator[V]) Add(ctx *Context, v V) {
	ti := a.taskIteration(ctx)
	p := ti.Accumulator(a.index).(*V)
	*p = a.merge(*p, v)
}

func (a *Aggregator[V]) taskIteration(ctx *Context) *runtime.TaskIteration {
	ti := ctx.oc.Task.Iteration()
	if ti == nil || ti.Spec() != a.it.spec {
		ctx.oc.Fail(fmt.Errorf("aggregator %q of %s used outside its loop", a.name, a.it.spec.ID))
	}
	return ti
}

// Previous returns the aggregator's global value of the previous
// superstep: the zero value in the first.
func (a *Aggregator[V]) Previous(ctx *Context) V {
	d, err := a.taskIteration(ctx).Previous()
	if err != nil {
		ctx.oc.Fail(err)
	}
	if d == nil {
		var zero V
		return zero
	}
	return *d.Aggregates[a.index].(*V)
}

// Final returns the aggregator's global value of the iteration's last
// superstep, for operators downstream of the iteration; it waits until
// the iteration ended.
func (a *Aggregator[V]) Final(ctx *Context) V {
	d, err := ctx.oc.Task.IterationResult(a.it.spec.ID)
	if err != nil {
		ctx.oc.Fail(err)
	}
	return *d.Aggregates[a.index].(*V)
}

// ConvergeWhen ends the iteration after the first superstep whose global
// aggregate satisfies done (before the maximum number of supersteps).
func ConvergeWhen[V any](a *Aggregator[V], done func(superstep int, v V) bool) {
	a.it.criteria = append(a.it.criteria, func(k int64, aggs []any) bool { return done(int(k), *aggs[a.index].(*V)) })
}

// TerminationCriterion ends the iteration after the first superstep in
// which s, a stream of the loop, carried no record (Flink's termination
// criterion of a bulk iteration).
func TerminationCriterion[X any](it *Iteration, s *Stream[X]) {
	count := CountAggregator(it, fmt.Sprintf("%s-criterion-%d", it.spec.ID, len(it.criteria)))
	ConvergeWhen(count, func(_ int, n int64) bool { return n == 0 })
	addNode[X, struct{}](s, "iteration-criterion", "TerminationCriterion", oneInput(func(oc *runtime.OperatorContext, _ runtime.Output[struct{}]) (runtime.Output[X], error) {
		return &criterionOp[X]{ctx: &Context{oc: oc}, count: count}, nil
	}))
}

type criterionOp[X any] struct {
	ctx   *Context
	count *Aggregator[int64]
}

func (c *criterionOp[X]) Emit(X, int64)       { c.count.Add(c.ctx, 1) }
func (c *criterionOp[X]) EmitWatermark(int64) {}

// Superstep returns the number of the superstep an operator inside an
// iteration is in, from 1; 0 outside iterations.
func Superstep(ctx *Context) int {
	if ti := ctx.oc.Task.Iteration(); ti != nil {
		return int(ti.Superstep())
	}
	return 0
}

// Iterate runs a bulk iteration over the bounded stream input: step gets
// the partial solution of a superstep and returns the next one, for at
// most maxSupersteps supersteps (fewer when a criterion registered with
// ConvergeWhen or TerminationCriterion holds). The result is the partial
// solution after the last superstep. Each subtask's partial solution is
// kept in memory between supersteps.
func Iterate[T any](input *Stream[T], maxSupersteps int, step func(it *Iteration, partial *Stream[T]) *Stream[T]) *Stream[T] {
	env := input.env
	it := newIteration(env, maxSupersteps)
	id := it.spec.ID
	head := addNode[T, T](input, "iteration-head", "Iterate", &runtime.NodeOps{
		NewOperator: func(oc *runtime.OperatorContext, out any) (any, error) {
			op := &bulkHead[T]{oc: oc, fb: feedbackOf[T](oc, id)}
			op.loop, _ = out.(runtime.Output[T])
			if op.loop == nil {
				op.loop = discardOutput[T]{}
			}
			op.result = SideOutputOf(oc, iterationResultTag[T](id))
			oc.Register(op)
			return op, nil
		},
		RunHead:   runOneInputHead[T],
		Iteration: it.spec,
	})
	// The head heads its task: the task runs the supersteps from it.
	head.node.Chaining = graph.ChainHead
	it.head = head.node
	next := step(it, head)
	if next == nil || next.env != env {
		env.fail(fmt.Errorf("stream: %s: the step function returned no stream of this environment", id))
		return head
	}
	tail := addNode[T, struct{}](next, "iteration-tail", "Iterate tail", oneInput(func(oc *runtime.OperatorContext, _ runtime.Output[struct{}]) (runtime.Output[T], error) {
		op := &tailOp[T]{fb: feedbackOf[T](oc, id)}
		oc.Register(op)
		return op, nil
	}))
	it.close(tail.node)
	return iterationResult(head, iterationResultTag[T](id))
}

// close marks the loop: every node reachable from the head, and the
// tails, which must run with the head's parallelism in its slots.
func (it *Iteration) close(tails ...*graph.StreamNode) {
	g := it.env.graph
	it.head.Iteration, it.head.IterationHead = it.spec.ID, true
	in := map[graph.NodeID]bool{it.head.ID: true}
	for changed := true; changed; {
		changed = false
		for _, e := range g.Edges {
			if in[e.Source] && !in[e.Target] && e.SideOutput != iterationResultTag[struct{}](it.spec.ID).id {
				in[e.Target] = true
				changed = true
			}
		}
	}
	for id := range in {
		n := g.Node(id)
		if n.Iteration != "" && n.Iteration != it.spec.ID {
			it.env.fail(fmt.Errorf("stream: %s belongs to %s and %s; iterations do not nest or share operators", n.DisplayName(), n.Iteration, it.spec.ID))
		}
		n.Iteration = it.spec.ID
	}
	for _, t := range tails {
		t.Iteration = it.spec.ID
		t.Parallelism, t.MaxParallelism = it.head.Parallelism, it.head.MaxParallelism
		t.SlotSharingGroup = it.head.SlotSharingGroup
	}
}

// iterationResult is the stream of what the head emits once the
// iteration ended; it starts a chain of its own, so that nothing outside
// the loop runs in a loop task.
func iterationResult[H, T any](head *Stream[H], tag OutputTag[T]) *Stream[T] {
	out := addNode[T, T](GetSideOutput(head, tag), "iteration-result", "Iterate result", oneInput(func(_ *runtime.OperatorContext, out runtime.Output[T]) (runtime.Output[T], error) {
		return out, nil
	}))
	out.node.Chaining = graph.ChainHead
	return out
}

func iterationResultTag[T any](id string) OutputTag[T] { return NewOutputTag[T](id + "-result") }

// feedback carries a subtask's next partial solution (or workset) from
// the tail to the head, superstep by superstep, in this process.
type feedback[T any] struct {
	mu     sync.Mutex
	byStep map[int64][]T
}

func feedbackOf[T any](oc *runtime.OperatorContext, id string) *feedback[T] {
	key := fmt.Sprintf("%s/feedback/%d", id, oc.Task.Subtask())
	return oc.Task.Shared(key, func() any { return &feedback[T]{byStep: make(map[int64][]T)} }).(*feedback[T])
}

func (f *feedback[T]) put(k int64, v []T) {
	f.mu.Lock()
	f.byStep[k] = v
	f.mu.Unlock()
}

func (f *feedback[T]) take(k int64) []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.byStep[k]
	delete(f.byStep, k)
	return v
}

// bulkHead collects its subtask's part of the initial partial solution,
// then runs the supersteps from Finish: emit the partial solution into
// the loop, end the superstep, wait for the decision, take the tail's
// output as the next partial solution.
type bulkHead[T any] struct {
	oc      *runtime.OperatorContext
	loop    runtime.Output[T]
	result  runtime.Output[T]
	fb      *feedback[T]
	initial []T
}

func (h *bulkHead[T]) Emit(v T, _ int64) { h.initial = append(h.initial, v) }

// EmitWatermark keeps watermarks out of the loop: supersteps, not event
// time, order its records. The result's consumers see the end of input.
func (h *bulkHead[T]) EmitWatermark(int64) {}

func (h *bulkHead[T]) Open() error  { return nil }
func (h *bulkHead[T]) Close() error { return nil }

func (h *bulkHead[T]) Finish() error {
	ti := h.oc.Task.Iteration()
	d, err := ti.Ready()
	if err != nil {
		return err
	}
	partial := h.initial
	h.initial = nil
	for !d.Terminate {
		for _, v := range partial {
			h.loop.Emit(v, runtime.NoTimestamp)
		}
		k := ti.Superstep()
		if d, err = ti.EndSuperstep(); err != nil {
			return err
		}
		partial = h.fb.take(k)
	}
	if h.result != nil {
		for _, v := range partial {
			h.result.Emit(v, runtime.NoTimestamp)
		}
	}
	return nil
}

// tailOp gathers a subtask's output of a superstep and hands it to the
// head at the superstep's end.
type tailOp[T any] struct {
	fb  *feedback[T]
	buf []T
	// count, when set, counts the records (a delta iteration's workset).
	count func(n int)
}

func (t *tailOp[T]) Emit(v T, _ int64)   { t.buf = append(t.buf, v) }
func (t *tailOp[T]) EmitWatermark(int64) {}
func (t *tailOp[T]) Open() error         { return nil }
func (t *tailOp[T]) Finish() error       { return nil }
func (t *tailOp[T]) Close() error        { return nil }

func (t *tailOp[T]) EndSuperstep(k int64) error {
	if t.count != nil {
		t.count(len(t.buf))
	}
	t.fb.put(k, t.buf)
	// The next superstep's output is about as large: start with room.
	t.buf = make([]T, 0, len(t.buf))
	return nil
}

// checkIterations rejects what iterations do not support.
func (env *Environment) checkIterations() error {
	if env.iterations == 0 {
		return nil
	}
	if config.CheckpointInterval.Get(env.cfg) > 0 {
		return fmt.Errorf("stream: iterations take no checkpoints (a failure restarts the job from the beginning); turn off %s", config.CheckpointInterval.Key)
	}
	return nil
}
