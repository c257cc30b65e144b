package stream

import (
	"math"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
)

// WatermarkOutput receives what a watermark generator emits.
type WatermarkOutput interface {
	// EmitWatermark declares that no record with a timestamp at or below
	// wm is expected any more; watermarks that do not advance are ignored.
	EmitWatermark(wm int64)
	// MarkIdle declares the input idle: it stops holding back the
	// watermark downstream until it emits again.
	MarkIdle()
}

// WatermarkGenerator derives watermarks from the records it sees. OnEvent
// runs for every record; OnPeriodicEmit every
// pipeline.auto-watermark-interval of processing time. A punctuated
// generator emits in OnEvent; a periodic one in OnPeriodicEmit.
type WatermarkGenerator[T any] interface {
	OnEvent(v T, ts int64, out WatermarkOutput)
	OnPeriodicEmit(out WatermarkOutput)
}

// WatermarkStrategy says how a stream gets event timestamps and
// watermarks.
type WatermarkStrategy[T any] struct {
	newGenerator func() WatermarkGenerator[T]
	assign       func(v T, previous int64) int64
	idleTimeout  time.Duration
	perEvent     bool
	ingestion    bool
}

// ForBoundedOutOfOrderness expects records at most bound out of order: the
// watermark is the highest timestamp seen − bound − 1 ms.
func ForBoundedOutOfOrderness[T any](bound time.Duration) WatermarkStrategy[T] {
	b := bound.Milliseconds()
	return WatermarkStrategy[T]{newGenerator: func() WatermarkGenerator[T] {
		return &boundedOutOfOrderness[T]{bound: b, max: math.MinInt64 + b + 1}
	}}
}

// ForMonotonousTimestamps expects ascending timestamps: the watermark is
// the highest timestamp seen − 1 ms.
func ForMonotonousTimestamps[T any]() WatermarkStrategy[T] { return ForBoundedOutOfOrderness[T](0) }

// ForGenerator uses a custom generator; newGenerator runs once per
// parallel subtask.
func ForGenerator[T any](newGenerator func() WatermarkGenerator[T]) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{newGenerator: newGenerator}
}

// NoWatermarks assigns timestamps (with WithTimestampAssigner) but emits
// no watermarks.
func NoWatermarks[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{newGenerator: func() WatermarkGenerator[T] { return noWatermarks[T]{} }}
}

// IngestionTime stamps every record with the processing time at which it
// enters the operator, and emits that time − 1 ms as the watermark.
func IngestionTime[T any]() WatermarkStrategy[T] {
	s := ForMonotonousTimestamps[T]()
	s.ingestion = true
	return s
}

// WithTimestampAssigner extracts each record's event timestamp
// (milliseconds); previous is the timestamp it carried, if any.
func (s WatermarkStrategy[T]) WithTimestampAssigner(assign func(v T, previous int64) int64) WatermarkStrategy[T] {
	s.assign = assign
	return s
}

// WithIdleness marks the input idle after timeout without records, so that
// it does not hold back the watermark of the operators downstream.
func (s WatermarkStrategy[T]) WithIdleness(timeout time.Duration) WatermarkStrategy[T] {
	s.idleTimeout = timeout
	return s
}

// WithWatermarkPerEvent emits the generator's watermark after every record
// instead of periodically: deterministic output, at a per-record cost.
func (s WatermarkStrategy[T]) WithWatermarkPerEvent() WatermarkStrategy[T] {
	s.perEvent = true
	return s
}

type boundedOutOfOrderness[T any] struct{ bound, max int64 }

func (g *boundedOutOfOrderness[T]) OnEvent(_ T, ts int64, _ WatermarkOutput) {
	if ts > g.max {
		g.max = ts
	}
}

func (g *boundedOutOfOrderness[T]) OnPeriodicEmit(out WatermarkOutput) {
	out.EmitWatermark(g.max - g.bound - 1)
}

type noWatermarks[T any] struct{}

func (noWatermarks[T]) OnEvent(T, int64, WatermarkOutput) {}
func (noWatermarks[T]) OnPeriodicEmit(WatermarkOutput)    {}

