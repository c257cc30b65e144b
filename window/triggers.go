package window

import (
	"fmt"
	"math"
	"time"
)

// TriggerResult is what a trigger decides for a window.
type TriggerResult uint8

const (
	// Continue does nothing.
	Continue TriggerResult = iota
	// Fire evaluates the window function over the window's contents and
	// keeps them.
	Fire
	// Purge discards the window's contents (its trigger state stays).
	Purge
	// FireAndPurge fires, then purges.
	FireAndPurge
)

// IsFire reports whether r fires the window.
func (r TriggerResult) IsFire() bool { return r == Fire || r == FireAndPurge }

// IsPurge reports whether r purges the window.
func (r TriggerResult) IsPurge() bool { return r == Purge || r == FireAndPurge }

func (r TriggerResult) String() string {
	switch r {
	case Continue:
		return "CONTINUE"
	case Fire:
		return "FIRE"
	case Purge:
		return "PURGE"
	case FireAndPurge:
		return "FIRE_AND_PURGE"
	}
	return fmt.Sprintf("TriggerResult(%d)", uint8(r))
}

// TriggerContext is what a trigger may do for the window (and key) it is
// called for: set and delete timers, read the clocks, and keep named int64
// state per key and window. The state lives with the window: it survives
// purges and is dropped when the window is cleaned up.
type TriggerContext interface {
	// CurrentWatermark returns the operator's event time.
	CurrentWatermark() int64
	// CurrentProcessingTime returns the operator's processing time.
	CurrentProcessingTime() int64
	// RegisterEventTimeTimer calls OnEventTime(t) for this window once the
	// watermark reaches t; a second registration of the same time is a
	// no-op.
	RegisterEventTimeTimer(t int64)
	// DeleteEventTimeTimer removes the window's event-time timer at t.
	DeleteEventTimeTimer(t int64)
	// RegisterProcessingTimeTimer calls OnProcessingTime(t) for this window
	// once processing time reaches t.
	RegisterProcessingTimeTimer(t int64)
	// DeleteProcessingTimeTimer removes the window's processing-time timer
	// at t.
	DeleteProcessingTimeTimer(t int64)
	// Get returns the window's state named name.
	Get(name string) (int64, bool)
	// Set sets the window's state named name.
	Set(name string, v int64)
	// Clear removes the window's state named name.
	Clear(name string)
	// MergeState, called in OnMerge, combines the state named name of the
	// windows being merged (and of the merged window, if it has any) with
	// merge and stores the result in the merged window: Flink's
	// mergePartitionedState for a reducing state.
	MergeState(name string, merge func(a, b int64) int64)
}

// TriggerBase is the part of a trigger that does not look at elements;
// Windowed.Trigger accepts a Trigger[T] or an AnyTrigger.
type TriggerBase interface {
	// OnEventTime is called when an event-time timer the trigger set for
	// the window fires.
	OnEventTime(t int64, w TimeWindow, c TriggerContext) TriggerResult
	// OnProcessingTime is called when a processing-time timer the trigger
	// set for the window fires.
	OnProcessingTime(t int64, w TimeWindow, c TriggerContext) TriggerResult
	// Clear removes what the trigger keeps for the window (timers and
	// state) when the window is cleaned up or merged away.
	Clear(w TimeWindow, c TriggerContext)
	// CanMerge reports whether the trigger supports merging windows.
	CanMerge() bool
	// OnMerge is called when windows merged into w; c.MergeState combines
	// their state.
	OnMerge(w TimeWindow, c TriggerContext)
}

// Trigger decides when a window fires, looking at each element's value.
type Trigger[T any] interface {
	TriggerBase
	// OnElement is called for every element added to window w, after it
	// was added.
	OnElement(v T, ts int64, w TimeWindow, c TriggerContext) TriggerResult
}

// AnyTrigger is a trigger that does not look at element values, so it
// works for every element type; the built-in triggers are AnyTriggers.
type AnyTrigger interface {
	TriggerBase
	// OnElement is called for every element (with event timestamp ts)
	// added to window w, after it was added.
	OnElement(ts int64, w TimeWindow, c TriggerContext) TriggerResult
}

// resolveTrigger turns what Windowed.Trigger got into a Trigger[T].
func resolveTrigger[T any](t TriggerBase) (Trigger[T], error) {
	switch t := t.(type) {
	case nil:
		return nil, fmt.Errorf("window: nil trigger")
	case Trigger[T]:
		return t, nil
	case AnyTrigger:
		return anyTrigger[T]{t}, nil
	case *purgingTrigger:
		inner, err := resolveTrigger[T](t.inner)
		if err != nil {
			return nil, err
		}
		return &purging[T]{inner}, nil
	}
	var zero T
	return nil, fmt.Errorf("window: trigger %T is neither a Trigger[%T] nor an AnyTrigger", t, zero)
}

