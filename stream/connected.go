package stream

import (
	"fmt"

	"github.com/weirproject/weir/internal/runtime"
)

// ConnectedStreams pairs two streams, possibly of different types, for an
// operator with two inputs that may share state.
type ConnectedStreams[A, B any] struct {
	a *Stream[A]
	b *Stream[B]
}

// Connect pairs two streams.
func Connect[A, B any](a *Stream[A], b *Stream[B]) *ConnectedStreams[A, B] {
	if a.env != b.env {
		a.env.fail(fmt.Errorf("stream: Connect of streams from different environments"))
	}
	return &ConnectedStreams[A, B]{a: a, b: b}
}

// CoProcessFunction processes the records of two connected inputs.
type CoProcessFunction[A, B, U any] interface {
	ProcessElement1(v A, ctx *Context, out Collector[U]) error
	ProcessElement2(v B, ctx *Context, out Collector[U]) error
}

// CoMap maps each input with its own function into one output type.
func CoMap[A, B, U any](cs *ConnectedStreams[A, B], f1 func(A) U, f2 func(B) U) *Stream[U] {
	return addTwoInput(cs, "co-map", "Co-Map", coFuncs[A, B, U]{
		f1: func(v A, _ *Context, out Collector[U]) error { out.Collect(f1(v)); return nil },
		f2: func(v B, _ *Context, out Collector[U]) error { out.Collect(f2(v)); return nil },
	})
}

// CoFlatMap flat-maps each input with its own function into one output
// type.
func CoFlatMap[A, B, U any](cs *ConnectedStreams[A, B], f1 func(A, Collector[U]), f2 func(B, Collector[U])) *Stream[U] {
	return addTwoInput(cs, "co-flat-map", "Co-Flat Map", coFuncs[A, B, U]{
		f1: func(v A, _ *Context, out Collector[U]) error { f1(v, out); return nil },
		f2: func(v B, _ *Context, out Collector[U]) error { f2(v, out); return nil },
	})
}

// CoProcess applies a co-process function.
func CoProcess[A, B, U any](cs *ConnectedStreams[A, B], fn CoProcessFunction[A, B, U]) *Stream[U] {
	return addTwoInput(cs, "co-process", "Co-Process", fn)
}

type coFuncs[A, B, U any] struct {
	f1 func(A, *Context, Collector[U]) error
	f2 func(B, *Context, Collector[U]) error
}

func (c coFuncs[A, B, U]) ProcessElement1(v A, ctx *Context, out Collector[U]) error {
	return c.f1(v, ctx, out)
}

func (c coFuncs[A, B, U]) ProcessElement2(v B, ctx *Context, out Collector[U]) error {
	return c.f2(v, ctx, out)
}

func addTwoInput[A, B, U any](cs *ConnectedStreams[A, B], kind, name string, fn CoProcessFunction[A, B, U]) *Stream[U] {
	return TransformTwoInput(cs, kind, name, func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.TwoInput[A, B], error) {
		op := &coProcessOp[A, B, U]{oc: oc, fn: Instance(fn), ctx: Context{oc: oc, ts: runtime.NoTimestamp}}
		op.col.oc, op.col.out = oc, out
		oc.Register(op)
		return op, nil
	})
}

type coProcessOp[A, B, U any] struct {
	oc  *runtime.OperatorContext
	fn  CoProcessFunction[A, B, U]
	ctx Context
	col collector[U]
}

func (p *coProcessOp[A, B, U]) Emit1(v A, ts int64) {
	p.oc.Enter()
	p.ctx.ts, p.col.ts = ts, ts
	if err := p.fn.ProcessElement1(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *coProcessOp[A, B, U]) Emit2(v B, ts int64) {
	p.oc.Enter()
	p.ctx.ts, p.col.ts = ts, ts
	if err := p.fn.ProcessElement2(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

func (p *coProcessOp[A, B, U]) EmitWatermark(wm int64) {
	p.col.out.EmitWatermark(wm)
	p.oc.ForwardToSideOutputs(wm)
}
func (p *coProcessOp[A, B, U]) EmitWatermarkStatus(idle bool) {
	runtime.EmitStatus(p.col.out, idle)
	p.oc.ForwardStatusToSideOutputs(idle)
}

func (p *coProcessOp[A, B, U]) Open() error { return openFunction(p.oc, p.fn, &p.ctx) }

func (p *coProcessOp[A, B, U]) Finish() error {
	if f, ok := p.fn.(Finisher[U]); ok {
		p.oc.Enter()
		return f.Finish(&p.ctx, &p.col)
	}
	return nil
}

func (p *coProcessOp[A, B, U]) Close() error { return closeFunction(p.oc, p.fn) }
