// Package window is weir's windowing, with the semantics of Flink's
// WindowOperator: a keyed (or, with All, whole) stream is cut into finite
// windows per key; a trigger decides when a window is evaluated, an
// optional evictor removes elements around each evaluation, and a window
// function produces the results.
//
//	counts := window.Aggregate(
//		window.Of(stream.KeyBy(clicks, userID), window.TumblingEventTime(time.Minute)).
//			AllowedLateness(10*time.Second).
//			SideOutputLateData(lateTag),
//		countClicks)
//	late := stream.GetSideOutput(counts, lateTag)
//
// Go methods cannot have type parameters, so the steps that fix the
// result type are functions: Of, All, CountWindow and CountWindowSliding
// (and their All forms) start a Windowed; its methods Trigger, Evictor,
// AllowedLateness and SideOutputLateData configure it; Reduce, Aggregate,
// Process, ReduceProcess and AggregateProcess add the window operator
// (kind "window", named after the assigner and the function, for example
// "TumblingEventTimeWindows(10s) Reduce") and return its output stream.
//
// # Windows and assigners
//
// A TimeWindow is [Start, End) in milliseconds; MaxTimestamp is End-1.
// Tumbling and sliding windows start at multiples of their size (slide)
// plus an offset, computed with WindowStart, which is correct for negative
// timestamps too. Session windows give each element the window
// [ts, ts+gap) (DynamicEventTimeSession computes the gap per element) and
// merge every window of the key that the new window intersects, where, as
// in Flink, windows that only touch ([a,b) and [b,c)) intersect. Global
// puts every element into the single GlobalWindow, which never ends and
// whose default trigger never fires.
//
// The built-in assigners and triggers do not look at element values, so
// they are AnyAssigners and AnyTriggers and need no type arguments; an
// assigner or trigger that does look at values implements Assigner[T] or
// Trigger[T]. Of and Trigger accept either kind and check, when the job
// is built, that a typed one matches the stream's element type; mistakes
// (also invalid sizes, gaps, counts or a negative lateness) fail Execute
// with an error naming them. Evictors are one interface for all element
// types: ValueAt reads an element's value. Assigners, triggers and
// evictors are shared by the operator's subtasks and must not keep state
// of their own: triggers keep it in their TriggerContext.
//
// # Event time: firing, lateness and cleanup
//
// The rules, with L the allowed lateness (0 unless set) and wm the
// operator's current watermark:
//
//   - An element with timestamp ts is added to each of its windows that
//     is not late. A window w is late when w.MaxTimestamp()+L <= wm: its
//     state is gone (or about to go). An element added to no window whose
//     ts+L <= wm is late: it goes to the late-data side output if there is
//     one, else it is dropped. For sessions, lateness is judged on the
//     window after merging, so an element older than the watermark still
//     joins a live session it touches.
//   - With the default EventTimeTrigger, a window fires when the watermark
//     reaches its MaxTimestamp (wm >= End-1). An element that arrives
//     after that, within the allowed lateness, is added and fires the
//     window again at once with its whole updated contents.
//   - A window's state (contents, trigger state, per-window state of the
//     function) is cleaned up when the watermark reaches
//     MaxTimestamp()+L; the global window is never cleaned up.
//   - On each watermark the operator fires every timer at or below it
//     (in time order; timers set while firing fire too) and only then
//     forwards the watermark, to the main output and to every side output:
//     results always precede the watermark that caused them. Results carry
//     the window's MaxTimestamp as their timestamp.
//   - A bounded input ends with runtime.MaxWatermark, which fires and cleans
//     up every event-time window; nothing else happens at the end.
//
// Event-time windows need event timestamps (AssignTimestampsAndWatermarks
// upstream); an element without one fails the job.
//
// # Processing time
//
// Processing-time assigners use the task's clock (stream.Environment
// SetClock installs a manual clock for tests); their windows fire and are
// cleaned up when processing time reaches MaxTimestamp. Elements are never
// late and the allowed lateness does not apply. Windows still open when the
// input ends do not fire, as in Flink.
//
// # Triggers
//
// A trigger is called for every element added to a window (OnElement) and
// for the timers it set (OnEventTime, OnProcessingTime), and returns
// Continue, Fire, Purge or FireAndPurge. Fire evaluates the window
// function over the window's current contents (a window with no contents
// does not fire); Purge empties the contents but keeps the trigger's
// state. Triggers keep named int64 state per key and window in their
// TriggerContext; Clear must delete their timers and state. Built-in:
// EventTimeTrigger, ProcessingTimeTrigger, CountTrigger,
// ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, NeverTrigger
// and Purging (which turns every Fire into FireAndPurge).
// CountWindow(ks, n) is Global with Purging(CountTrigger(n));
// CountWindowSliding(ks, size, slide) is Global with CountTrigger(slide)
// and CountEvictor(size), as in Flink.
//
// # Evictors
//
// With an evictor, windows buffer their elements even for Reduce and
// Aggregate, which then run over the elements left at each firing.
// EvictBefore runs before the window function, EvictAfter after it, and
// what they evict is gone from the window. Built-in: CountEvictor (keeps
// the last n), TimeEvictor (keeps elements within d of the newest
// timestamp) and DeltaEvictor (evicts elements whose delta to the last one
// is at least a threshold); each evicts before the function unless asked
// to evict after. Buffers keep arrival order; a merged session's buffer is
// its parts' buffers in window-start order.
//
// # Window functions
//
// Reduce and Aggregate are incremental: a window keeps one value
// (session merges combine values with the reduce function or
// AggregateFunction.Merge). Process buffers all elements and gets them in
// one slice. ReduceProcess and AggregateProcess pre-aggregate and pass the
// one value to a ProcessWindowFunction, whose ProcessContext gives the
// window, the clocks, per-window state (WindowState: not with merging
// windows), per-key state (GlobalState) and side outputs (SideOutput).
// A function may implement Opener, stream.Closer and WindowClearer (Clear
// runs when a window is cleaned up).
//
// # State
//
// The operator keeps all its state per key: a keyState holds the key's
// windows (each with its accumulator or buffer, the trigger's state and
// the function's per-window state), an index from timer timestamps to the
// windows that set a timer there (the runtime's timer service keys timers
// by key and time only), and the function's per-key state. Keys without
// windows, timers or state are dropped, so a snapshot of the operator is
// the map of keyStates, by key.
//
// The common case — tumbling or sliding event-time windows with the
// default EventTimeTrigger, no evictor and an incremental function
// (Reduce, Aggregate, ReduceProcess, AggregateProcess) — runs on a fast
// path with the same behaviour and no per-key timers: one pane per window
// start holds the accumulator and per-window state of every key with
// elements in that window, the open panes are kept sorted by start, and a
// watermark fires and cleans up whole panes in time order (fast.go).
// Per-key state is made there only when the function asks for it.
//
// # Checkpoints
//
// The operator's state is checkpointed (checkpoint.go): its watermark;
// on the general path every key's windows (accumulators encoded with
// codec.For[ACC], or buffered elements with codec.For[T] and their
// timestamps), trigger state, per-window and per-key State and timer
// index, and the runtime's timers; on the fast path the open panes and
// the per-key State. A restored operator continues exactly as the
// original would, so a job's output stays exactly once across failures
// and savepoints. After a rescale each subtask keeps the keys of its key
// groups from every old subtask's piece. When the operator holds state of
// a type without a codec (keys, accumulators, or elements it buffers) the
// checkpoint is declined with an error naming the type; a job then
// recovers from an earlier checkpoint or from the start.
//
// # Differences from Flink
//
//   - ContinuousEventTimeTrigger aligns its first firing with floor
//     division (Flink's ts - ts%interval is off by one interval for
//     negative timestamps), and at the end of the input
//     (runtime.MaxWatermark) it fires at the window's end instead of once
//     per remaining interval, which for a global window would never end.
//   - When an evictor evicts every element before the window function, the
//     window does not fire (Flink calls the function with no elements).
//   - Per-window state is dropped when the window is cleaned up, after
//     WindowClearer.Clear; Flink leaves that to Clear.
//   - The order of a merged session's elements is defined (window start);
//     in Flink it is unspecified.
//   - Timers that a trigger leaves behind for a window that is gone are
//     ignored, and processing-time timers at the end of time (the global
//     window's MaxTimestamp) are not set.
package window
