package window

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// Windowed is a stream cut into windows per key, waiting for its window
// function (Reduce, Aggregate, Process, ReduceProcess, AggregateProcess).
// Its methods return a modified copy, so a Windowed can be the base of
// several differently configured windowings.
type Windowed[K comparable, T any] struct {
	in       *stream.Stream[T]
	key      func(T) K
	all      bool
	assigner AssignerBase
	trigger  TriggerBase
	evictor  Evictor
	lateness int64
	lateTag  *stream.OutputTag[T]
	errs     []error
}

// Of windows a keyed stream: each key has its own windows. a is an
// Assigner[T] or an AnyAssigner (every built-in but the dynamic sessions).
func Of[K comparable, T any](ks *stream.KeyedStream[K, T], a AssignerBase) *Windowed[K, T] {
	w := &Windowed[K, T]{in: ks.Stream(), key: ks.KeySelector(), assigner: a}
	w.check(validate(a))
	return w
}

// All windows a whole stream, as Flink's windowAll: one operator subtask
// sees every element (parallelism 1), under the single key struct{}{}.
func All[T any](s *stream.Stream[T], a AssignerBase) *Windowed[struct{}, T] {
	w := &Windowed[struct{}, T]{in: s.Global(), key: func(T) struct{} { return struct{}{} }, all: true, assigner: a}
	w.check(validate(a))
	return w
}

// CountWindow windows a keyed stream into tumbling windows of size
// elements per key, as Flink's countWindow(size): a global window with
// Purging(CountTrigger(size)). A key's last, incomplete window never fires.
func CountWindow[K comparable, T any](ks *stream.KeyedStream[K, T], size int64) *Windowed[K, T] {
	return Of(ks, Global()).Trigger(Purging(CountTrigger(size)))
}

// CountWindowSliding fires every slide elements per key with the last size
// elements, as Flink's countWindow(size, slide): a global window with
// CountEvictor(size) and CountTrigger(slide).
func CountWindowSliding[K comparable, T any](ks *stream.KeyedStream[K, T], size, slide int64) *Windowed[K, T] {
	return Of(ks, Global()).Evictor(CountEvictor(size)).Trigger(CountTrigger(slide))
}

// CountWindowAll is CountWindow over a whole stream (parallelism 1).
func CountWindowAll[T any](s *stream.Stream[T], size int64) *Windowed[struct{}, T] {
	return All(s, Global()).Trigger(Purging(CountTrigger(size)))
}

// CountWindowAllSliding is CountWindowSliding over a whole stream.
func CountWindowAllSliding[T any](s *stream.Stream[T], size, slide int64) *Windowed[struct{}, T] {
	return All(s, Global()).Evictor(CountEvictor(size)).Trigger(CountTrigger(slide))
}

func (w *Windowed[K, T]) check(err error) {
	if err != nil {
		w.errs = append(w.errs, err)
	}
}

func (w *Windowed[K, T]) copy() *Windowed[K, T] {
	c := *w
	c.errs = append([]error(nil), w.errs...)
	return &c
}

// Trigger replaces the assigner's default trigger (EventTimeTrigger for
// event-time assigners, ProcessingTimeTrigger for processing-time ones,
// NeverTrigger for Global). t is a Trigger[T] or an AnyTrigger.
func (w *Windowed[K, T]) Trigger(t TriggerBase) *Windowed[K, T] {
	c := w.copy()
	c.trigger = t
	c.check(validate(t))
	return c
}

// Evictor makes the windows buffer their elements and evict some of them
// around each firing.
func (w *Windowed[K, T]) Evictor(e Evictor) *Windowed[K, T] {
	c := w.copy()
	c.evictor = e
	c.check(validate(e))
	if typed, ok := e.(interface{ elementType() reflect.Type }); ok && typed.elementType() != reflect.TypeFor[T]() {
		c.check(fmt.Errorf("window: evictor %v is for elements of type %v, not %v", e, typed.elementType(), reflect.TypeFor[T]()))
	}
	return c
}

