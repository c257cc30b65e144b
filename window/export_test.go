package window

import (
	"fmt"
	"math"

	"github.com/weirproject/weir/internal/runtime"
)

// This file gives the external tests a window operator without a job: a
// Driver feeds it elements and watermarks directly and checks the
// operator's invariants, so that tests can compare it with the reference
// model over many more inputs than whole jobs allow.

// Fired is a record an operator emitted, with its timestamp and the last
// watermark the operator had forwarded before it.
type Fired[X any] struct {
	V      X
	Ts, Wm int64
}

type capture[X any] struct {
	wm  int64
	out *[]Fired[X]
}

func (c *capture[X]) Emit(v X, ts int64) { *c.out = append(*c.out, Fired[X]{V: v, Ts: ts, Wm: c.wm}) }

func (c *capture[X]) EmitWatermark(wm int64) {
	if wm <= c.wm {
		panic(fmt.Sprintf("watermark %d after %d", wm, c.wm))
	}
	c.wm = wm
}

// Driver runs one window operator.
type Driver[T, OUT any] struct {
	Out   []Fired[OUT]
	Late  []Fired[T]
	op    runtime.Output[T]
	check func(afterWatermark bool) error
	keys  func() int
	// watermarked is whether the last input was a watermark.
	watermarked bool
	fast        bool
	snapshot    func() error
	snapBytes   func() ([]byte, error)
	restore     func(pieces [][]byte) (*Driver[T, OUT], error)
}

// Snapshot takes the operator's snapshot and reports its error.
func (d *Driver[T, OUT]) Snapshot() error { return d.snapshot() }

// SnapshotBytes takes the operator's snapshot.
func (d *Driver[T, OUT]) SnapshotBytes() ([]byte, error) { return d.snapBytes() }

// Restore makes a fresh operator of the same kind, restores the pieces
// into it (RestoreState, then Open, as the runtime does) and returns its
// driver; its outputs start empty.
func (d *Driver[T, OUT]) Restore(pieces ...[]byte) (*Driver[T, OUT], error) {
	return d.restore(pieces)
}

// FastPath reports whether the operator runs on the fast path (fast.go).
func (d *Driver[T, OUT]) FastPath() bool { return d.fast }

// Emit passes an element.
func (d *Driver[T, OUT]) Emit(v T, ts int64) { d.watermarked = false; d.op.Emit(v, ts) }

// Watermark passes a watermark.
func (d *Driver[T, OUT]) Watermark(wm int64) { d.watermarked = true; d.op.EmitWatermark(wm) }

// Check verifies the operator's invariants.
func (d *Driver[T, OUT]) Check() error { return d.check(d.watermarked) }

// Keys returns the number of keys with state.
func (d *Driver[T, OUT]) Keys() int { return d.keys() }

func newDriver[K comparable, T, ACC, V, OUT any](w *Windowed[K, T], f *funcs[K, T, ACC, V, OUT]) (*Driver[T, OUT], error) {
	return newRestoredDriver(w, f, nil)
}

func newRestoredDriver[K comparable, T, ACC, V, OUT any](w *Windowed[K, T], f *funcs[K, T, ACC, V, OUT], pieces [][]byte) (*Driver[T, OUT], error) {
	s, err := resolve(w)
	if err != nil {
		return nil, err
	}
	d := &Driver[T, OUT]{}
	oc := &runtime.OperatorContext{
		Task:        &runtime.Task{},
		Info:        &runtime.OperatorInfo{Kind: "window", Name: "test"},
		SideOutputs: map[string]any{},
	}
	var late *capture[T]
	if s.lateTag != nil {
		late = &capture[T]{wm: math.MinInt64, out: &d.Late}
		oc.SideOutputs[s.lateTag.ID()] = runtime.Output[T](late)
	}
	main := &capture[OUT]{wm: math.MinInt64, out: &d.Out}
	op := newOperator(oc, main, w.key, s, f)
	d.op = op
	d.check = op.checkInvariants
	d.keys = func() int { return len(op.keys) }
	d.fast = op.fast != nil
	d.snapshot = func() error { _, err := op.SnapshotState(1); return err }
	d.snapBytes = func() ([]byte, error) { return op.SnapshotState(1) }
	d.restore = func(pieces [][]byte) (*Driver[T, OUT], error) { return newRestoredDriver(w, f, pieces) }
	if op.fast != nil {
		d.check = op.checkFastInvariants
		d.keys = op.fast.numKeys
	}
	for _, p := range pieces {
		if err := op.RestoreState(p); err != nil {
			return nil, err
		}
	}
	if err := op.Open(); err != nil {
		return nil, err
	}
	// The restored operator's outputs saw the watermark it restored.
	main.wm = op.watermark()
	if late != nil {
		late.wm = op.watermark()
	}
	return d, nil
}