// AssignTimestampsAndWatermarks stamps records with event time and emits
// watermarks by the strategy, replacing any watermarks from upstream (the
// end-of-input watermark still passes).
func (s *Stream[T]) AssignTimestampsAndWatermarks(strategy WatermarkStrategy[T]) *Stream[T] {
	return addNode[T, T](s, "timestamps-watermarks", "Timestamps/Watermarks", oneInput(func(oc *runtime.OperatorContext, out runtime.Output[T]) (runtime.Output[T], error) {
		op := &watermarkOp[T]{oc: oc, out: out, strategy: strategy, gen: strategy.newGenerator(), current: runtime.NoTimestamp}
		op.interval = config.AutoWatermarkInterval.Get(oc.Config).Milliseconds()
		oc.Register(op)
		return watermarkInput[T]{op}, nil
	}))
}

type watermarkOp[T any] struct {
	oc       *runtime.OperatorContext
	out      runtime.Output[T]
	strategy WatermarkStrategy[T]
	gen      WatermarkGenerator[T]
	interval int64
	current  int64
	idle     bool
	// lastRecord is when the timer last saw that records had arrived
	// (sawRecord), for idleness: the record path only sets a flag instead
	// of reading the clock.
	lastRecord int64
	sawRecord  bool
	pts        *runtime.ProcessingTimeService
}

func (w *watermarkOp[T]) Emit(v T, ts int64) {
	w.oc.Enter()
	if w.strategy.ingestion {
		ts = w.pts.Now()
	}
	if w.strategy.assign != nil {
		ts = w.strategy.assign(v, ts)
	}
	if w.idle {
		w.idle = false
		runtime.EmitStatus(w.out, false)
	}
	w.sawRecord = true
	// The record first, then what it tells the generator, as Flink's
	// TimestampsAndWatermarksOperator does: a watermark that the record
	// itself advances never overtakes it and so never makes it late.
	w.out.Emit(v, ts)
	w.gen.OnEvent(v, ts, w)
	if w.strategy.perEvent {
		w.gen.OnPeriodicEmit(w)
	}
}

// EmitWatermark is both the generator's WatermarkOutput and, for
// watermarks from upstream, the operator's input: upstream watermarks are
// dropped except the end-of-input one.
func (w *watermarkOp[T]) EmitWatermark(wm int64) {
	if wm <= w.current {
		return
	}
	w.current = wm
	if w.idle {
		w.idle = false
		runtime.EmitStatus(w.out, false)
	}
	w.out.EmitWatermark(wm)
}

// MarkIdle implements WatermarkOutput.
func (w *watermarkOp[T]) MarkIdle() {
	if !w.idle {
		w.idle = true
		runtime.EmitStatus(w.out, true)
	}
}

// watermarkInput is what the upstream sees: its watermarks are replaced
// by the generator's, except the end-of-input one, which passes.
type watermarkInput[T any] struct{ *watermarkOp[T] }

func (w watermarkInput[T]) EmitWatermark(wm int64) {
	if wm == runtime.MaxWatermark {
		w.watermarkOp.EmitWatermark(wm)
	}
}

func (w *watermarkOp[T]) Open() error {
	w.pts = w.oc.Task.ProcessingTime()
	w.lastRecord = w.pts.Now()
	if w.interval > 0 && !w.strategy.perEvent || w.strategy.idleTimeout > 0 {
		w.schedule()
	}
	return nil
}

func (w *watermarkOp[T]) schedule() {
	step := w.interval
	if step <= 0 || w.strategy.perEvent {
		step = max(w.strategy.idleTimeout.Milliseconds()/2, 1)
	}
	w.pts.Schedule(w.pts.Now()+step, w.onTimer)
}

func (w *watermarkOp[T]) onTimer(now int64) {
	w.oc.Enter()
	if !w.strategy.perEvent {
		w.gen.OnPeriodicEmit(w)
	}
	if w.sawRecord {
		w.sawRecord, w.lastRecord = false, now
	}
	if t := w.strategy.idleTimeout.Milliseconds(); t > 0 && !w.idle && now-w.lastRecord >= t {
		w.MarkIdle()
	}
	w.schedule()
}

func (w *watermarkOp[T]) Finish() error { return nil }
func (w *watermarkOp[T]) Close() error  { return nil }

func (w *watermarkOp[T]) EmitWatermarkStatus(bool) {}
