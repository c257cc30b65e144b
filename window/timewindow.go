package window

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// TimeWindow is the half-open time interval [Start, End) in milliseconds.
// Every built-in assigner produces TimeWindows; the global window of
// Global is {math.MinInt64, math.MaxInt64}.
type TimeWindow struct {
	Start, End int64
}

// GlobalWindow is the one window of the Global assigner.
var GlobalWindow = TimeWindow{Start: math.MinInt64, End: math.MaxInt64}

// MaxTimestamp returns the largest timestamp that belongs to the window,
// End-1. An event-time window fires when the watermark reaches it, and its
// results carry it as their timestamp.
func (w TimeWindow) MaxTimestamp() int64 { return w.End - 1 }

// IsGlobal reports whether w is the global window, which never ends and is
// never cleaned up.
func (w TimeWindow) IsGlobal() bool { return w.End == math.MaxInt64 }

// Intersects reports whether w and o overlap or touch: as in Flink,
// [a, b) and [b, c) intersect, so session windows whose gaps touch merge.
func (w TimeWindow) Intersects(o TimeWindow) bool {
	return w.Start <= o.End && w.End >= o.Start
}

// Cover returns the smallest window that contains both w and o.
func (w TimeWindow) Cover(o TimeWindow) TimeWindow {
	return TimeWindow{Start: min(w.Start, o.Start), End: max(w.End, o.End)}
}

func (w TimeWindow) String() string {
	if w.IsGlobal() && w.Start == math.MinInt64 {
		return "GlobalWindow"
	}
	return fmt.Sprintf("TimeWindow{start=%d, end=%d}", w.Start, w.End)
}

// compareWindows orders windows by start, then end.
func compareWindows(a, b TimeWindow) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.End, b.End)
}

// WindowStart returns the start of the window of the given size (and
// offset) that contains ts: the largest start <= ts with
// start ≡ offset (mod size). It is Flink's
// TimeWindow.getWindowStartWithOffset and handles negative timestamps.
func WindowStart(ts, offset, size int64) int64 {
	rem := (ts - offset) % size
	if rem < 0 {
		return ts - (rem + size)
	}
	return ts - rem
}

// MergeTimeWindows merges windows that intersect, as Flink's
// TimeWindow.mergeWindows: it sorts them by start and calls merge once for
// every group of two or more windows that chain by intersection, with the
// group (sorted by start) and the window that covers it. Merging assigners
// may use it for their MergeWindows.
func MergeTimeWindows(windows []TimeWindow, merge func(toMerge []TimeWindow, result TimeWindow)) {
	if len(windows) < 2 {
		return
	}
	mergeSorted(slices.Clone(windows), merge)
}

// mergeSorted is MergeTimeWindows on a slice it may sort in place.
func mergeSorted(sorted []TimeWindow, merge func(toMerge []TimeWindow, result TimeWindow)) {
	if len(sorted) < 2 {
		return
	}
	slices.SortFunc(sorted, compareWindows)
	sorted = slices.Compact(sorted)
	start := 0
	cur := sorted[0]
	for i := 1; i <= len(sorted); i++ {
		if i < len(sorted) && cur.Intersects(sorted[i]) {
			cur = cur.Cover(sorted[i])
			continue
		}
		if i-start > 1 {
			merge(sorted[start:i:i], cur)
		}
		if i < len(sorted) {
			start, cur = i, sorted[i]
		}
	}
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