// NewReduceDriver is Reduce without a job.
func NewReduceDriver[K comparable, T any](w *Windowed[K, T], fn func(a, b T) T) (*Driver[T, T], error) {
	return newDriver(w, reduceFuncs(fn, ProcessWindowFunction[K, T, T](passThrough[K, T]{})))
}

// NewAggregateDriver is Aggregate without a job.
func NewAggregateDriver[K comparable, T, ACC, OUT any](w *Windowed[K, T], agg AggregateFunction[T, ACC, OUT]) (*Driver[T, OUT], error) {
	return newDriver(w, aggregateFuncs(agg, ProcessWindowFunction[K, OUT, OUT](passThrough[K, OUT]{})))
}

// NewProcessDriver is Process without a job.
func NewProcessDriver[K comparable, T, OUT any](w *Windowed[K, T], fn ProcessWindowFunction[K, T, OUT]) (*Driver[T, OUT], error) {
	return newDriver(w, processFuncs(fn))
}

// NewReduceProcessDriver is ReduceProcess without a job.
func NewReduceProcessDriver[K comparable, T, OUT any](w *Windowed[K, T], reduce func(a, b T) T, fn ProcessWindowFunction[K, T, OUT]) (*Driver[T, OUT], error) {
	return newDriver(w, reduceFuncs(reduce, fn))
}

// NewAggregateProcessDriver is AggregateProcess without a job.
func NewAggregateProcessDriver[K comparable, T, ACC, V, OUT any](w *Windowed[K, T], agg AggregateFunction[T, ACC, V], fn ProcessWindowFunction[K, V, OUT]) (*Driver[T, OUT], error) {
	return newDriver(w, aggregateFuncs(agg, fn))
}

// checkInvariants verifies, between two inputs, that:
//   - no key keeps empty state;
//   - no event-time window outlived its cleanup time;
//   - merging windows of a key are disjoint;
//   - after a watermark, no event-time timer at or below it is pending
//     (a trigger may set one in the past while handling an element: it
//     fires with the next watermark, as in Flink);
//   - the runtime holds exactly one timer per (key, time) of the index.
func (op *operator[K, T, ACC, V, OUT]) checkInvariants(afterWatermark bool) error {
	wm := op.watermark()
	events, procs := 0, 0
	for k, ks := range op.keys {
		if ks.empty() {
			return fmt.Errorf("key %v: empty state kept", k)
		}
		for w := range ks.windows {
			if op.s.eventTime && op.cleanupTime(w) <= wm {
				return fmt.Errorf("key %v: window %v kept after its cleanup time %d (watermark %d)", k, w, op.cleanupTime(w), wm)
			}
			if op.s.merger == nil {
				continue
			}
			for o := range ks.windows {
				if o != w && o.Intersects(w) {
					return fmt.Errorf("key %v: merging windows %v and %v intersect", k, w, o)
				}
			}
		}
		for t, list := range ks.eventTimers {
			if len(list) == 0 {
				return fmt.Errorf("key %v: empty timer list at %d", k, t)
			}
			if afterWatermark && t <= wm {
				return fmt.Errorf("key %v: event-time timer %d not fired at watermark %d", k, t, wm)
			}
		}
		events += len(ks.eventTimers)
		procs += len(ks.procTimers)
	}
	if n := op.timers.NumEventTimeTimers(); n != events {
		return fmt.Errorf("runtime has %d event-time timers, the index %d", n, events)
	}
	if n := op.timers.NumProcessingTimeTimers(); n != procs {
		return fmt.Errorf("runtime has %d processing-time timers, the index %d", n, procs)
	}
	return nil
}