// AllowedLateness keeps event-time windows (their contents and trigger
// state) for d after the watermark passed their end: an element that
// arrives in that time is added and, with the default trigger, fires the
// window again with its updated contents. Later elements are late (see
// SideOutputLateData). Processing-time windows ignore it.
func (w *Windowed[K, T]) AllowedLateness(d time.Duration) *Windowed[K, T] {
	c := w.copy()
	c.lateness = millis(d)
	if d < 0 {
		c.check(fmt.Errorf("window: allowed lateness %v must not be negative", d))
	}
	return c
}

// SideOutputLateData emits late elements (those whose every window is past
// its end plus the allowed lateness) to the side output tag, with their
// own timestamps, instead of dropping them; read them with
// stream.GetSideOutput on the windowed result.
func (w *Windowed[K, T]) SideOutputLateData(tag stream.OutputTag[T]) *Windowed[K, T] {
	c := w.copy()
	c.lateTag = &tag
	return c
}

// AggregateFunction aggregates a window's elements incrementally, as
// Flink's: the window keeps one accumulator, Add folds every element into
// it, Merge combines the accumulators of merging (session) windows, and
// GetResult produces the output when the window fires.
type AggregateFunction[T, ACC, OUT any] interface {
	CreateAccumulator() ACC
	Add(v T, acc ACC) ACC
	GetResult(acc ACC) OUT
	Merge(a, b ACC) ACC
}

// NewAggregate builds an AggregateFunction from functions.
func NewAggregate[T, ACC, OUT any](create func() ACC, add func(v T, acc ACC) ACC, result func(acc ACC) OUT, merge func(a, b ACC) ACC) AggregateFunction[T, ACC, OUT] {
	return &aggregateFns[T, ACC, OUT]{create: create, add: add, result: result, merge: merge}
}

type aggregateFns[T, ACC, OUT any] struct {
	create func() ACC
	add    func(T, ACC) ACC
	result func(ACC) OUT
	merge  func(ACC, ACC) ACC
}

func (a *aggregateFns[T, ACC, OUT]) CreateAccumulator() ACC { return a.create() }
func (a *aggregateFns[T, ACC, OUT]) Add(v T, acc ACC) ACC   { return a.add(v, acc) }
func (a *aggregateFns[T, ACC, OUT]) GetResult(acc ACC) OUT  { return a.result(acc) }
func (a *aggregateFns[T, ACC, OUT]) Merge(x, y ACC) ACC     { return a.merge(x, y) }

// ProcessWindowFunction evaluates a fired window with all its elements
// (for Process) or with the one pre-aggregated value (for ReduceProcess
// and AggregateProcess). elements belongs to the window: read it, do not
// modify or keep it. Results are emitted with the window's MaxTimestamp.
// An error fails the job, naming the window operator.
//
// A function may also implement Opener, stream.Closer and WindowClearer;
// as in the stream package, a function held by pointer to a struct is
// copied for every parallel subtask.
type ProcessWindowFunction[K comparable, T, OUT any] interface {
	Process(key K, ctx *ProcessContext, elements []T, out stream.Collector[OUT]) error
}

// ProcessWindowFunc adapts a function to ProcessWindowFunction.
type ProcessWindowFunc[K comparable, T, OUT any] func(key K, ctx *ProcessContext, elements []T, out stream.Collector[OUT]) error

// Process calls f.
func (f ProcessWindowFunc[K, T, OUT]) Process(key K, ctx *ProcessContext, elements []T, out stream.Collector[OUT]) error {
	return f(key, ctx, elements, out)
}

// Opener is implemented by window functions that set up before the first
// element; ctx has no window yet (Subtask, Parallelism and the clocks
// work).
type Opener interface {
	Open(ctx *ProcessContext) error
}

// WindowClearer is implemented by window functions that keep something per
// window outside WindowState: Clear runs when a window is cleaned up (its
// end plus the allowed lateness passed), before its WindowState goes.
type WindowClearer interface {
	Clear(ctx *ProcessContext) error
}

// Reduce combines each window's elements with fn, incrementally (the
// window keeps one value), and emits the result when the window fires.
func Reduce[K comparable, T any](w *Windowed[K, T], fn func(a, b T) T) *stream.Stream[T] {
	return build(w, "Reduce", reduceFuncs(fn, ProcessWindowFunction[K, T, T](passThrough[K, T]{})))
}

