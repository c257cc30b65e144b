package window_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/weirproject/weir/window"
)

// This file is a brute-force reference model of the window operator,
// written to be checked by reading, not to be fast. It replays the input
// one element at a time, as the engine sees it with a single source
// subtask: the watermark before the first element is -inf; after every
// element it becomes max(ts seen) - bound - 1 (when that advances); at
// the end of the input it becomes +inf.
//
// Per key, the model keeps its live windows, each with its elements in
// arrival order, its trigger timers and trigger state, and applies
// Flink's WindowOperator rules:
//
//   - An element's windows come from the assigner (computed here with
//     floor division, independently of window.WindowStart). A window is
//     late when its cleanup time, end-1+lateness, is at or below the
//     watermark; the element is not added to late windows. An element
//     added to none of its windows whose ts+lateness is at or below the
//     watermark is late: it goes to the side output.
//   - Session windows: the element's window [ts, ts+gap) merges with every
//     live window of its key it intersects (touching counts), chaining;
//     the merged window takes their elements in window-start order, then
//     the new element. The lateness check applies to the merged window.
//   - The trigger decides when a window fires (see trigger below); a
//     firing evaluates the function over the window's elements after the
//     evictor's "before" pass, then applies its "after" pass; an empty
//     window does not fire. Purging triggers empty the window after each
//     firing.
//   - On a watermark, every timer at or below it fires in time order
//     (including timers set while firing); a window whose cleanup timer
//     fires is dropped after its trigger ran.
//
// Each firing records the last watermark the consumer saw before it: the
// current one for firings caused by an element, the previous one for
// firings caused by a watermark (results precede the watermark).

type elem struct {
	seq int
	key int32
	ts  int64
	val int64
}

// ev is the record type of the tests: an input element (Cnt 1) or a
// window's summary.
type ev struct {
	Key          int32
	Start, End   int64
	Cnt, Val     int64
	MinTs, MaxTs int64
	Hash         uint64
	Fires        int64
}

// obs is a record as the consumer saw it: with its timestamp and the last
// watermark before it.
type obs struct {
	ev
	Ts, Wm int64
}

