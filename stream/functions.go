package stream

import (
	"fmt"
	"reflect"

	"github.com/weirproject/weir/internal/runtime"
)

// Collector receives the records a function emits.
type Collector[T any] interface {
	Collect(v T)
}

// Context is what process functions learn about the record being
// processed and the subtask running them.
type Context struct {
	oc      *runtime.OperatorContext
	ts      int64
	opState *operatorState
}

// Timestamp returns the record's event timestamp in milliseconds, if it
// has one.
func (c *Context) Timestamp() (int64, bool) { return c.ts, c.ts != runtime.NoTimestamp }

// Subtask returns the 0-based index of the running subtask.
func (c *Context) Subtask() int { return c.oc.Task.Subtask() }

// Parallelism returns the operator's parallelism.
func (c *Context) Parallelism() int { return c.oc.Task.Parallelism() }

// Attempt returns the attempt number: 0 on the first run, +1 per restart.
func (c *Context) Attempt() int { return c.oc.Task.Attempt() }

// OutputTag names a side output of records of type X.
type OutputTag[X any] struct {
	id    string
	types *recordTypes[X]
}

// NewOutputTag creates a side-output tag; the ID must be unique within the
// operator that emits to it.
func NewOutputTag[X any](id string) OutputTag[X] {
	return OutputTag[X]{id: id, types: newRecordTypes[X]()}
}

// ID returns the tag's ID.
func (t OutputTag[X]) ID() string { return t.id }

// SideOutput emits v to the side output named by tag, with the timestamp of
// the record being processed. A side output nobody consumes drops it.
func SideOutput[X any](ctx *Context, tag OutputTag[X], v X) {
	out, ok := ctx.oc.SideOutputs[tag.id]
	if !ok {
		return
	}
	out.(runtime.Output[X]).Emit(v, ctx.ts)
	ctx.oc.Enter()
}

// GetSideOutput returns the stream of a side output of s's operator.
func GetSideOutput[X, T any](s *Stream[T], tag OutputTag[X]) *Stream[X] {
	if !s.settable("a side output") {
		return &Stream[X]{env: s.env, types: tag.types}
	}
	return &Stream[X]{env: s.env, node: s.node, inputs: []streamInput{{node: s.node.ID, sideOutput: tag.id}}, types: tag.types}
}

// ProcessFunction is the most general one-input function: per record it
// may emit any number of records, to the main output or to side outputs.
type ProcessFunction[T, U any] interface {
	ProcessElement(v T, ctx *Context, out Collector[U]) error
}

// ProcessFunc adapts a function to ProcessFunction.
type ProcessFunc[T, U any] func(v T, ctx *Context, out Collector[U]) error

// ProcessElement calls f.
func (f ProcessFunc[T, U]) ProcessElement(v T, ctx *Context, out Collector[U]) error {
	return f(v, ctx, out)
}

// Opener is implemented by functions that need setup before the first
// record, for example opening a connection.
type Opener interface {
	Open(ctx *Context) error
}

// Closer is implemented by functions that release resources when the
// task stops.
type Closer interface {
	Close() error
}

// Finisher is implemented by functions that emit something when their
// input ends.
type Finisher[U any] interface {
	Finish(ctx *Context, out Collector[U]) error
}

// Map applies fn to every record.
func Map[T, U any](s *Stream[T], fn func(T) U) *Stream[U] {
	return addNode[T, U](s, "map", "Map", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.Output[T], error) {
		return &mapOp[T, U]{oc: oc, fn: fn, out: out}, nil
	}))
}

type mapOp[T, U any] struct {
	oc  *runtime.OperatorContext
	fn  func(T) U
	out runtime.Output[U]
}

func (m *mapOp[T, U]) Emit(v T, ts int64) {
	m.oc.Enter()
	m.out.Emit(m.fn(v), ts)
}

func (m *mapOp[T, U]) EmitWatermark(wm int64)        { m.out.EmitWatermark(wm) }
func (m *mapOp[T, U]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(m.out, idle) }

// FlatMap calls fn for every record; fn emits any number of records.
func FlatMap[T, U any](s *Stream[T], fn func(v T, out Collector[U])) *Stream[U] {
	return addNode[T, U](s, "flat-map", "Flat Map", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.Output[T], error) {
		op := &flatMapOp[T, U]{oc: oc, fn: fn}
		op.col.oc, op.col.out = oc, out
		return op, nil
	}))
}

// collector forwards to an output with the current record's timestamp and
// restores the error attribution to its operator after the downstream
// chain ran.
type collector[U any] struct {
	oc  *runtime.OperatorContext
	out runtime.Output[U]
	ts  int64
}

func (c *collector[U]) Collect(v U) {
	c.out.Emit(v, c.ts)
	c.oc.Enter()
}

type flatMapOp[T, U any] struct {
	oc  *runtime.OperatorContext
	fn  func(T, Collector[U])
	col collector[U]
}

