package stream

import (
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/state"
)

// BroadcastContext is the context of a broadcast process function: its
// broadcast state is writable while processing broadcast elements and
// read-only otherwise.
type BroadcastContext struct {
	Context
	broadcast *state.Broadcast
}

// BroadcastState returns the subtask's broadcast state, for
// state.BroadcastMap; handles may be created once in Open.
func (c *BroadcastContext) BroadcastState() *state.Broadcast { return c.broadcast }

// BroadcastProcessFunction joins a stream with a broadcast stream of
// rules, configuration or a small dimension table: every subtask sees
// every broadcast element and keeps it in broadcast state, which the
// elements of the regular stream read.
type BroadcastProcessFunction[T, B, U any] interface {
	ProcessElement(v T, ctx *BroadcastContext, out Collector[U]) error
	ProcessBroadcastElement(b B, ctx *BroadcastContext, out Collector[U]) error
}

// BroadcastOpener is implemented by broadcast functions that create state
// handles before the first element.
type BroadcastOpener interface {
	Open(ctx *BroadcastContext) error
}

// ConnectBroadcast broadcasts b to every subtask of an operator that
// processes s with fn. The broadcast side does not wait for anything:
// elements of s may arrive before the broadcast elements they need, as in
// Flink; buffer them in keyed state if that matters.
func ConnectBroadcast[T, B, U any](s *Stream[T], b *Stream[B], fn BroadcastProcessFunction[T, B, U]) *Stream[U] {
	cs := &ConnectedStreams[T, B]{a: s, b: b.Broadcast()}
	return TransformTwoInput(cs, "broadcast-process", "BroadcastProcess", func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.TwoInput[T, B], error) {
		op := &broadcastOp[T, B, U]{oc: oc, fn: Instance(fn)}
		op.ctx = BroadcastContext{Context: Context{oc: oc, ts: runtime.NoTimestamp}, broadcast: state.NewBroadcast()}
		op.col.oc, op.col.out = oc, out
		oc.Register(op)
		return op, nil
	})
}

type broadcastOp[T, B, U any] struct {
	oc  *runtime.OperatorContext
	fn  BroadcastProcessFunction[T, B, U]
	ctx BroadcastContext
	col collector[U]
}

func (p *broadcastOp[T, B, U]) Emit1(v T, ts int64) {
	p.oc.Enter()
	p.ctx.ts, p.col.ts = ts, ts
	p.ctx.broadcast.SetReadOnly(true)
	if err := p.fn.ProcessElement(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *broadcastOp[T, B, U]) Emit2(v B, ts int64) {
	p.oc.Enter()
	p.ctx.ts, p.col.ts = ts, ts
	p.ctx.broadcast.SetReadOnly(false)
	if err := p.fn.ProcessBroadcastElement(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *broadcastOp[T, B, U]) EmitWatermark(wm int64) {
	p.col.out.EmitWatermark(wm)
	p.oc.ForwardToSideOutputs(wm)
}
func (p *broadcastOp[T, B, U]) EmitWatermarkStatus(idle bool) {
	runtime.EmitStatus(p.col.out, idle)
	p.oc.ForwardStatusToSideOutputs(idle)
}

func (p *broadcastOp[T, B, U]) Open() error {
	if o, ok := p.fn.(BroadcastOpener); ok {
		p.oc.Enter()
		return o.Open(&p.ctx)
	}
	return openFunction(p.oc, p.fn, &p.ctx.Context)
}

func (p *broadcastOp[T, B, U]) Finish() error {
	if f, ok := p.fn.(Finisher[U]); ok {
		p.oc.Enter()
		return f.Finish(&p.ctx.Context, &p.col)
	}
	return nil
}

func (p *broadcastOp[T, B, U]) Close() error { return closeFunction(p.oc, p.fn) }
