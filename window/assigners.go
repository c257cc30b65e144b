package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirproject/weir/internal/runtime"
)

// AssignerBase is what Of and All accept: an Assigner[T] for the stream's
// element type, or an AnyAssigner, which works for every element type (all
// built-in assigners but the dynamic sessions are AnyAssigners, so that
// they need no type arguments).
type AssignerBase interface {
	// EventTime reports whether the windows are in event time (they end
	// when the watermark passes them) rather than processing time.
	EventTime() bool
}

// Assigner assigns each element to zero or more windows, looking at the
// element's value.
type Assigner[T any] interface {
	AssignerBase
	// AssignWindows returns the windows of v, which has event timestamp ts
	// (runtime.NoTimestamp if none) and arrives at processingTime.
	AssignWindows(v T, ts int64, processingTime int64) []TimeWindow
}

// AnyAssigner assigns windows from the element's timestamp or the
// processing time alone, so it works for every element type.
type AnyAssigner interface {
	AssignerBase
	// AssignWindows returns the windows of an element with event
	// timestamp ts that arrives at processingTime.
	AssignWindows(ts int64, processingTime int64) []TimeWindow
}

// Merger is implemented by merging assigners (sessions): after a new
// element's window is added to the windows of its key, MergeWindows is
// called with all of them and calls merge for every group that becomes one
// window. MergeTimeWindows implements it for windows that merge when they
// intersect.
type Merger interface {
	MergeWindows(windows []TimeWindow, merge func(toMerge []TimeWindow, result TimeWindow))
}

// DefaultTriggerer is implemented by assigners whose default trigger is
// neither EventTimeTrigger (for event-time assigners) nor
// ProcessingTimeTrigger (for the others); Global's is NeverTrigger.
type DefaultTriggerer interface {
	DefaultTrigger() TriggerBase
}

// validator is implemented by built-in assigners, triggers and evictors
// whose parameters can be invalid; Of, Trigger and Evictor report it.
type validator interface {
	validate() error
}

// inPlaceMerger is a Merger that may sort the windows it is given (the
// operator's scratch) instead of copying them.
type inPlaceMerger interface {
	mergeInPlace(windows []TimeWindow, merge func(toMerge []TimeWindow, result TimeWindow))
}

// timeAssigner is the allocation-free form of the built-in AnyAssigners:
// it appends to dst, which the operator reuses.
type timeAssigner interface {
	assignInto(dst []TimeWindow, ts, processingTime int64) []TimeWindow
	usesProcessingTime() bool
}

func millis(d time.Duration) int64 { return d.Milliseconds() }

func offsetOf(what string, offset []time.Duration) (int64, error) {
	switch len(offset) {
	case 0:
		return 0, nil
	case 1:
		return millis(offset[0]), nil
	}
	return 0, fmt.Errorf("window: %s takes at most one offset, got %d", what, len(offset))
}

// tumbling is a tumbling (fixed-size, non-overlapping) window assigner.
type tumbling struct {
	size, offset int64
	eventTime    bool
	err          error
}

// TumblingEventTime assigns every element to the window of the given size
// that contains its timestamp; windows start at multiples of size (plus
// the optional offset, for example to align daily windows with a time
// zone).
func TumblingEventTime(size time.Duration, offset ...time.Duration) AnyAssigner {
	return newTumbling(true, size, offset)
}

// TumblingProcessingTime is TumblingEventTime on the processing time at
// which an element arrives.
func TumblingProcessingTime(size time.Duration, offset ...time.Duration) AnyAssigner {
	return newTumbling(false, size, offset)
}

func newTumbling(eventTime bool, size time.Duration, offset []time.Duration) *tumbling {
	t := &tumbling{size: millis(size), eventTime: eventTime}
	t.offset, t.err = offsetOf(t.name(), offset)
	if t.err == nil && (t.size <= 0 || abs(t.offset) >= t.size) {
		t.err = fmt.Errorf("window: %s needs size >= 1ms and |offset| < size, got size %v and offset %v",
			t.name(), size, time.Duration(t.offset)*time.Millisecond)
	}
	return t
}

func (t *tumbling) name() string {
	if t.eventTime {
		return "TumblingEventTimeWindows"
	}
	return "TumblingProcessingTimeWindows"
}

func (t *tumbling) EventTime() bool          { return t.eventTime }
func (t *tumbling) validate() error          { return t.err }
func (t *tumbling) usesProcessingTime() bool { return !t.eventTime }