// anyTrigger adapts an AnyTrigger to Trigger[T].
type anyTrigger[T any] struct{ AnyTrigger }

func (a anyTrigger[T]) OnElement(_ T, ts int64, w TimeWindow, c TriggerContext) TriggerResult {
	return a.AnyTrigger.OnElement(ts, w, c)
}

func (a anyTrigger[T]) String() string { return fmt.Sprint(a.AnyTrigger) }

// EventTimeTrigger fires a window once, when the watermark passes its end,
// and again for every element that arrives while it is late but within the
// allowed lateness. It is the default trigger of event-time assigners.
func EventTimeTrigger() AnyTrigger { return eventTimeTrigger{} }

type eventTimeTrigger struct{}

func (eventTimeTrigger) OnElement(_ int64, w TimeWindow, c TriggerContext) TriggerResult {
	if w.MaxTimestamp() <= c.CurrentWatermark() {
		// The watermark passed the window already: fire at once.
		return Fire
	}
	c.RegisterEventTimeTimer(w.MaxTimestamp())
	return Continue
}

func (eventTimeTrigger) OnEventTime(t int64, w TimeWindow, _ TriggerContext) TriggerResult {
	if t == w.MaxTimestamp() {
		return Fire
	}
	return Continue
}

func (eventTimeTrigger) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}

func (eventTimeTrigger) Clear(w TimeWindow, c TriggerContext) {
	c.DeleteEventTimeTimer(w.MaxTimestamp())
}

func (eventTimeTrigger) CanMerge() bool { return true }

func (eventTimeTrigger) OnMerge(w TimeWindow, c TriggerContext) {
	// A merged window whose end the watermark passed already fires with
	// the next element, in OnElement.
	if w.MaxTimestamp() > c.CurrentWatermark() {
		c.RegisterEventTimeTimer(w.MaxTimestamp())
	}
}

func (eventTimeTrigger) String() string { return "EventTimeTrigger()" }

// ProcessingTimeTrigger fires a window when processing time passes its
// end. It is the default trigger of processing-time assigners.
func ProcessingTimeTrigger() AnyTrigger { return processingTimeTrigger{} }

type processingTimeTrigger struct{}

func (processingTimeTrigger) OnElement(_ int64, w TimeWindow, c TriggerContext) TriggerResult {
	c.RegisterProcessingTimeTimer(w.MaxTimestamp())
	return Continue
}

func (processingTimeTrigger) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}

func (processingTimeTrigger) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Fire
}

func (processingTimeTrigger) Clear(w TimeWindow, c TriggerContext) {
	c.DeleteProcessingTimeTimer(w.MaxTimestamp())
}

func (processingTimeTrigger) CanMerge() bool { return true }

func (processingTimeTrigger) OnMerge(w TimeWindow, c TriggerContext) {
	if w.MaxTimestamp() > c.CurrentProcessingTime() {
		c.RegisterProcessingTimeTimer(w.MaxTimestamp())
	}
}

func (processingTimeTrigger) String() string { return "ProcessingTimeTrigger()" }

// NeverTrigger never fires: the default trigger of Global.
func NeverTrigger() AnyTrigger { return neverTrigger{} }

type neverTrigger struct{}

func (neverTrigger) OnElement(int64, TimeWindow, TriggerContext) TriggerResult { return Continue }
func (neverTrigger) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (neverTrigger) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (neverTrigger) Clear(TimeWindow, TriggerContext)   {}
func (neverTrigger) CanMerge() bool                     { return true }
func (neverTrigger) OnMerge(TimeWindow, TriggerContext) {}
func (neverTrigger) String() string                     { return "NeverTrigger()" }

const countState = "count"

// CountTrigger fires a window every n elements (counted per window and
// key); wrap it in Purging to start each count from an empty window.
// Merged windows add up their counts.
func CountTrigger(n int64) AnyTrigger { return countTrigger{n: n} }

type countTrigger struct{ n int64 }

func (t countTrigger) validate() error {
	if t.n <= 0 {
		return fmt.Errorf("window: CountTrigger(%d): the count must be positive", t.n)
	}
	return nil
}

func (t countTrigger) OnElement(_ int64, _ TimeWindow, c TriggerContext) TriggerResult {
	n, _ := c.Get(countState)
	n++
	if n >= t.n {
		c.Clear(countState)
		return Fire
	}
	c.Set(countState, n)
	return Continue
}

