package window

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/weirproject/weir/internal/runtime"
)

// The fast path runs the common case — aligned event-time windows
// (tumbling or sliding), the default EventTimeTrigger, no evictor and an
// incremental function (Reduce, Aggregate, with or without a
// ProcessWindowFunction) — without per-key windows and timers. Every
// window of every key then has the same size and the trigger's decisions
// depend on the window and the watermark alone, so the operator keeps one
// pane per window start, holding the accumulator (and the function's
// per-window state) of each key with elements in that window, and the
// open panes sorted by start, which also sorts them by MaxTimestamp and by
// cleanup time. Its behaviour is the general operator's:
//
//   - an element goes to each of its windows that is not late (cleanup
//     time MaxTimestamp+L above the watermark); a window whose
//     MaxTimestamp the watermark passed already fires at once for the
//     element's key, with its updated contents (EventTimeTrigger.OnElement
//     returns Fire); an element that no window took and whose ts+L is at
//     or below the watermark goes to the late side output;
//   - a watermark fires, in time order, every pane whose MaxTimestamp it
//     passed (all keys of the pane) and cleans up every pane whose cleanup
//     time it passed (WindowClearer.Clear per key, then the pane goes);
//     when a firing and a cleanup fall at the same time the older window
//     comes first, as the general operator's timers do, and a pane fires
//     before it is cleaned up. Only then is the watermark forwarded.
//
// Per-key state (GlobalState) is made only when the function asks for it
// and dropped when it is empty.
type fastState[K comparable, ACC any] struct {
	size, slide, offset, lateness int64

	panes []*pane[K, ACC] // open panes by start, ascending
	last  *pane[K, ACC]   // the pane the last element went to
	free  []*pane[K, ACC] // cleaned-up panes for reuse

	global  map[K]*State
	clearer WindowClearer

	// key is the key being evaluated while inCall.
	key    K
	inCall bool
}

// pane is one window start: the slot of every key with elements in the
// window, in the order the keys arrived.
type pane[K comparable, ACC any] struct {
	start int64
	idx   map[K]int32
	keys  []K
	slots []slot[ACC]
}

// slot is one window of one key.
type slot[ACC any] struct {
	acc   ACC
	state State
}

// maxFreePanes bounds the panes kept for reuse.
const maxFreePanes = 8

func newFastState[K comparable, T, ACC any](s *spec[T], fn any) *fastState[K, ACC] {
	fs := &fastState[K, ACC]{size: s.size, slide: s.slide, offset: s.offset, lateness: s.lateness}
	fs.clearer, _ = fn.(WindowClearer)
	return fs
}

func (fs *fastState[K, ACC]) maxTs(p *pane[K, ACC]) int64 { return p.start + fs.size - 1 }

func (fs *fastState[K, ACC]) cleanup(p *pane[K, ACC]) int64 {
	return satAdd(p.start+fs.size-1, fs.lateness)
}

// pane returns the pane of start, made if needed.
func (fs *fastState[K, ACC]) pane(start int64) *pane[K, ACC] {
	if p := fs.last; p != nil && p.start == start {
		return p
	}
	i, found := slices.BinarySearchFunc(fs.panes, start, func(p *pane[K, ACC], s int64) int {
		switch {
		case p.start < s:
			return -1
		case p.start > s:
			return 1
		}
		return 0
	})
	if found {
		fs.last = fs.panes[i]
		return fs.last
	}
	var p *pane[K, ACC]
	if n := len(fs.free); n > 0 {
		p = fs.free[n-1]
		fs.free[n-1] = nil
		fs.free = fs.free[:n-1]
	} else {
		p = &pane[K, ACC]{idx: make(map[K]int32)}
	}
	p.start = start
	fs.panes = slices.Insert(fs.panes, i, p)
	fs.last = p
	return p
}

// numKeys counts the keys with state.
func (fs *fastState[K, ACC]) numKeys() int {
	keys := make(map[K]struct{})
	for _, p := range fs.panes {
		for _, k := range p.keys {
			keys[k] = struct{}{}
		}
	}
	for k := range fs.global {
		keys[k] = struct{}{}
	}
	return len(keys)
}

// emitFast is Emit on the fast path.
func (op *operator[K, T, ACC, V, OUT]) emitFast(v T, ts int64) {
	op.oc.Enter()
	if ts == runtime.NoTimestamp {
		op.oc.Fail(errNoTimestamp)
	}
	fs := op.fast
	wm := op.timers.CurrentWatermark()
	key := op.key(v)
	skipped := true
	// The windows latest start first, as the sliding assigner's.
	for start := WindowStart(ts, fs.offset, fs.slide); start > ts-fs.size; start -= fs.slide {
		maxTs := start + fs.size - 1
		if satAdd(maxTs, fs.lateness) <= wm {
			continue
		}
		p := fs.pane(start)
		i, ok := p.idx[key]
		if ok {
			s := &p.slots[i]
			s.acc = op.f.add(s.acc, v)
		} else {
			i = int32(len(p.slots))
			p.idx[key] = i
			p.keys = append(p.keys, key)
			p.slots = append(p.slots, slot[ACC]{acc: op.f.first(v)})
		}
		skipped = false
		if maxTs <= wm {
			op.fireSlot(p, i)
		}
	}
	if skipped && satAdd(ts, fs.lateness) <= wm && op.late != nil {
		op.late.Emit(v, ts)
		op.oc.Enter()
	}
}