func (f *flatMapOp[T, U]) Emit(v T, ts int64) {
	f.oc.Enter()
	f.col.ts = ts
	f.fn(v, &f.col)
}

func (f *flatMapOp[T, U]) EmitWatermark(wm int64)        { f.col.out.EmitWatermark(wm) }
func (f *flatMapOp[T, U]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(f.col.out, idle) }

// Filter keeps the records for which keep returns true.
func (s *Stream[T]) Filter(keep func(T) bool) *Stream[T] {
	return addNode[T, T](s, "filter", "Filter", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[T]) (runtime.Output[T], error) {
		return &filterOp[T]{oc: oc, keep: keep, out: out}, nil
	}))
}

type filterOp[T any] struct {
	oc   *runtime.OperatorContext
	keep func(T) bool
	out  runtime.Output[T]
}

func (f *filterOp[T]) Emit(v T, ts int64) {
	f.oc.Enter()
	if f.keep(v) {
		f.out.Emit(v, ts)
	}
}

func (f *filterOp[T]) EmitWatermark(wm int64)        { f.out.EmitWatermark(wm) }
func (f *filterOp[T]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(f.out, idle) }

// Process applies a process function. An error it returns fails the job
// with an error naming the operator and the subtask.
func Process[T, U any](s *Stream[T], fn ProcessFunction[T, U]) *Stream[U] {
	return addNode[T, U](s, "process", "Process", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.Output[T], error) {
		op := &processOp[T, U]{oc: oc, fn: Instance(fn), ctx: Context{oc: oc, ts: runtime.NoTimestamp,
			opState: newOperatorState(oc.Task.Subtask(), oc.Task.Parallelism())}}
		op.col.oc, op.col.out = oc, out
		oc.Register(op)
		return op, nil
	}))
}

type processOp[T, U any] struct {
	oc  *runtime.OperatorContext
	fn  ProcessFunction[T, U]
	ctx Context
	col collector[U]
	// finished: Finish ran, at the maximum watermark.
	finished bool
}

func (p *processOp[T, U]) Emit(v T, ts int64) {
	p.oc.Enter()
	p.ctx.ts, p.col.ts = ts, ts
	if err := p.fn.ProcessElement(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *processOp[T, U]) EmitWatermark(wm int64) {
	if wm == runtime.MaxWatermark {
		// The input has ended: what Finish emits goes out ahead of the
		// final watermark, so that event-time timers downstream (an
		// outer join padding its rows at the end, a window) see it.
		if err := p.Finish(); err != nil {
			p.oc.Fail(err)
		}
	}
	p.col.out.EmitWatermark(wm)
	p.oc.ForwardToSideOutputs(wm)
}
func (p *processOp[T, U]) EmitWatermarkStatus(idle bool) {
	runtime.EmitStatus(p.col.out, idle)
	p.oc.ForwardStatusToSideOutputs(idle)
}

func (p *processOp[T, U]) Open() error {
	return openFunction(p.oc, p.fn, &p.ctx)
}

func (p *processOp[T, U]) Finish() error {
	if p.finished {
		return nil
	}
	p.finished = true
	if f, ok := p.fn.(Finisher[U]); ok {
		p.oc.Enter()
		p.ctx.ts, p.col.ts = runtime.NoTimestamp, runtime.NoTimestamp
		return f.Finish(&p.ctx, &p.col)
	}
	return nil
}

func (p *processOp[T, U]) Close() error { return closeFunction(p.oc, p.fn) }

// SnapshotState checkpoints the function's operator list states.
func (p *processOp[T, U]) SnapshotState(int64) ([]byte, error) { return p.ctx.opState.snapshot() }

// RestoreState hands restored operator list states to the function's Open.
func (p *processOp[T, U]) RestoreState(data []byte) error {
	return p.ctx.opState.restore(data, p.oc.Rescaled())
}

// Instance returns the function value one subtask runs. A function held by
// pointer to a struct is copied (shallowly), so that every parallel subtask
// has its own instance, as every Flink subtask has its own deserialized
// copy: fields set before Execute are shared configuration, and state a
// function initializes in Open belongs to its subtask alone. Operators
// built on Transform use it too.
func Instance[F any](fn F) F {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fn
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	out, ok := cp.Interface().(F)
	if !ok {
		return fn
	}
	return out
}

func openFunction(oc *runtime.OperatorContext, fn any, ctx *Context) error {
	if o, ok := fn.(Opener); ok {
		oc.Enter()
		if err := o.Open(ctx); err != nil {
			return fmt.Errorf("open: %w", err)
		}
	}
	return nil
}

func closeFunction(oc *runtime.OperatorContext, fn any) error {
	if c, ok := fn.(Closer); ok {
		oc.Enter()
		return c.Close()
	}
	return nil
}