func (t *tumbling) AssignWindows(ts, processingTime int64) []TimeWindow {
	return t.assignInto(nil, ts, processingTime)
}

func (t *tumbling) assignInto(dst []TimeWindow, ts, processingTime int64) []TimeWindow {
	if !t.eventTime {
		ts = processingTime
	}
	start := WindowStart(ts, t.offset, t.size)
	return append(dst, TimeWindow{Start: start, End: start + t.size})
}

func (t *tumbling) String() string {
	return fmt.Sprintf("%s(%s)", t.name(), durations(t.size, 0, t.offset))
}

// sliding is a sliding (fixed-size, overlapping) window assigner.
type sliding struct {
	size, slide, offset int64
	eventTime           bool
	err                 error
}

// SlidingEventTime assigns every element to the size/slide windows of the
// given size that contain its timestamp; a window starts every slide (plus
// the optional offset).
func SlidingEventTime(size, slide time.Duration, offset ...time.Duration) AnyAssigner {
	return newSliding(true, size, slide, offset)
}

// SlidingProcessingTime is SlidingEventTime on the processing time at which
// an element arrives.
func SlidingProcessingTime(size, slide time.Duration, offset ...time.Duration) AnyAssigner {
	return newSliding(false, size, slide, offset)
}

func newSliding(eventTime bool, size, slide time.Duration, offset []time.Duration) *sliding {
	s := &sliding{size: millis(size), slide: millis(slide), eventTime: eventTime}
	s.offset, s.err = offsetOf(s.name(), offset)
	if s.err == nil && (s.size <= 0 || s.slide <= 0 || abs(s.offset) >= s.slide) {
		s.err = fmt.Errorf("window: %s needs size >= 1ms, slide >= 1ms and |offset| < slide, got size %v, slide %v and offset %v",
			s.name(), size, slide, time.Duration(s.offset)*time.Millisecond)
	}
	return s
}

func (s *sliding) name() string {
	if s.eventTime {
		return "SlidingEventTimeWindows"
	}
	return "SlidingProcessingTimeWindows"
}

func (s *sliding) EventTime() bool          { return s.eventTime }
func (s *sliding) validate() error          { return s.err }
func (s *sliding) usesProcessingTime() bool { return !s.eventTime }

func (s *sliding) AssignWindows(ts, processingTime int64) []TimeWindow {
	return s.assignInto(nil, ts, processingTime)
}

// assignInto returns the windows latest start first, as Flink does.
func (s *sliding) assignInto(dst []TimeWindow, ts, processingTime int64) []TimeWindow {
	if !s.eventTime {
		ts = processingTime
	}
	for start := WindowStart(ts, s.offset, s.slide); start > ts-s.size; start -= s.slide {
		dst = append(dst, TimeWindow{Start: start, End: start + s.size})
	}
	return dst
}

func (s *sliding) String() string {
	return fmt.Sprintf("%s(%s)", s.name(), durations(s.size, s.slide, s.offset))
}

// session is a session window assigner with a static gap.
type session struct {
	gap       int64
	eventTime bool
	err       error
}

// EventTimeSession assigns every element to the window [ts, ts+gap); the
// windows of a key merge when they intersect (touching counts), so a
// session ends after gap without elements.
func EventTimeSession(gap time.Duration) AnyAssigner { return newSession(true, gap) }

// ProcessingTimeSession is EventTimeSession on the processing time at which
// an element arrives.
func ProcessingTimeSession(gap time.Duration) AnyAssigner { return newSession(false, gap) }

func newSession(eventTime bool, gap time.Duration) *session {
	s := &session{gap: millis(gap), eventTime: eventTime}
	if s.gap <= 0 {
		s.err = fmt.Errorf("window: %s needs a gap >= 1ms, got %v", s.name(), gap)
	}
	return s
}

func (s *session) name() string {
	if s.eventTime {
		return "EventTimeSessionWindows"
	}
	return "ProcessingTimeSessionWindows"
}

func (s *session) EventTime() bool          { return s.eventTime }
func (s *session) validate() error          { return s.err }
func (s *session) usesProcessingTime() bool { return !s.eventTime }

func (s *session) AssignWindows(ts, processingTime int64) []TimeWindow {
	return s.assignInto(nil, ts, processingTime)
}

