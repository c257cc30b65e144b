package cep

import (
	"errors"
	"maps"
	"slices"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// PatternStream is a keyed stream with a pattern to detect in it, per
// key, as Flink's PatternStream; Process and Select turn it into the
// stream of matches.
type PatternStream[K comparable, T any] struct {
	ks       *stream.KeyedStream[K, T]
	pattern  *Pattern[T]
	procTime bool
	late     *stream.OutputTag[T]
}

// Stream detects pattern in every key of ks (Flink's CEP.pattern). By
// default in event time: records wait in the keyed state until the
// watermark passes their timestamp, then the NFA takes them in timestamp
// order; records at or behind the watermark are late.
func Stream[K comparable, T any](ks *stream.KeyedStream[K, T], pattern *Pattern[T]) *PatternStream[K, T] {
	return &PatternStream[K, T]{ks: ks, pattern: pattern}
}

// InProcessingTime matches records as they arrive, at the task's
// processing time: no buffering, no late records; Within counts
// processing time and partial matches time out when a later record
// comes, as in Flink.
func (ps *PatternStream[K, T]) InProcessingTime() *PatternStream[K, T] {
	ps.procTime = true
	return ps
}

// InEventTime matches records in event-time order (the default).
func (ps *PatternStream[K, T]) InEventTime() *PatternStream[K, T] {
	ps.procTime = false
	return ps
}

// SideOutputLateData sends records that arrive at or behind the watermark
// to the side output tag instead of dropping them.
func (ps *PatternStream[K, T]) SideOutputLateData(tag stream.OutputTag[T]) *PatternStream[K, T] {
	ps.late = &tag
	return ps
}

// MatchContext is what a match function learns about the match.
type MatchContext[K comparable] struct {
	kctx *stream.KeyedContext[K]
}

// Timestamp returns the match's timestamp: in event time the timestamp of
// the event that completed it (or that released it, for a match a skip
// strategy held back), or, for a timed-out partial match and for a match
// completed by its window passing, the end of its window. In processing
// time, the record's own timestamp, if it has one.
func (c *MatchContext[K]) Timestamp() int64 {
	ts, _ := c.kctx.Timestamp()
	return ts
}

// CurrentKey returns the key of the match.
func (c *MatchContext[K]) CurrentKey() K { return c.kctx.CurrentKey() }

// CurrentProcessingTime returns the operator's processing time.
func (c *MatchContext[K]) CurrentProcessingTime() int64 { return c.kctx.CurrentProcessingTime() }

// SideOutput emits v to the side output tag, with the match's timestamp.
func SideOutput[K comparable, X any](c *MatchContext[K], tag stream.OutputTag[X], v X) {
	stream.SideOutput(&c.kctx.Context, tag, v)
}

// ProcessFunction handles the matches of a pattern (Flink's
// PatternProcessFunction). Implement TimedOutHandler as well to receive
// the partial matches that Within timed out.
type ProcessFunction[K comparable, T, U any] interface {
	ProcessMatch(m Match[T], ctx *MatchContext[K], out stream.Collector[U]) error
}

// TimedOutHandler receives timed-out partial matches (Flink's
// TimedOutPartialMatchHandler); emit them with SideOutput.
type TimedOutHandler[K comparable, T any] interface {
	ProcessTimedOutMatch(m Match[T], ctx *MatchContext[K]) error
}

// ProcessFunc adapts a function to ProcessFunction.
type ProcessFunc[K comparable, T, U any] func(m Match[T], ctx *MatchContext[K], out stream.Collector[U]) error

// ProcessMatch calls f.
func (f ProcessFunc[K, T, U]) ProcessMatch(m Match[T], ctx *MatchContext[K], out stream.Collector[U]) error {
	return f(m, ctx, out)
}

// Process applies fn to every match. A pattern that does not compile
// fails the environment's Execute with the reason.
func Process[K comparable, T, U any](ps *PatternStream[K, T], fn ProcessFunction[K, T, U]) *stream.Stream[U] {
	c, err := compile(ps.pattern)
	op := &cepFunction[K, T, U]{nfa: c, err: err, fn: fn, procTime: ps.procTime, late: ps.late}
	return stream.KeyedProcess[K, T, U](ps.ks, op).Name("CepOperator")
}

// Select maps every match to one record (Flink's PatternSelectFunction).
func Select[K comparable, T, U any](ps *PatternStream[K, T], fn func(m Match[T]) U) *stream.Stream[U] {
	return Process[K, T, U](ps, ProcessFunc[K, T, U](func(m Match[T], _ *MatchContext[K], out stream.Collector[U]) error {
		out.Collect(fn(m))
		return nil
	}))
}

// SelectWithTimeout maps every match with fn and every timed-out partial
// match with timeout (given the timeout's timestamp) to the side output
// tag.
func SelectWithTimeout[K comparable, T, U, X any](ps *PatternStream[K, T], tag stream.OutputTag[X], timeout func(m Match[T], ts int64) X, fn func(m Match[T]) U) *stream.Stream[U] {
	return Process[K, T, U](ps, &timeoutSelect[K, T, U, X]{tag: tag, timeout: timeout, fn: fn})
}

type timeoutSelect[K comparable, T, U, X any] struct {
	tag     stream.OutputTag[X]
	timeout func(Match[T], int64) X
	fn      func(Match[T]) U
}

func (s *timeoutSelect[K, T, U, X]) ProcessMatch(m Match[T], _ *MatchContext[K], out stream.Collector[U]) error {
	out.Collect(s.fn(m))
	return nil
}

func (s *timeoutSelect[K, T, U, X]) ProcessTimedOutMatch(m Match[T], ctx *MatchContext[K]) error {
	SideOutput(ctx, s.tag, s.timeout(m, ctx.Timestamp()))
	return nil
}

const (
	nfaStateName    = "cep-nfa"
	eventsStateName = "cep-events"
	queueStateName  = "cep-queue"
)

// cepFunction is the keyed process function behind Process: per key, the
// NFA's runs (a value), the events they refer to (a map by id) and, in
// event time, the records waiting for the watermark (a map by
// timestamp), all in the keyed state backend, so they checkpoint and
// restore with it, on the heap or in Pebble.
type cepFunction[K comparable, T, U any] struct {
	nfa      *compiled[T]
	err      error
	fn       ProcessFunction[K, T, U]
	procTime bool
	late     *stream.OutputTag[T]

	eng     *engine[T]
	nfaSt   state.ValueState[nfaState]
	events  state.MapState[uint64, storedEvent[T]]
	queue   state.MapState[int64, []T]
	timeout TimedOutHandler[K, T]
	mctx    MatchContext[K]
}

func (f *cepFunction[K, T, U]) Open(ctx *stream.KeyedContext[K]) error {
	if f.err != nil {
		return f.err
	}
	f.fn = stream.Instance(f.fn)
	f.timeout, _ = f.fn.(TimedOutHandler[K, T])
	b := ctx.State()
	f.nfaSt = state.Value[nfaState](b, nfaStateName, nfaState{})
	f.events = state.Map[uint64, storedEvent[T]](b, eventsStateName)
	f.queue = state.Map[int64, []T](b, queueStateName)
	f.eng = newEngine(f.nfa)
	f.eng.load = f.events.Get
	f.eng.procTime = ctx.CurrentProcessingTime
	if o, ok := f.fn.(stream.Opener); ok {
		return o.Open(&ctx.Context)
	}
	return nil
}

func (f *cepFunction[K, T, U]) Close() error {
	if c, ok := f.fn.(stream.Closer); ok {
		return c.Close()
	}
	return nil
}

var errNoTimestamp = errors.New("cep: an event-time pattern got a record without a timestamp: assign timestamps and watermarks upstream, or match InProcessingTime")

func (f *cepFunction[K, T, U]) ProcessElement(v T, ctx *stream.KeyedContext[K], out stream.Collector[U]) error {
	if f.procTime {
		now := ctx.CurrentProcessingTime()
		st := f.begin()
		if err := f.advance(&st, now, ctx, out); err != nil {
			return err
		}
		if err := f.processEvent(&st, v, now, ctx, out); err != nil {
			return err
		}
		f.save(&st)
		return nil
	}
	ts, ok := ctx.Timestamp()
	if !ok {
		return errNoTimestamp
	}
	if ts <= ctx.CurrentWatermark() {
		if f.late != nil {
			stream.SideOutput(&ctx.Context, *f.late, v)
		}
		return nil
	}
	// Buffer until the watermark passes ts; the timer at ts processes the
	// records of ts in arrival order.
	q, _ := f.queue.Get(ts)
	q = append(slices.Clip(q), v)
	f.queue.Put(ts, q)
	ctx.RegisterEventTimeTimer(ts)
	return nil
}

// OnTimer: event time reached ts. Partial matches whose window ended by ts
// time out, then the records buffered at ts are matched. A timer at the
// end of a window, with no records, only times out.
func (f *cepFunction[K, T, U]) OnTimer(ts int64, ctx *stream.KeyedContext[K], out stream.Collector[U]) error {
	if ctx.TimeDomain() != stream.EventTime {
		return nil
	}
	st := f.begin()
	if err := f.advance(&st, ts, ctx, out); err != nil {
		return err
	}
	if q, ok := f.queue.Get(ts); ok {
		f.queue.Remove(ts)
		for _, v := range q {
			if err := f.processEvent(&st, v, ts, ctx, out); err != nil {
				return err
			}
		}
	}
	f.save(&st)
	return nil
}

func (f *cepFunction[K, T, U]) begin() nfaState {
	f.eng.reset()
	st, ok := f.nfaSt.Value()
	if !ok {
		return f.eng.initial()
	}
	// The stored value must stay as it is (the heap backend keeps it):
	// work on copies of its slices.
	st.Partial = slices.Clone(st.Partial)
	st.Completed = slices.Clone(st.Completed)
	f.eng.before = live(&st)
	return st
}

func (f *cepFunction[K, T, U]) advance(st *nfaState, ts int64, ctx *stream.KeyedContext[K], out stream.Collector[U]) error {
	matches, timedOut := f.eng.advance(st, ts)
	if f.timeout != nil {
		f.mctx.kctx = ctx
		for i := range timedOut {
			if err := f.timeout.ProcessTimedOutMatch(f.eng.materialize(&timedOut[i]), &f.mctx); err != nil {
				return err
			}
		}
	}
	return f.emit(matches, ctx, out)
}

func (f *cepFunction[K, T, U]) processEvent(st *nfaState, v T, ts int64, ctx *stream.KeyedContext[K], out stream.Collector[U]) error {
	before := st.NextID
	matches := f.eng.process(st, v, ts)
	if err := f.emit(matches, ctx, out); err != nil {
		return err
	}
	// A run that started with this event times out at the end of its
	// window, when the watermark gets there.
	if w := f.nfa.window; w > 0 && !f.procTime {
		for i := range st.Partial {
			if st.Partial[i].StartID > before {
				ctx.RegisterEventTimeTimer(ts + w)
				break
			}
		}
	}
	return nil
}

func (f *cepFunction[K, T, U]) emit(matches []run, ctx *stream.KeyedContext[K], out stream.Collector[U]) error {
	f.mctx.kctx = ctx
	for i := range matches {
		if err := f.fn.ProcessMatch(f.eng.materialize(&matches[i]), &f.mctx, out); err != nil {
			return err
		}
	}
	return nil
}

// save writes the key's state back: the runs, the new events they refer
// to, and drops the events no run refers to any more.
func (f *cepFunction[K, T, U]) save(st *nfaState) {
	now := live(st)
	for id := range f.eng.before {
		if !now[id] {
			f.events.Remove(id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(f.eng.added)) {
		if now[id] {
			f.events.Put(id, f.eng.added[id])
		}
	}
	if len(st.Partial) == 1 && st.Partial[0].StartID == 0 && len(st.Completed) == 0 {
		// Nothing in progress: no state for the key (the next event id
		// restarts, which only orders events within runs).
		f.nfaSt.Clear()
		return
	}
	f.nfaSt.Update(*st)
}