func (o obs) String() string {
	return fmt.Sprintf("{key %d [%d,%d) cnt %d val %d ts %d..%d hash %x fires %d | ts %d wm %d}",
		o.Key, o.Start, o.End, o.Cnt, o.Val, o.MinTs, o.MaxTs, o.Hash, o.Fires, o.Ts, o.Wm)
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (e elem) ev() ev {
	return ev{Key: e.key, Cnt: 1, Val: e.val, MinTs: e.ts, MaxTs: e.ts, Hash: mix(uint64(e.seq) + 1)}
}

// combine is the tests' reduce function: commutative and associative.
func combine(a, b ev) ev {
	return ev{
		Key: a.Key, Cnt: a.Cnt + b.Cnt, Val: a.Val + b.Val,
		MinTs: min(a.MinTs, b.MinTs), MaxTs: max(a.MaxTs, b.MaxTs), Hash: a.Hash + b.Hash,
	}
}

func summarize(es []elem) ev {
	s := es[0].ev()
	for _, e := range es[1:] {
		s = combine(s, e.ev())
	}
	return s
}

// wcfg is one windowing configuration, described for both the engine and
// the model.
type wcfg struct {
	name                     string
	kind                     string // tumbling, sliding, session, dynamic, global
	size, slide, offset, gap int64
	trig                     string // default, purging, count, purging-count, continuous, custom-mod, purging-custom-mod, custom-timer
	n                        int64  // count or interval of the trigger
	evict                    string // "", count, time, delta
	evictN                   int64
	evictAfter               bool
	deltaTh                  float64
	lateness                 int64
	bound                    int64
	sideOutput               bool
	helper                   string // count, count-sliding: built with CountWindow(Sliding)
	all                      bool   // window.All
}

func (c wcfg) eventTime() bool { return c.kind != "global" }
func (c wcfg) merging() bool   { return c.kind == "session" || c.kind == "dynamic" }

// dynamicGap is the gap of the dynamic sessions, in ms.
func dynamicGap(val int64) int64 { return 20 + (val%4)*15 }

// customTimerDelay is how long after an element the custom-timer trigger
// fires.
const customTimerDelay = 30

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// assign returns the element's windows.
func (c wcfg) assign(e elem) []window.TimeWindow {
	switch c.kind {
	case "tumbling":
		s := floorDiv(e.ts-c.offset, c.size)*c.size + c.offset
		return []window.TimeWindow{{Start: s, End: s + c.size}}
	case "sliding":
		var out []window.TimeWindow
		for s := floorDiv(e.ts-c.offset, c.slide)*c.slide + c.offset; s > e.ts-c.size; s -= c.slide {
			out = append(out, window.TimeWindow{Start: s, End: s + c.size})
		}
		return out
	case "session":
		return []window.TimeWindow{{Start: e.ts, End: e.ts + c.gap}}
	case "dynamic":
		return []window.TimeWindow{{Start: e.ts, End: e.ts + dynamicGap(e.val)}}
	}
	return []window.TimeWindow{window.GlobalWindow}
}

// mwin is one live window of one key.
type mwin struct {
	w      window.TimeWindow
	elems  []elem
	timers map[int64]bool
	count  int64 // count trigger
	fireTs int64 // continuous trigger
	hasFt  bool
	fires  int64 // firings so far (the Process functions' window state)
}

func (m *mwin) max() int64 { return m.w.End - 1 }

type model struct {
	c     wcfg
	wm    int64
	keys  map[int32]map[window.TimeWindow]*mwin
	fired []obs // summaries as Process emits them (Start, End, Fires set)
	late  []obs
	stats modelStats
}

type modelStats struct {
	firings, lateFirings, late, dropped, merges, evicted int
}

func runModel(c wcfg, input []elem) *model {
	if c.trig == "" {
		c.trig = "default"
		if !c.eventTime() {
			c.trig = "never"
		}
	}
	m := &model{c: c, wm: math.MinInt64, keys: make(map[int32]map[window.TimeWindow]*mwin)}
	maxTs := int64(math.MinInt64)
	for _, e := range input {
		m.element(e)
		maxTs = max(maxTs, e.ts)
		if wm := maxTs - c.bound - 1; wm > m.wm {
			m.advance(wm)
		}
	}
	m.advance(math.MaxInt64)
	return m
}

func (m *model) cleanup(w window.TimeWindow) int64 {
	if !m.c.eventTime() {
		return math.MaxInt64 // global windows live forever
	}
	return w.End - 1 + m.c.lateness
}

func (m *model) isLate(w window.TimeWindow) bool {
	return m.c.eventTime() && m.cleanup(w) <= m.wm
}

func (m *model) newWin(w window.TimeWindow) *mwin {
	mw := &mwin{w: w, timers: make(map[int64]bool)}
	if t := m.cleanup(w); t != math.MaxInt64 {
		mw.timers[t] = true
	}
	return mw
}

func (m *model) element(e elem) {
	wins := m.keys[e.key]
	if wins == nil {
		wins = make(map[window.TimeWindow]*mwin)
		m.keys[e.key] = wins
	}
	skipped := true
	for _, w := range m.c.assign(e) {
		var mw *mwin
		if m.c.merging() {
			actual, fresh := m.mergeIn(wins, w)
			if m.isLate(actual) {
				if !fresh {
					panic("a live window is late")
				}
				delete(wins, actual)
				continue
			}
			mw = wins[actual]
		} else {
			if m.isLate(w) {
				continue
			}
			mw = wins[w]
			if mw == nil {
				mw = m.newWin(w)
				wins[w] = mw
			}
		}
		skipped = false
		mw.elems = append(mw.elems, e)
		m.onElement(e, mw)
	}
	if skipped {
		if m.c.eventTime() && e.ts+m.c.lateness <= m.wm {
			m.stats.late++
			if m.c.sideOutput {
				m.late = append(m.late, obs{ev: e.ev(), Ts: e.ts, Wm: m.wm})
			}
		} else {
			m.stats.dropped++
		}
	}
}

// mergeIn adds the session window nw to a key's windows and merges.
func (m *model) mergeIn(wins map[window.TimeWindow]*mwin, nw window.TimeWindow) (window.TimeWindow, bool) {
	_, exists := wins[nw]
	var cands []window.TimeWindow
	for w := range wins {
		cands = append(cands, w)
	}
	if !exists {
		cands = append(cands, nw)
	}
	slices.SortFunc(cands, func(a, b window.TimeWindow) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
	// Chain intersecting windows (touching counts) into groups.
	var groups [][]window.TimeWindow
	for _, w := range cands {
		if n := len(groups); n > 0 {
			g := groups[n-1]
			cover := g[0]
			for _, x := range g[1:] {
				cover.End = max(cover.End, x.End)
			}
			if cover.Start <= w.End && cover.End >= w.Start {
				groups[n-1] = append(g, w)
				continue
			}
		}
		groups = append(groups, []window.TimeWindow{w})
	}
	result, mergedNew := nw, false
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		cover := window.TimeWindow{Start: g[0].Start, End: g[0].End}
		for _, x := range g[1:] {
			cover.End = max(cover.End, x.End)
		}
		if i := slices.Index(g, nw); i >= 0 {
			result = cover
			if !exists {
				g = slices.Delete(g, i, i+1)
				mergedNew = true
			}
		}
		if len(g) == 1 && g[0] == cover {
			continue
		}
		m.stats.merges++
		r := m.newWin(cover)
		for _, w := range g {
			old := wins[w]
			r.elems = append(r.elems, old.elems...)
			r.count += old.count
			delete(wins, w)
		}
		// The merged window's trigger timer (EventTimeTrigger.OnMerge).
		if m.c.trig == "default" || m.c.trig == "purging" {
			if r.max() > m.wm {
				r.timers[r.max()] = true
			}
		}
		wins[cover] = r
	}
	if !exists && !mergedNew {
		wins[nw] = m.newWin(nw)
		return nw, true
	}
	return result, false
}

func (m *model) purging() bool {
	return m.c.trig == "purging" || m.c.trig == "purging-count" || m.c.trig == "custom-mod" || m.c.trig == "purging-custom-mod"
}

// onElement is the trigger's OnElement.
func (m *model) onElement(e elem, mw *mwin) {
	switch m.c.trig {
	case "default", "purging":
		if mw.max() <= m.wm {
			// A late element within the allowed lateness: fire again.
			m.stats.lateFirings++
			m.fire(mw, m.wm)
			return
		}
		mw.timers[mw.max()] = true
	case "count", "purging-count":
		mw.count++
		if mw.count >= m.c.n {
			mw.count = 0
			m.fire(mw, m.wm)
		}
	case "continuous":
		if mw.max() <= m.wm {
			m.fire(mw, m.wm)
			return
		}
		mw.timers[mw.max()] = true
		if !mw.hasFt {
			mw.fireTs = min(floorDiv(e.ts, m.c.n)*m.c.n+m.c.n, mw.max())
			mw.hasFt = true
			mw.timers[mw.fireTs] = true
		}
	case "custom-mod", "purging-custom-mod":
		if e.val%5 == 0 {
			m.fire(mw, m.wm)
		}
	case "custom-timer":
		mw.timers[e.ts+customTimerDelay] = true
	}
}

// onTimer is the trigger's OnEventTime; newWm is the watermark being
// processed.
func (m *model) onTimer(mw *mwin, t, newWm int64) {
	switch m.c.trig {
	case "default", "purging":
		if t == mw.max() {
			m.fire(mw, m.wm)
		}
	case "continuous":
		if t == mw.max() {
			m.fire(mw, m.wm)
			return
		}
		if mw.hasFt && mw.fireTs == t {
			next := min(t+m.c.n, mw.max())
			if newWm == math.MaxInt64 {
				next = mw.max()
			}
			mw.fireTs = next
			mw.timers[next] = true
			m.fire(mw, m.wm)
		}
	case "custom-timer":
		m.fire(mw, m.wm)
	}
}

// evict applies the evictor's pass to elems.
func (m *model) evict(elems []elem) []elem {
	var keep []elem
	switch m.c.evict {
	case "count":
		if int64(len(elems)) <= m.c.evictN {
			return elems
		}
		keep = slices.Clone(elems[len(elems)-int(m.c.evictN):])
	case "time":
		maxTs := elems[0].ts
		for _, e := range elems {
			maxTs = max(maxTs, e.ts)
		}
		for _, e := range elems {
			if e.ts > maxTs-m.c.evictN {
				keep = append(keep, e)
			}
		}
	case "delta":
		last := elems[len(elems)-1]
		for _, e := range elems {
			if deltaOf(e.ev(), last.ev()) < m.c.deltaTh {
				keep = append(keep, e)
			}
		}
	}
	m.stats.evicted += len(elems) - len(keep)
	return keep
}

func deltaOf(a, b ev) float64 { return math.Abs(float64(a.Val - b.Val)) }

// fire evaluates the window; wmTag is the last watermark forwarded.
func (m *model) fire(mw *mwin, wmTag int64) {
	if len(mw.elems) > 0 {
		if m.c.evict != "" && !m.c.evictAfter {
			mw.elems = m.evict(mw.elems)
		}
		if len(mw.elems) > 0 {
			s := summarize(mw.elems)
			s.Start, s.End = mw.w.Start, mw.w.End
			mw.fires++
			if !m.c.merging() {
				s.Fires = mw.fires
			}
			m.fired = append(m.fired, obs{ev: s, Ts: mw.max(), Wm: wmTag})
			m.stats.firings++
			if m.c.evict != "" && m.c.evictAfter {
				mw.elems = m.evict(mw.elems)
			}
		}
	}
	if m.purging() {
		mw.elems = nil
	}
}

// advance processes the watermark wm: timers at or below it fire in time
// order, then it becomes the current watermark.
func (m *model) advance(wm int64) {
	for {
		var (
			best  *mwin
			bestK int32
			bestT int64 = math.MaxInt64
			found bool
		)
		for k, wins := range m.keys {
			for _, mw := range wins {
				for t := range mw.timers {
					if t <= wm && (!found || t < bestT) {
						best, bestK, bestT, found = mw, k, t, true
					}
				}
			}
		}
		if !found {
			break
		}
		delete(best.timers, bestT)
		m.onTimer(best, bestT, wm)
		if bestT == m.cleanup(best.w) {
			delete(m.keys[bestK], best.w)
		}
	}
	m.wm = wm
}

// outputs returns what a window function kind emits for the model's
// firings: Reduce and Aggregate know no window, the Process kinds do.
func (m *model) outputs(kind string) []obs {
	out := make([]obs, len(m.fired))
	for i, o := range m.fired {
		if kind == "reduce" || kind == "aggregate" {
			o.Start, o.End, o.Fires = 0, 0, 0
		}
		out[i] = o
	}
	return out
}