func (s *session) assignInto(dst []TimeWindow, ts, processingTime int64) []TimeWindow {
	if !s.eventTime {
		ts = processingTime
	}
	return append(dst, TimeWindow{Start: ts, End: satAdd(ts, s.gap)})
}

func (s *session) MergeWindows(windows []TimeWindow, merge func([]TimeWindow, TimeWindow)) {
	MergeTimeWindows(windows, merge)
}

func (s *session) mergeInPlace(windows []TimeWindow, merge func([]TimeWindow, TimeWindow)) {
	mergeSorted(windows, merge)
}

func (s *session) String() string {
	return fmt.Sprintf("%s(%s)", s.name(), time.Duration(s.gap)*time.Millisecond)
}

// ErrGap is what a dynamic session assigner fails with when its gap
// function returns a gap below 1ms.
var ErrGap = errors.New("window: dynamic session gap must be at least 1ms")

// dynamicSession is a session assigner whose gap depends on the element.
type dynamicSession[T any] struct {
	gap       func(T) time.Duration
	eventTime bool
}

// DynamicEventTimeSession is EventTimeSession with a gap computed per
// element: the element's window is [ts, ts+gap(v)). A gap below 1ms fails
// the job with ErrGap.
func DynamicEventTimeSession[T any](gap func(v T) time.Duration) Assigner[T] {
	return &dynamicSession[T]{gap: gap, eventTime: true}
}

// DynamicProcessingTimeSession is DynamicEventTimeSession on processing
// time.
func DynamicProcessingTimeSession[T any](gap func(v T) time.Duration) Assigner[T] {
	return &dynamicSession[T]{gap: gap}
}

func (d *dynamicSession[T]) EventTime() bool          { return d.eventTime }
func (d *dynamicSession[T]) usesProcessingTime() bool { return !d.eventTime }

func (d *dynamicSession[T]) validate() error {
	if d.gap == nil {
		return errors.New("window: dynamic session without a gap function")
	}
	return nil
}

func (d *dynamicSession[T]) AssignWindows(v T, ts, processingTime int64) []TimeWindow {
	if !d.eventTime {
		ts = processingTime
	}
	g := millis(d.gap(v))
	if g <= 0 {
		panic(fmt.Errorf("%w, got %v", ErrGap, d.gap(v)))
	}
	return []TimeWindow{{Start: ts, End: satAdd(ts, g)}}
}

func (d *dynamicSession[T]) MergeWindows(windows []TimeWindow, merge func([]TimeWindow, TimeWindow)) {
	MergeTimeWindows(windows, merge)
}

func (d *dynamicSession[T]) mergeInPlace(windows []TimeWindow, merge func([]TimeWindow, TimeWindow)) {
	mergeSorted(windows, merge)
}

func (d *dynamicSession[T]) String() string {
	if d.eventTime {
		return "DynamicEventTimeSessionWindows"
	}
	return "DynamicProcessingTimeSessionWindows"
}

// global assigns every element to the one global window.
type global struct{}

// Global assigns every element to the single GlobalWindow, which never
// ends: its default trigger, NeverTrigger, never fires, so it is used with
// a custom trigger (CountWindow uses CountTrigger). Global windows are not
// event-time windows: no element is ever late, and their state lives until
// the job ends.
func Global() AnyAssigner { return global{} }

func (global) EventTime() bool                       { return false }
func (global) usesProcessingTime() bool              { return false }
func (global) DefaultTrigger() TriggerBase           { return NeverTrigger() }
func (global) AssignWindows(_, _ int64) []TimeWindow { return []TimeWindow{GlobalWindow} }
func (global) assignInto(dst []TimeWindow, _, _ int64) []TimeWindow {
	return append(dst, GlobalWindow)
}
func (global) String() string { return "GlobalWindows" }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// durations formats size, slide (if non-zero) and offset (if non-zero).
func durations(size, slide, offset int64) string {
	s := (time.Duration(size) * time.Millisecond).String()
	if slide != 0 {
		s += ", " + (time.Duration(slide) * time.Millisecond).String()
	}
	if offset != 0 {
		s += ", offset " + (time.Duration(offset) * time.Millisecond).String()
	}
	return s
}

// noTimestampError is Flink's message for event-time windows over records
// without timestamps.
var errNoTimestamp = fmt.Errorf("window: record has no event timestamp (runtime.NoTimestamp = %d); event-time windows need timestamps: use AssignTimestampsAndWatermarks, or a processing-time assigner", runtime.NoTimestamp)