func (countTrigger) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult { return Continue }
func (countTrigger) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}
func (countTrigger) Clear(_ TimeWindow, c TriggerContext) { c.Clear(countState) }
func (countTrigger) CanMerge() bool                       { return true }
func (countTrigger) OnMerge(_ TimeWindow, c TriggerContext) {
	c.MergeState(countState, func(a, b int64) int64 { return a + b })
}
func (t countTrigger) String() string { return fmt.Sprintf("CountTrigger(%d)", t.n) }

const fireTimeState = "fire-time"

// ContinuousEventTimeTrigger fires a window repeatedly, every interval of
// event time (at multiples of interval, aligned to the epoch, also for
// negative timestamps, where Flink's alignment is off by one interval), and when the
// watermark passes the window's end, as Flink's: a watermark that jumps
// several intervals fires once per interval. At the end of the input
// (runtime.MaxWatermark) it fires only at the window's end, so that a
// global window does not fire without end.
func ContinuousEventTimeTrigger(interval time.Duration) AnyTrigger {
	return continuousEventTime{interval: millis(interval)}
}

type continuousEventTime struct{ interval int64 }

func (t continuousEventTime) validate() error {
	if t.interval <= 0 {
		return fmt.Errorf("window: ContinuousEventTimeTrigger needs an interval >= 1ms")
	}
	return nil
}

func (t continuousEventTime) OnElement(ts int64, w TimeWindow, c TriggerContext) TriggerResult {
	if w.MaxTimestamp() <= c.CurrentWatermark() {
		return Fire
	}
	c.RegisterEventTimeTimer(w.MaxTimestamp())
	if _, ok := c.Get(fireTimeState); !ok {
		t.next(WindowStart(ts, 0, t.interval), w, c)
	}
	return Continue
}

func (t continuousEventTime) OnEventTime(time int64, w TimeWindow, c TriggerContext) TriggerResult {
	if time == w.MaxTimestamp() {
		return Fire
	}
	if ft, ok := c.Get(fireTimeState); ok && ft == time {
		c.Clear(fireTimeState)
		t.next(time, w, c)
		return Fire
	}
	return Continue
}

// next registers the next firing after time, at the latest at the
// window's end.
func (t continuousEventTime) next(time int64, w TimeWindow, c TriggerContext) {
	next := min(satAdd(time, t.interval), w.MaxTimestamp())
	if c.CurrentWatermark() == math.MaxInt64 {
		next = w.MaxTimestamp()
	}
	c.Set(fireTimeState, next)
	c.RegisterEventTimeTimer(next)
}

func (continuousEventTime) OnProcessingTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}

func (continuousEventTime) Clear(_ TimeWindow, c TriggerContext) {
	if ft, ok := c.Get(fireTimeState); ok {
		c.DeleteEventTimeTimer(ft)
		c.Clear(fireTimeState)
	}
}

func (continuousEventTime) CanMerge() bool { return true }

func (continuousEventTime) OnMerge(_ TimeWindow, c TriggerContext) {
	c.MergeState(fireTimeState, func(a, b int64) int64 { return min(a, b) })
	if ft, ok := c.Get(fireTimeState); ok {
		c.RegisterEventTimeTimer(ft)
	}
}

func (t continuousEventTime) String() string {
	return fmt.Sprintf("ContinuousEventTimeTrigger(%v)", time.Duration(t.interval)*time.Millisecond)
}

// ContinuousProcessingTimeTrigger fires a window every interval of
// processing time (at multiples of interval) after its first element, as
// Flink's; it fires at the window's end only if that is a multiple.
func ContinuousProcessingTimeTrigger(interval time.Duration) AnyTrigger {
	return continuousProcessingTime{interval: millis(interval)}
}

type continuousProcessingTime struct{ interval int64 }

func (t continuousProcessingTime) validate() error {
	if t.interval <= 0 {
		return fmt.Errorf("window: ContinuousProcessingTimeTrigger needs an interval >= 1ms")
	}
	return nil
}

func (t continuousProcessingTime) OnElement(_ int64, w TimeWindow, c TriggerContext) TriggerResult {
	if _, ok := c.Get(fireTimeState); !ok {
		now := c.CurrentProcessingTime()
		t.next(WindowStart(now, 0, t.interval), w, c)
	}
	return Continue
}

func (t continuousProcessingTime) OnProcessingTime(time int64, w TimeWindow, c TriggerContext) TriggerResult {
	if ft, ok := c.Get(fireTimeState); ok && ft == time {
		c.Clear(fireTimeState)
		t.next(time, w, c)
		return Fire
	}
	return Continue
}

