package stream

import (
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/state"
)

// TimeDomain says which clock fired a timer.
type TimeDomain int

const (
	// EventTime timers fire when the watermark passes them.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire when the task's clock passes them.
	ProcessingTime
)

// KeyedContext is the context of a keyed process function: the current
// key, its keyed state and its timers.
type KeyedContext[K comparable] struct {
	Context
	backend *state.Backend[K]
	timers  *runtime.TimerService[K]
	domain  TimeDomain
}

// CurrentKey returns the key of the record or timer being processed.
func (c *KeyedContext[K]) CurrentKey() K { return c.backend.CurrentKey() }

// State returns the operator's keyed state backend, for state.Value,
// state.List and state.Map; handles may be created once in Open and used
// for every key.
func (c *KeyedContext[K]) State() *state.Backend[K] { return c.backend }

// TimeDomain returns the domain of the timer being handled in OnTimer.
func (c *KeyedContext[K]) TimeDomain() TimeDomain { return c.domain }

// CurrentWatermark returns the operator's event time.
func (c *KeyedContext[K]) CurrentWatermark() int64 { return c.timers.CurrentWatermark() }

// CurrentProcessingTime returns the operator's processing time.
func (c *KeyedContext[K]) CurrentProcessingTime() int64 { return c.timers.CurrentProcessingTime() }

// RegisterEventTimeTimer sets a timer for the current key; registering the
// same key and time twice sets one timer.
func (c *KeyedContext[K]) RegisterEventTimeTimer(ts int64) {
	c.timers.RegisterEventTimeTimer(c.backend.CurrentKey(), ts)
}

// DeleteEventTimeTimer removes the current key's timer at ts.
func (c *KeyedContext[K]) DeleteEventTimeTimer(ts int64) {
	c.timers.DeleteEventTimeTimer(c.backend.CurrentKey(), ts)
}

// RegisterProcessingTimeTimer sets a processing-time timer for the current
// key.
func (c *KeyedContext[K]) RegisterProcessingTimeTimer(ts int64) {
	c.timers.RegisterProcessingTimeTimer(c.backend.CurrentKey(), ts)
}

// DeleteProcessingTimeTimer removes the current key's processing-time
// timer at ts.
func (c *KeyedContext[K]) DeleteProcessingTimeTimer(ts int64) {
	c.timers.DeleteProcessingTimeTimer(c.backend.CurrentKey(), ts)
}

// KeyedProcessFunction processes a keyed stream with keyed state and
// timers. Implement KeyedTimerHandler to receive timers and KeyedOpener to
// create state handles.
type KeyedProcessFunction[K comparable, T, U any] interface {
	ProcessElement(v T, ctx *KeyedContext[K], out Collector[U]) error
}

// KeyedTimerHandler receives the timers a keyed process function set;
// ctx.CurrentKey is the timer's key.
type KeyedTimerHandler[K comparable, U any] interface {
	OnTimer(ts int64, ctx *KeyedContext[K], out Collector[U]) error
}

// KeyedOpener is implemented by keyed functions that set up state handles
// before the first record.
type KeyedOpener[K comparable] interface {
	Open(ctx *KeyedContext[K]) error
}

// KeyedProcess applies a keyed process function.
func KeyedProcess[K comparable, T, U any](ks *KeyedStream[K, T], fn KeyedProcessFunction[K, T, U]) *Stream[U] {
	return addNode[T, U](ks.s, "keyed-process", "KeyedProcess", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[U]) (runtime.Output[T], error) {
		op := &keyedProcessOp[K, T, U]{oc: oc, fn: instance(fn), key: ks.key}
		op.ctx = KeyedContext[K]{Context: Context{oc: oc, ts: runtime.NoTimestamp}, backend: state.NewBackend[K]()}
		op.ctx.timers = runtime.NewTimerService(oc, op.onEventTime, op.onProcessingTime)
		op.col.oc, op.col.out = oc, out
		op.onTimer, _ = op.fn.(KeyedTimerHandler[K, U])
		oc.Register(op)
		return op, nil
	}))
}

type keyedProcessOp[K comparable, T, U any] struct {
	oc      *runtime.OperatorContext
	fn      KeyedProcessFunction[K, T, U]
	onTimer KeyedTimerHandler[K, U]
	key     func(T) K
	ctx     KeyedContext[K]
	col     collector[U]
}

func (p *keyedProcessOp[K, T, U]) Emit(v T, ts int64) {
	p.oc.Enter()
	p.ctx.backend.SetCurrentKey(p.key(v))
	p.ctx.ts, p.col.ts = ts, ts
	if err := p.fn.ProcessElement(v, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
}

// EmitWatermark fires the event-time timers the watermark passed, then
// forwards it: results of timers precede the watermark downstream.
func (p *keyedProcessOp[K, T, U]) EmitWatermark(wm int64) {
	p.ctx.timers.AdvanceWatermark(wm)
	p.col.out.EmitWatermark(wm)
}

func (p *keyedProcessOp[K, T, U]) EmitWatermarkStatus(idle bool) { runtime.EmitStatus(p.col.out, idle) }

func (p *keyedProcessOp[K, T, U]) fire(key K, ts int64, domain TimeDomain) {
	if p.onTimer == nil {
		return
	}
	p.ctx.backend.SetCurrentKey(key)
	p.ctx.domain = domain
	p.ctx.ts, p.col.ts = ts, ts
	if domain == ProcessingTime {
		p.ctx.ts, p.col.ts = runtime.NoTimestamp, runtime.NoTimestamp
	}
	if err := p.onTimer.OnTimer(ts, &p.ctx, &p.col); err != nil {
		p.oc.Fail(err)
	}
	p.ctx.domain = EventTime
}

func (p *keyedProcessOp[K, T, U]) onEventTime(key K, ts int64)      { p.fire(key, ts, EventTime) }
func (p *keyedProcessOp[K, T, U]) onProcessingTime(key K, ts int64) { p.fire(key, ts, ProcessingTime) }

func (p *keyedProcessOp[K, T, U]) Open() error {
	if o, ok := p.fn.(KeyedOpener[K]); ok {
		p.oc.Enter()
		return o.Open(&p.ctx)
	}
	return openFunction(p.oc, p.fn, &p.ctx.Context)
}

func (p *keyedProcessOp[K, T, U]) Finish() error {
	if f, ok := p.fn.(Finisher[U]); ok {
		p.oc.Enter()
		return f.Finish(&p.ctx.Context, &p.col)
	}
	return nil
}

func (p *keyedProcessOp[K, T, U]) Close() error { return closeFunction(p.oc, p.fn) }
