package window

import (
	"fmt"
	"math"
	"slices"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// keyState is everything the operator keeps for one key: its windows with
// their contents and trigger state, the index from timer timestamps to the
// windows that set a timer there (the runtime's timers know only the key
// and the time), and the window function's per-key state. A snapshot of the
// operator is the map of keyStates (plus the timers the index lists).
type keyState[T, ACC any] struct {
	windows     map[TimeWindow]*contents[T, ACC]
	eventTimers map[int64][]TimeWindow
	procTimers  map[int64][]TimeWindow
	global      State
}

func (ks *keyState[T, ACC]) empty() bool {
	return len(ks.windows) == 0 && len(ks.eventTimers) == 0 && len(ks.procTimers) == 0 && ks.global.Len() == 0
}

// contents is one window of one key: an accumulator (incremental
// functions) or the buffered elements with their timestamps (Process, or
// any function with an evictor), the trigger's state and the window
// function's per-window state.
type contents[T, ACC any] struct {
	acc   ACC
	has   bool
	vals  []T
	ts    []int64
	trig  map[string]int64
	state State
}

// operator is the window operator of one subtask.
type operator[K comparable, T, ACC, V, OUT any] struct {
	oc      *runtime.OperatorContext
	out     runtime.Output[OUT]
	late    runtime.Output[T]
	key     func(T) K
	s       *spec[T]
	f       *funcs[K, T, ACC, V, OUT]
	fn      ProcessWindowFunction[K, V, OUT]
	buffers bool // the windows keep their elements
	timers  *runtime.TimerService[K]
	pts     *runtime.ProcessingTimeService
	keys    map[K]*keyState[T, ACC]
	// fast, when set, holds the state instead of keys and timers: see
	// fast.go.
	fast *fastState[K, ACC]
	// sorted, in batch mode, gathers the input to process it key by key
	// when it ends: each key's windows fire at the key's end, and its
	// state goes.
	sorted *stream.BatchKeyedInput[K, T]

	tctx    triggerCtx[K, T, ACC, V, OUT]
	pctx    ProcessContext
	col     collector[OUT]
	view    buffer[T]
	windows []TimeWindow // scratch for assigned windows
	cands   []TimeWindow // scratch for merge candidates
	vals    []V          // scratch for pre-aggregated values

	// Merging: the assigner's merge callback (made once) collects the
	// merges into merges, their windows into arena.
	mergeFn func(toMerge []TimeWindow, result TimeWindow)
	merges  []pendingMerge
	arena   []TimeWindow
	sources []*contents[T, ACC]

	// A restore (checkpoint.go) sets the watermark and the runtime timers
	// in Open.
	restored      bool
	restoredWm    int64
	pendingTimers []pendingTimers[K]
}

// pendingMerge is one merge the assigner reported: the windows
// arena[from:to] become result.
type pendingMerge struct {
	result   TimeWindow
	from, to int
}

func newOperator[K comparable, T, ACC, V, OUT any](oc *runtime.OperatorContext, out runtime.Output[OUT], key func(T) K, s *spec[T], f *funcs[K, T, ACC, V, OUT]) *operator[K, T, ACC, V, OUT] {
	op := &operator[K, T, ACC, V, OUT]{
		oc: oc, out: out, key: key, s: s, f: f,
		fn:      stream.Instance(f.process),
		buffers: f.add == nil || s.evictor != nil,
		pts:     oc.Task.ProcessingTime(),
		keys:    make(map[K]*keyState[T, ACC]),
	}
	if s.lateTag != nil {
		op.late = stream.SideOutputOf(oc, *s.lateTag)
	}
	op.timers = runtime.NewTimerService(oc, op.onEventTime, op.onProcessingTime)
	op.mergeFn = func(toMerge []TimeWindow, result TimeWindow) {
		from := len(op.arena)
		op.arena = append(op.arena, toMerge...)
		op.merges = append(op.merges, pendingMerge{result: result, from: from, to: len(op.arena)})
	}
	op.tctx.op = op
	op.pctx = ProcessContext{oc: oc, clocks: &op.tctx, merging: s.merger != nil}
	op.col = collector[OUT]{oc: oc, out: out}
	if sorted, err := stream.NewBatchKeyedInput[K, T](oc, key); err == nil && sorted != nil {
		// Batch mode, key by key: the general path, whose state and
		// timers are per key (the fast path's panes span all keys).
		op.sorted = sorted
	} else if s.fastPath(f.add != nil) {
		op.fast = newFastState[K, T, ACC](s, op.fn)
		op.pctx.lazyGlobal = op.fastGlobal
	}
	oc.Register(op)
	oc.Gauge("stateEntries", op.stateEntries)
	return op
}

// stateEntries counts what the operator keeps on the heap: each key's
// windows (a key with several windows counts once per window in the
// fast path's panes), for the operator's state size gauge.
func (op *operator[K, T, ACC, V, OUT]) stateEntries() int64 {
	if fs := op.fast; fs != nil {
		n := len(fs.global)
		for _, p := range fs.panes {
			n += len(p.slots)
		}
		return int64(n)
	}
	return int64(len(op.keys))
}

func (op *operator[K, T, ACC, V, OUT]) now() int64 { return op.pts.Now() }

func (op *operator[K, T, ACC, V, OUT]) watermark() int64 { return op.timers.CurrentWatermark() }

// cleanupTime is when a window's state goes: its end plus the allowed
// lateness in event time, its end in processing time; never (MaxInt64)
// for the global window or when the sum overflows.
func (op *operator[K, T, ACC, V, OUT]) cleanupTime(w TimeWindow) int64 {
	if w.IsGlobal() {
		return math.MaxInt64
	}
	if op.s.eventTime {
		return satAdd(w.MaxTimestamp(), op.s.lateness)
	}
	return w.MaxTimestamp()
}

// isWindowLate: an event-time window whose cleanup time the watermark
// reached takes no more elements.
func (op *operator[K, T, ACC, V, OUT]) isWindowLate(w TimeWindow) bool {
	return op.s.eventTime && op.cleanupTime(w) <= op.watermark()
}

// isElementLate: an element no window took is late (side output) when its
// timestamp plus the allowed lateness is at or below the watermark.
func (op *operator[K, T, ACC, V, OUT]) isElementLate(ts int64) bool {
	return op.s.eventTime && satAdd(ts, op.s.lateness) <= op.watermark()
}

// Emit processes one element: it is added to each of its windows that is
// not late, the trigger decides for each, and an element that no window
// took goes to the late side output.
func (op *operator[K, T, ACC, V, OUT]) Emit(v T, ts int64) {
	if op.sorted != nil {
		op.sorted.Add(v, ts)
		return
	}
	op.emit(v, ts)
}

func (op *operator[K, T, ACC, V, OUT]) emit(v T, ts int64) {
	if op.fast != nil {
		op.emitFast(v, ts)
		return
	}
	op.oc.Enter()
	if op.s.eventTime && ts == runtime.NoTimestamp {
		op.oc.Fail(errNoTimestamp)
	}
	var pt int64
	if op.s.needPT {
		pt = op.now()
	}
	op.windows = op.s.assign(op.windows[:0], v, ts, pt)
	key := op.key(v)
	ks := op.keys[key]
	if ks == nil {
		ks = &keyState[T, ACC]{}
		op.keys[key] = ks
	}
	skipped := true
	for _, w := range op.windows {
		var st *contents[T, ACC]
		if op.s.merger != nil {
			actual, fresh := op.addMergingWindow(key, ks, w)
			if op.isWindowLate(actual) {
				// Only a window that merged with nothing can be late: live
				// windows are cleaned up when the watermark passes them.
				if fresh {
					delete(ks.windows, actual)
				}
				continue
			}
			w, st = actual, ks.windows[actual]
		} else {
			if op.isWindowLate(w) {
				continue
			}
			st = ks.windows[w]
			if st == nil {
				st = &contents[T, ACC]{}
				if ks.windows == nil {
					ks.windows = make(map[TimeWindow]*contents[T, ACC])
				}
				ks.windows[w] = st
			}
		}
		skipped = false
		op.add(st, v, ts)
		op.tctx.set(key, ks, w, st)
		r := op.s.trigger.OnElement(v, ts, w, &op.tctx)
		op.oc.Enter()
		op.apply(r, key, ks, w, st)
		op.registerCleanupTimer(key, ks, w)
	}
	if skipped && op.isElementLate(ts) && op.late != nil {
		op.late.Emit(v, ts)
		op.oc.Enter()
	}
	if ks.empty() {
		delete(op.keys, key)
	}
}

// add puts an element into a window's contents.
func (op *operator[K, T, ACC, V, OUT]) add(st *contents[T, ACC], v T, ts int64) {
	switch {
	case op.buffers:
		st.vals = append(st.vals, v)
		st.ts = append(st.ts, ts)
	case st.has:
		st.acc = op.f.add(st.acc, v)
	default:
		st.acc, st.has = op.f.first(v), true
	}
}

// apply carries out a trigger's decision.
func (op *operator[K, T, ACC, V, OUT]) apply(r TriggerResult, key K, ks *keyState[T, ACC], w TimeWindow, st *contents[T, ACC]) {
	if r.IsFire() {
		op.fire(key, ks, w, st)
	}
	if r.IsPurge() {
		var zero ACC
		st.acc, st.has = zero, false
		clear(st.vals)
		st.vals, st.ts = st.vals[:0], st.ts[:0]
	}
}

// fire evaluates the window function over a window's contents; an empty
// window does not fire.
func (op *operator[K, T, ACC, V, OUT]) fire(key K, ks *keyState[T, ACC], w TimeWindow, st *contents[T, ACC]) {
	if op.s.evictor == nil {
		if !op.buffers {
			if !st.has {
				return
			}
			op.vals = append(op.vals[:0], op.f.get(st.acc))
			op.call(key, ks, w, st, op.vals)
			return
		}
		if len(st.vals) == 0 {
			return
		}
		op.call(key, ks, w, st, op.f.values(st.vals[:len(st.vals):len(st.vals)]))
		return
	}
	if len(st.vals) == 0 {
		return
	}
	op.tctx.set(key, ks, w, st)
	op.view.reset(st.vals, st.ts)
	op.s.evictor.EvictBefore(&op.view, w, &op.tctx)
	op.oc.Enter()
	op.view.compact()
	st.vals, st.ts = op.view.vals, op.view.ts
	n := len(st.vals)
	if n == 0 {
		return
	}
	if op.buffers && op.f.add == nil {
		op.call(key, ks, w, st, op.f.values(st.vals[:n:n]))
	} else {
		acc := op.f.first(st.vals[0])
		for _, v := range st.vals[1:] {
			acc = op.f.add(acc, v)
		}
		op.vals = append(op.vals[:0], op.f.get(acc))
		op.call(key, ks, w, st, op.vals)
	}
	op.tctx.set(key, ks, w, st)
	op.view.reset(st.vals, st.ts)
	op.s.evictor.EvictAfter(&op.view, w, &op.tctx)
	op.oc.Enter()
	op.view.compact()
	st.vals, st.ts = op.view.vals, op.view.ts
}

// call runs the process function; its results carry the window's
// MaxTimestamp.
func (op *operator[K, T, ACC, V, OUT]) call(key K, ks *keyState[T, ACC], w TimeWindow, st *contents[T, ACC], vals []V) {
	op.setProcessContext(ks, w, st)
	op.oc.Enter()
	if err := op.fn.Process(key, &op.pctx, vals, &op.col); err != nil {
		op.oc.Fail(err)
	}
	op.pctx.win, op.pctx.global = nil, nil
}

func (op *operator[K, T, ACC, V, OUT]) setProcessContext(ks *keyState[T, ACC], w TimeWindow, st *contents[T, ACC]) {
	op.pctx.window, op.pctx.win, op.pctx.global = w, &st.state, &ks.global
	op.pctx.ts = w.MaxTimestamp()
	op.col.ts = op.pctx.ts
}

// registerCleanupTimer sets the timer that drops the window's state.
func (op *operator[K, T, ACC, V, OUT]) registerCleanupTimer(key K, ks *keyState[T, ACC], w TimeWindow) {
	if t := op.cleanupTime(w); t != math.MaxInt64 {
		op.addTimer(key, ks, w, t, op.s.eventTime)
	}
}

func (op *operator[K, T, ACC, V, OUT]) deleteCleanupTimer(key K, ks *keyState[T, ACC], w TimeWindow) {
	if t := op.cleanupTime(w); t != math.MaxInt64 {
		op.deleteTimer(key, ks, w, t, op.s.eventTime)
	}
}

// addTimer sets a timer for (key, window) at t: the window joins the
// key's index at t, and the runtime gets a timer for (key, t) when it is
// the first window there.
func (op *operator[K, T, ACC, V, OUT]) addTimer(key K, ks *keyState[T, ACC], w TimeWindow, t int64, eventTime bool) {
	idx := &ks.eventTimers
	if !eventTime {
		if t >= math.MaxInt64-1 {
			// Processing time never gets to the end of time (the global
			// window's MaxTimestamp); such a timer would never fire.
			return
		}
		idx = &ks.procTimers
	}
	if *idx == nil {
		*idx = make(map[int64][]TimeWindow)
	}
	list := (*idx)[t]
	if slices.Contains(list, w) {
		return
	}
	(*idx)[t] = append(list, w)
	if len(list) > 0 {
		return
	}
	if eventTime {
		op.timers.RegisterEventTimeTimer(key, t)
	} else {
		op.timers.RegisterProcessingTimeTimer(key, t)
	}
}

// deleteTimer removes a (key, window) timer; the runtime's timer goes with
// the last window at t.
func (op *operator[K, T, ACC, V, OUT]) deleteTimer(key K, ks *keyState[T, ACC], w TimeWindow, t int64, eventTime bool) {
	idx := ks.eventTimers
	if !eventTime {
		idx = ks.procTimers
	}
	list := idx[t]
	i := slices.Index(list, w)
	if i < 0 {
		return
	}
	list = slices.Delete(list, i, i+1)
	if len(list) > 0 {
		idx[t] = list
		return
	}
	delete(idx, t)
	if eventTime {
		op.timers.DeleteEventTimeTimer(key, t)
	} else {
		op.timers.DeleteProcessingTimeTimer(key, t)
	}
}

func (op *operator[K, T, ACC, V, OUT]) onEventTime(key K, t int64) { op.onTimers(key, t, true) }

func (op *operator[K, T, ACC, V, OUT]) onProcessingTime(key K, t int64) {
	op.onTimers(key, t, false)
}

// onTimers handles the runtime's timer (key, t): every window of the key
// with a timer at t, in window order. Windows that set a timer at t while
// this runs are handled too.
func (op *operator[K, T, ACC, V, OUT]) onTimers(key K, t int64, eventTime bool) {
	ks := op.keys[key]
	if ks == nil {
		return
	}
	for {
		idx := ks.eventTimers
		if !eventTime {
			idx = ks.procTimers
		}
		list := idx[t]
		if len(list) == 0 {
			break
		}
		i := 0
		for j := 1; j < len(list); j++ {
			if compareWindows(list[j], list[i]) < 0 {
				i = j
			}
		}
		w := list[i]
		if list = slices.Delete(list, i, i+1); len(list) > 0 {
			idx[t] = list
		} else {
			delete(idx, t)
		}
		op.onTimer(key, ks, w, t, eventTime)
	}
	if ks.empty() {
		delete(op.keys, key)
	}
}

// onTimer runs the trigger for one window's timer, then cleans the window
// up if t is its cleanup time. Timers of windows that are gone (a trigger
// that did not delete its timers) are ignored.
func (op *operator[K, T, ACC, V, OUT]) onTimer(key K, ks *keyState[T, ACC], w TimeWindow, t int64, eventTime bool) {
	st := ks.windows[w]
	if st == nil {
		return
	}
	op.tctx.set(key, ks, w, st)
	var r TriggerResult
	if eventTime {
		r = op.s.trigger.OnEventTime(t, w, &op.tctx)
	} else {
		r = op.s.trigger.OnProcessingTime(t, w, &op.tctx)
	}
	op.oc.Enter()
	op.apply(r, key, ks, w, st)
	if eventTime == op.s.eventTime && t == op.cleanupTime(w) {
		op.clearAll(key, ks, w, st)
	}
}

// clearAll drops a window: the trigger clears its timers and state, the
// window function's Clear runs, and the contents go.
func (op *operator[K, T, ACC, V, OUT]) clearAll(key K, ks *keyState[T, ACC], w TimeWindow, st *contents[T, ACC]) {
	op.tctx.set(key, ks, w, st)
	op.s.trigger.Clear(w, &op.tctx)
	op.oc.Enter()
	if c, ok := op.fn.(WindowClearer); ok {
		op.setProcessContext(ks, w, st)
		if err := c.Clear(&op.pctx); err != nil {
			op.oc.Fail(err)
		}
		op.pctx.win, op.pctx.global = nil, nil
	}
	delete(ks.windows, w)
}

// addMergingWindow adds a new element's window to the key's windows and
// merges what the assigner merges, as Flink's MergingWindowSet: merged
// windows hand their contents to the merge result (buffers in window
// order, accumulators with the merge function), the trigger merges their
// state in OnMerge and clears them, and their cleanup timers go. It
// returns the window the element belongs to and whether it is a new,
// unmerged one.
func (op *operator[K, T, ACC, V, OUT]) addMergingWindow(key K, ks *keyState[T, ACC], nw TimeWindow) (TimeWindow, bool) {
	if ks.windows == nil {
		ks.windows = make(map[TimeWindow]*contents[T, ACC])
	}
	_, exists := ks.windows[nw]
	cands := op.cands[:0]
	for w := range ks.windows {
		cands = append(cands, w)
	}
	if !exists {
		cands = append(cands, nw)
	}
	op.cands = cands
	op.merges, op.arena = op.merges[:0], op.arena[:0]
	if m, ok := op.s.merger.(inPlaceMerger); ok {
		m.mergeInPlace(cands, op.mergeFn)
	} else {
		op.s.merger.MergeWindows(cands, op.mergeFn)
	}
	result, mergedNew := nw, false
	for _, m := range op.merges {
		merged := op.arena[m.from:m.to:m.to]
		if i := slices.Index(merged, nw); i >= 0 {
			result = m.result
			if !exists {
				merged = slices.Delete(merged, i, i+1)
				mergedNew = true
			}
		}
		if len(merged) == 0 || len(merged) == 1 && merged[0] == m.result {
			// The new window lies inside an existing one: nothing changes.
			continue
		}
		op.merge(key, ks, m.result, merged)
	}
	if !exists && !mergedNew {
		ks.windows[nw] = &contents[T, ACC]{}
		return nw, true
	}
	return result, false
}

// merge turns the windows merged (all existing) into result.
func (op *operator[K, T, ACC, V, OUT]) merge(key K, ks *keyState[T, ACC], result TimeWindow, merged []TimeWindow) {
	if op.s.eventTime && satAdd(result.MaxTimestamp(), op.s.lateness) <= op.watermark() {
		op.oc.Fail(fmt.Errorf("window: merging produced %v, which ends before the watermark %d", result, op.watermark()))
	}
	if !op.s.eventTime && result.MaxTimestamp() < op.now() {
		op.oc.Fail(fmt.Errorf("window: merging produced %v, which ends before the processing time %d", result, op.now()))
	}
	if _, ok := ks.windows[result]; ok && !slices.Contains(merged, result) {
		merged = append(merged, result)
	}
	slices.SortFunc(merged, compareWindows)
	target := &contents[T, ACC]{}
	sources := op.sources[:0]
	for _, m := range merged {
		sources = append(sources, ks.windows[m])
	}
	op.sources = sources
	op.tctx.set(key, ks, result, target)
	op.tctx.merged = sources
	op.s.trigger.OnMerge(result, &op.tctx)
	op.tctx.merged = nil
	for i, m := range merged {
		if m == result {
			continue
		}
		op.tctx.set(key, ks, m, sources[i])
		op.s.trigger.Clear(m, &op.tctx)
		op.deleteCleanupTimer(key, ks, m)
	}
	op.oc.Enter()
	for i, m := range merged {
		src := sources[i]
		switch {
		case op.buffers:
			target.vals = append(target.vals, src.vals...)
			target.ts = append(target.ts, src.ts...)
		case !src.has:
		case target.has:
			target.acc = op.f.merge(target.acc, src.acc)
		default:
			target.acc, target.has = src.acc, true
		}
		delete(ks.windows, m)
	}
	clear(sources)
	ks.windows[result] = target
}

// EmitWatermark fires the windows the watermark passed (and cleans up
// those past their lateness), then forwards it, to the main output and
// every side output: a window's results precede the watermark.
func (op *operator[K, T, ACC, V, OUT]) EmitWatermark(wm int64) {
	if op.sorted != nil {
		return // event time does not advance while a batch input is gathered
	}
	if op.fast != nil {
		wm0 := op.watermark()
		op.timers.AdvanceWatermark(wm)
		if wm > wm0 {
			op.advanceFast(wm0, wm)
		}
	} else {
		op.timers.AdvanceWatermark(wm)
	}
	op.out.EmitWatermark(wm)
	op.oc.ForwardToSideOutputs(wm)
}

// EmitWatermarkStatus forwards an idleness change.
func (op *operator[K, T, ACC, V, OUT]) EmitWatermarkStatus(idle bool) {
	runtime.EmitStatus(op.out, idle)
	op.oc.ForwardStatusToSideOutputs(idle)
}

// Open finishes a restore and opens the window function.
func (op *operator[K, T, ACC, V, OUT]) Open() error {
	if err := op.finishRestore(); err != nil {
		return err
	}
	if o, ok := op.fn.(Opener); ok {
		op.oc.Enter()
		if err := o.Open(&op.pctx); err != nil {
			return fmt.Errorf("open: %w", err)
		}
	}
	return nil
}

// Finish, in streaming mode, does nothing: a bounded input ends with
// runtime.MaxWatermark, which fired every event-time window already, and
// processing-time windows still open are dropped, as in Flink. In batch
// mode it processes the gathered input key by key: no element is late,
// and at the end of a key every timer of it fires (event time, then
// processing time), so that each of its windows fires once complete, and
// the key's state goes.
func (op *operator[K, T, ACC, V, OUT]) Finish() error {
	if op.sorted == nil {
		return nil
	}
	err := op.sorted.Each(func(_ K, v T, ts int64) error {
		op.emit(v, ts)
		return nil
	}, func(key K) {
		op.timers.EndKey()
		delete(op.keys, key)
	})
	if err != nil {
		return err
	}
	op.out.EmitWatermark(runtime.MaxWatermark)
	op.oc.ForwardToSideOutputs(runtime.MaxWatermark)
	return nil
}

// Close closes the window function.
func (op *operator[K, T, ACC, V, OUT]) Close() error {
	if c, ok := op.fn.(stream.Closer); ok {
		op.oc.Enter()
		return c.Close()
	}
	return nil
}

// triggerCtx is the TriggerContext (and EvictorContext) of the window and
// key the operator is handling.
type triggerCtx[K comparable, T, ACC, V, OUT any] struct {
	op     *operator[K, T, ACC, V, OUT]
	key    K
	ks     *keyState[T, ACC]
	w      TimeWindow
	st     *contents[T, ACC]
	merged []*contents[T, ACC]
}

func (c *triggerCtx[K, T, ACC, V, OUT]) set(key K, ks *keyState[T, ACC], w TimeWindow, st *contents[T, ACC]) {
	c.key, c.ks, c.w, c.st = key, ks, w, st
}

func (c *triggerCtx[K, T, ACC, V, OUT]) CurrentWatermark() int64 { return c.op.watermark() }

func (c *triggerCtx[K, T, ACC, V, OUT]) CurrentProcessingTime() int64 { return c.op.now() }

func (c *triggerCtx[K, T, ACC, V, OUT]) RegisterEventTimeTimer(t int64) {
	c.op.addTimer(c.key, c.ks, c.w, t, true)
}

func (c *triggerCtx[K, T, ACC, V, OUT]) DeleteEventTimeTimer(t int64) {
	c.op.deleteTimer(c.key, c.ks, c.w, t, true)
}

func (c *triggerCtx[K, T, ACC, V, OUT]) RegisterProcessingTimeTimer(t int64) {
	c.op.addTimer(c.key, c.ks, c.w, t, false)
}

func (c *triggerCtx[K, T, ACC, V, OUT]) DeleteProcessingTimeTimer(t int64) {
	c.op.deleteTimer(c.key, c.ks, c.w, t, false)
}

func (c *triggerCtx[K, T, ACC, V, OUT]) Get(name string) (int64, bool) {
	v, ok := c.st.trig[name]
	return v, ok
}

func (c *triggerCtx[K, T, ACC, V, OUT]) Set(name string, v int64) {
	if c.st.trig == nil {
		c.st.trig = make(map[string]int64)
	}
	c.st.trig[name] = v
}

func (c *triggerCtx[K, T, ACC, V, OUT]) Clear(name string) { delete(c.st.trig, name) }

func (c *triggerCtx[K, T, ACC, V, OUT]) MergeState(name string, merge func(a, b int64) int64) {
	v, ok := c.st.trig[name]
	for _, m := range c.merged {
		mv, mok := m.trig[name]
		switch {
		case !mok:
		case ok:
			v = merge(v, mv)
		default:
			v, ok = mv, true
		}
	}
	if ok {
		c.Set(name, v)
	}
}