// Aggregate aggregates each window's elements incrementally with agg and
// emits agg's result when the window fires.
func Aggregate[K comparable, T, ACC, OUT any](w *Windowed[K, T], agg AggregateFunction[T, ACC, OUT]) *stream.Stream[OUT] {
	return build(w, "Aggregate", aggregateFuncs(agg, ProcessWindowFunction[K, OUT, OUT](passThrough[K, OUT]{})))
}

// Process buffers each window's elements and calls fn with all of them
// when the window fires.
func Process[K comparable, T, OUT any](w *Windowed[K, T], fn ProcessWindowFunction[K, T, OUT]) *stream.Stream[OUT] {
	return build(w, "Process", processFuncs(fn))
}

// ReduceProcess reduces each window incrementally with reduce and, when it
// fires, calls fn with the one reduced value (and the window's context).
func ReduceProcess[K comparable, T, OUT any](w *Windowed[K, T], reduce func(a, b T) T, fn ProcessWindowFunction[K, T, OUT]) *stream.Stream[OUT] {
	return build(w, "Reduce+Process", reduceFuncs(reduce, fn))
}

// AggregateProcess aggregates each window incrementally with agg and, when
// it fires, calls fn with agg's one result.
func AggregateProcess[K comparable, T, ACC, V, OUT any](w *Windowed[K, T], agg AggregateFunction[T, ACC, V], fn ProcessWindowFunction[K, V, OUT]) *stream.Stream[OUT] {
	return build(w, "Aggregate+Process", aggregateFuncs(agg, fn))
}

func reduceFuncs[K comparable, T, OUT any](reduce func(a, b T) T, fn ProcessWindowFunction[K, T, OUT]) *funcs[K, T, T, T, OUT] {
	return &funcs[K, T, T, T, OUT]{first: identity[T], add: reduce, merge: reduce, get: identity[T], process: fn}
}

func aggregateFuncs[K comparable, T, ACC, V, OUT any](agg AggregateFunction[T, ACC, V], fn ProcessWindowFunction[K, V, OUT]) *funcs[K, T, ACC, V, OUT] {
	if a, ok := agg.(*aggregateFns[T, ACC, V]); ok {
		// NewAggregate's functions, called without the interface.
		create, add := a.create, a.add
		return &funcs[K, T, ACC, V, OUT]{
			first: func(v T) ACC { return add(v, create()) },
			add:   func(acc ACC, v T) ACC { return add(v, acc) },
			merge: a.merge, get: a.result,
			process: fn,
		}
	}
	return &funcs[K, T, ACC, V, OUT]{
		first: func(v T) ACC { return agg.Add(v, agg.CreateAccumulator()) },
		add:   func(acc ACC, v T) ACC { return agg.Add(v, acc) },
		merge: agg.Merge, get: agg.GetResult,
		process: fn,
	}
}

func processFuncs[K comparable, T, OUT any](fn ProcessWindowFunction[K, T, OUT]) *funcs[K, T, struct{}, T, OUT] {
	return &funcs[K, T, struct{}, T, OUT]{values: identity[[]T], process: fn}
}

func identity[X any](x X) X { return x }

// passThrough emits the pre-aggregated value.
type passThrough[K comparable, V any] struct{}

func (passThrough[K, V]) Process(_ K, _ *ProcessContext, elements []V, out stream.Collector[V]) error {
	for _, v := range elements {
		out.Collect(v)
	}
	return nil
}

// funcs is the window function in the form the operator runs: either
// incremental (first, add, merge and get set: the window keeps an
// accumulator) or buffered (values set: the window keeps its elements),
// then process.
type funcs[K comparable, T, ACC, V, OUT any] struct {
	first   func(T) ACC
	add     func(ACC, T) ACC
	merge   func(ACC, ACC) ACC
	get     func(ACC) V
	values  func([]T) []V
	process ProcessWindowFunction[K, V, OUT]
}