func (t continuousProcessingTime) next(time int64, w TimeWindow, c TriggerContext) {
	next := min(satAdd(time, t.interval), w.MaxTimestamp())
	c.Set(fireTimeState, next)
	c.RegisterProcessingTimeTimer(next)
}

func (continuousProcessingTime) OnEventTime(int64, TimeWindow, TriggerContext) TriggerResult {
	return Continue
}

func (continuousProcessingTime) Clear(_ TimeWindow, c TriggerContext) {
	if ft, ok := c.Get(fireTimeState); ok {
		c.DeleteProcessingTimeTimer(ft)
		c.Clear(fireTimeState)
	}
}

func (continuousProcessingTime) CanMerge() bool { return true }

func (continuousProcessingTime) OnMerge(_ TimeWindow, c TriggerContext) {
	c.MergeState(fireTimeState, func(a, b int64) int64 { return min(a, b) })
	if ft, ok := c.Get(fireTimeState); ok {
		c.RegisterProcessingTimeTimer(ft)
	}
}

func (t continuousProcessingTime) String() string {
	return fmt.Sprintf("ContinuousProcessingTimeTrigger(%v)", time.Duration(t.interval)*time.Millisecond)
}

// Purging turns every Fire of t into FireAndPurge, so that each firing
// sees only the elements since the previous one. t is a Trigger[T] or an
// AnyTrigger; the result is an AnyTrigger when t is one.
func Purging(t TriggerBase) TriggerBase {
	if a, ok := t.(AnyTrigger); ok {
		return purgingAny{a}
	}
	return &purgingTrigger{inner: t}
}

func purge(r TriggerResult) TriggerResult {
	if r.IsFire() {
		return FireAndPurge
	}
	return r
}

type purgingAny struct{ inner AnyTrigger }

func (p purgingAny) OnElement(ts int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnElement(ts, w, c))
}
func (p purgingAny) OnEventTime(t int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnEventTime(t, w, c))
}
func (p purgingAny) OnProcessingTime(t int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnProcessingTime(t, w, c))
}
func (p purgingAny) Clear(w TimeWindow, c TriggerContext)   { p.inner.Clear(w, c) }
func (p purgingAny) CanMerge() bool                         { return p.inner.CanMerge() }
func (p purgingAny) OnMerge(w TimeWindow, c TriggerContext) { p.inner.OnMerge(w, c) }
func (p purgingAny) validate() error                        { return validate(p.inner) }
func (p purgingAny) String() string                         { return fmt.Sprintf("PurgingTrigger(%v)", p.inner) }

// purgingTrigger wraps a typed trigger until Windowed knows the type.
type purgingTrigger struct{ inner TriggerBase }

func (p *purgingTrigger) OnEventTime(t int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnEventTime(t, w, c))
}
func (p *purgingTrigger) OnProcessingTime(t int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnProcessingTime(t, w, c))
}
func (p *purgingTrigger) Clear(w TimeWindow, c TriggerContext)   { p.inner.Clear(w, c) }
func (p *purgingTrigger) CanMerge() bool                         { return p.inner.CanMerge() }
func (p *purgingTrigger) OnMerge(w TimeWindow, c TriggerContext) { p.inner.OnMerge(w, c) }
func (p *purgingTrigger) validate() error                        { return validate(p.inner) }
func (p *purgingTrigger) String() string                         { return fmt.Sprintf("PurgingTrigger(%v)", p.inner) }

type purging[T any] struct{ inner Trigger[T] }

func (p *purging[T]) OnElement(v T, ts int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnElement(v, ts, w, c))
}
func (p *purging[T]) OnEventTime(t int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnEventTime(t, w, c))
}
func (p *purging[T]) OnProcessingTime(t int64, w TimeWindow, c TriggerContext) TriggerResult {
	return purge(p.inner.OnProcessingTime(t, w, c))
}
func (p *purging[T]) Clear(w TimeWindow, c TriggerContext)   { p.inner.Clear(w, c) }
func (p *purging[T]) CanMerge() bool                         { return p.inner.CanMerge() }
func (p *purging[T]) OnMerge(w TimeWindow, c TriggerContext) { p.inner.OnMerge(w, c) }
func (p *purging[T]) String() string                         { return fmt.Sprintf("PurgingTrigger(%v)", p.inner) }

// validate reports what is wrong with a built-in assigner, trigger or
// evictor, if anything.
func validate(x any) error {
	if v, ok := x.(validator); ok {
		return v.validate()
	}
	return nil
}