// fireSlot evaluates the window function for one key of a pane.
func (op *operator[K, T, ACC, V, OUT]) fireSlot(p *pane[K, ACC], i int32) {
	s := &p.slots[i]
	op.vals = append(op.vals[:0], op.f.get(s.acc))
	op.setFastContext(p, i)
	op.oc.Enter()
	if err := op.fn.Process(p.keys[i], &op.pctx, op.vals, &op.col); err != nil {
		op.oc.Fail(err)
	}
	op.endFastContext()
}

func (op *operator[K, T, ACC, V, OUT]) setFastContext(p *pane[K, ACC], i int32) {
	fs := op.fast
	w := TimeWindow{Start: p.start, End: p.start + fs.size}
	op.pctx.window, op.pctx.win, op.pctx.global = w, &p.slots[i].state, nil
	op.pctx.ts = w.MaxTimestamp()
	op.col.ts = op.pctx.ts
	fs.key, fs.inCall = p.keys[i], true
}

// endFastContext ends a call: per-key state left empty goes.
func (op *operator[K, T, ACC, V, OUT]) endFastContext() {
	fs := op.fast
	if g := op.pctx.global; g != nil && g.Len() == 0 && fs.global[fs.key] == g {
		delete(fs.global, fs.key)
	}
	var zero K
	fs.key, fs.inCall = zero, false
	op.pctx.win, op.pctx.global = nil, nil
}

// fastGlobal is the ProcessContext's lazyGlobal on the fast path.
func (op *operator[K, T, ACC, V, OUT]) fastGlobal() *State {
	fs := op.fast
	if !fs.inCall {
		return nil
	}
	g := fs.global[fs.key]
	if g == nil {
		g = &State{}
		if fs.global == nil {
			fs.global = make(map[K]*State)
		}
		fs.global[fs.key] = g
	}
	return g
}

// advanceFast fires and cleans up the panes the watermark passed, moving
// from wm0 to wm (> wm0).
func (op *operator[K, T, ACC, V, OUT]) advanceFast(wm0, wm int64) {
	fs := op.fast
	panes := fs.panes
	n := len(panes)
	// Panes that ended at or before wm0 fired already.
	f := sort.Search(n, func(i int) bool { return fs.maxTs(panes[i]) > wm0 })
	c := 0 // cleanup goes in start order too; c <= f
	for {
		fireOK := f < n && fs.maxTs(panes[f]) <= wm
		cleanOK := c < n && fs.cleanup(panes[c]) <= wm
		if !fireOK && !cleanOK {
			break
		}
		if fireOK && (!cleanOK || c == f || fs.maxTs(panes[f]) < fs.cleanup(panes[c])) {
			p := panes[f]
			for i := range p.slots {
				op.fireSlot(p, int32(i))
			}
			f++
			continue
		}
		op.cleanPane(panes[c])
		c++
	}
	if c > 0 {
		fs.last = nil
		fs.panes = slices.Delete(fs.panes, 0, c)
	}
}

// cleanPane drops a pane: the function's Clear runs for every key, then
// the pane is kept for reuse.
func (op *operator[K, T, ACC, V, OUT]) cleanPane(p *pane[K, ACC]) {
	fs := op.fast
	if fs.clearer != nil {
		for i := range p.slots {
			op.setFastContext(p, int32(i))
			op.oc.Enter()
			if err := fs.clearer.Clear(&op.pctx); err != nil {
				op.oc.Fail(err)
			}
			op.endFastContext()
		}
	}
	clear(p.idx)
	clear(p.keys)
	clear(p.slots)
	p.keys, p.slots = p.keys[:0], p.slots[:0]
	if len(fs.free) < maxFreePanes {
		fs.free = append(fs.free, p)
	}
}

// checkFastInvariants is checkInvariants for the fast path.
func (op *operator[K, T, ACC, V, OUT]) checkFastInvariants(afterWatermark bool) error {
	fs := op.fast
	wm := op.watermark()
	if len(op.keys) != 0 {
		return fmt.Errorf("fast path: %d keys in the general state", len(op.keys))
	}
	if n := op.timers.NumEventTimeTimers() + op.timers.NumProcessingTimeTimers(); n != 0 {
		return fmt.Errorf("fast path: %d timers set", n)
	}
	prev := int64(math.MinInt64)
	for i, p := range fs.panes {
		if i > 0 && p.start <= prev {
			return fmt.Errorf("fast path: panes out of order: %d after %d", p.start, prev)
		}
		prev = p.start
		if len(p.slots) == 0 {
			return fmt.Errorf("fast path: empty pane %d kept", p.start)
		}
		if len(p.idx) != len(p.slots) || len(p.keys) != len(p.slots) {
			return fmt.Errorf("fast path: pane %d has %d keys, %d indexed, %d slots", p.start, len(p.keys), len(p.idx), len(p.slots))
		}
		if fs.cleanup(p) <= wm {
			return fmt.Errorf("fast path: pane %d kept after its cleanup time %d (watermark %d)", p.start, fs.cleanup(p), wm)
		}
	}
	for k, g := range fs.global {
		if g.Len() == 0 {
			return fmt.Errorf("fast path: key %v: empty state kept", k)
		}
	}
	return nil
}