// spec is a Windowed resolved for element type T: the checks that need T
// are done.
type spec[T any] struct {
	assign    func(dst []TimeWindow, v T, ts, processingTime int64) []TimeWindow
	needPT    bool
	merger    Merger
	eventTime bool
	trigger   Trigger[T]
	evictor   Evictor
	lateness  int64
	lateTag   *stream.OutputTag[T]

	// aligned is set for the built-in tumbling and sliding event-time
	// assigners: every window is [start, start+size) with start a multiple
	// of slide plus offset (slide == size for tumbling).
	aligned             bool
	size, slide, offset int64
}

// fastPath reports whether the operator can run with per-window-start
// panes instead of per-key windows and timers: aligned event-time windows,
// the default EventTimeTrigger, no evictor, an incremental function.
func (s *spec[T]) fastPath(incremental bool) bool {
	if !s.aligned || !s.eventTime || s.merger != nil || s.evictor != nil || !incremental {
		return false
	}
	t, ok := s.trigger.(anyTrigger[T])
	if !ok {
		return false
	}
	_, ok = t.AnyTrigger.(eventTimeTrigger)
	return ok
}

func resolve[K comparable, T any](w *Windowed[K, T]) (*spec[T], error) {
	errs := append([]error(nil), w.errs...)
	s := &spec[T]{evictor: w.evictor, lateness: w.lateness, lateTag: w.lateTag}
	switch a := w.assigner.(type) {
	case nil:
		errs = append(errs, errors.New("window: nil assigner"))
	case Assigner[T]:
		s.assign = func(_ []TimeWindow, v T, ts, pt int64) []TimeWindow { return a.AssignWindows(v, ts, pt) }
		s.needPT = true
		if u, ok := a.(interface{ usesProcessingTime() bool }); ok {
			s.needPT = u.usesProcessingTime()
		}
	case timeAssigner:
		s.assign = func(dst []TimeWindow, _ T, ts, pt int64) []TimeWindow { return a.assignInto(dst, ts, pt) }
		s.needPT = a.usesProcessingTime()
	case AnyAssigner:
		s.assign = func(_ []TimeWindow, _ T, ts, pt int64) []TimeWindow { return a.AssignWindows(ts, pt) }
		s.needPT = true
	default:
		errs = append(errs, fmt.Errorf("window: assigner %T is neither an Assigner[%v] nor an AnyAssigner", a, reflect.TypeFor[T]()))
	}
	if w.assigner != nil {
		s.eventTime = w.assigner.EventTime()
		s.merger, _ = w.assigner.(Merger)
		switch a := w.assigner.(type) {
		case *tumbling:
			s.aligned, s.size, s.slide, s.offset = a.eventTime, a.size, a.size, a.offset
		case *sliding:
			s.aligned, s.size, s.slide, s.offset = a.eventTime, a.size, a.slide, a.offset
		}
	}
	t := w.trigger
	if t == nil {
		switch {
		case w.assigner == nil:
		case isDefaultTriggerer(w.assigner):
			t = w.assigner.(DefaultTriggerer).DefaultTrigger()
		case s.eventTime:
			t = EventTimeTrigger()
		default:
			t = ProcessingTimeTrigger()
		}
	}
	if t != nil {
		tr, err := resolveTrigger[T](t)
		if err != nil {
			errs = append(errs, err)
		} else {
			s.trigger = tr
			if s.merger != nil && !tr.CanMerge() {
				errs = append(errs, fmt.Errorf("window: trigger %v cannot merge windows, as the merging assigner %v needs", t, w.assigner))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

func isDefaultTriggerer(a AssignerBase) bool {
	_, ok := a.(DefaultTriggerer)
	return ok
}

// build adds the window operator.
func build[K comparable, T, ACC, V, OUT any](w *Windowed[K, T], what string, f *funcs[K, T, ACC, V, OUT]) *stream.Stream[OUT] {
	s, err := resolve(w)
	name := fmt.Sprintf("%v %s", w.assigner, what)
	if w.all {
		name = fmt.Sprintf("%v All %s", w.assigner, what)
	}
	out := stream.Transform[T, OUT](w.in, "window", name, func(oc *runtime.OperatorContext, out runtime.Output[OUT]) (runtime.Output[T], error) {
		if err != nil {
			return nil, err
		}
		return newOperator(oc, out, w.key, s, f), nil
	})
	if w.all {
		out.SetParallelism(1)
	}
	return out
}
