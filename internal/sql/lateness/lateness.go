// Package lateness is a model of which rows Flink's window operators
// drop as late, for tests and benchmarks to compare weir's results with:
// the watermark each row meets (the table watermark assigner's eager and
// periodic emission) and, given it, the rows of TUMBLE, HOP, CUMULATE and
// SESSION aggregations (COUNT, SUM and MAX of a value per window and key).
package lateness

// Event is a row: a key, a value and its event time (ms).
type Event struct {
	K  string
	V  int64
	TS int64
}

// Window is a window of a key.
type Window struct {
	Start, End int64
	K          string
}

// Agg is a window's COUNT(*), SUM(v) and MAX(v).
type Agg struct{ N, Sum, Max int64 }

// Watermarks is the watermark each event meets at the window operator
// (wms[i] for events[i]) under a WATERMARK FOR ts AS ts - delay at
// parallelism 1, as Flink's WatermarkAssignerOperator emits it: the
// largest ts - delay so far, starting at 0, emitted after the row that
// advanced it by more than interval since the last emission (eagerly),
// and, when slow, also by the periodic timer before the next row, which
// then emits every advance.
func Watermarks(events []Event, delay, interval int64, slow bool) []int64 {
	wms := make([]int64, len(events))
	var current, last int64
	for i, e := range events {
		wms[i] = last
		current = max(current, e.TS-delay)
		if current-last > interval || slow && current > last {
			last = current
		}
	}
	return wms
}

// Windows gives the windows of an event time.
type Windows func(ts int64) [][2]int64

// Tumble is TUMBLE(size).
func Tumble(size int64) Windows {
	return func(ts int64) [][2]int64 {
		s := ts - floorMod(ts, size)
		return [][2]int64{{s, s + size}}
	}
}

// Hop is HOP(slide, size).
func Hop(slide, size int64) Windows {
	return func(ts int64) [][2]int64 {
		var out [][2]int64
		for s := ts - floorMod(ts, slide); s > ts-size; s -= slide {
			out = append(out, [2]int64{s, s + size})
		}
		return out
	}
}

// Cumulate is CUMULATE(step, size).
func Cumulate(step, size int64) Windows {
	return func(ts int64) [][2]int64 {
		var out [][2]int64
		s := ts - floorMod(ts, size)
		for e := s + step; e <= s+size; e += step {
			if e > ts {
				out = append(out, [2]int64{s, e})
			}
		}
		return out
	}
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

func add(out map[Window]Agg, w Window, v int64) {
	a, ok := out[w]
	if !ok {
		a.Max = v
	}
	a.N++
	a.Sum += v
	a.Max = max(a.Max, v)
	out[w] = a
}

// Sliced is Flink's rule for TUMBLE, HOP and CUMULATE: a row counts in
// each of its windows whose end - 1 is above the watermark it meets (the
// slicing operators drop a row only when the last window of its slice has
// fired, and add a late slice's row to the windows not fired yet); it is
// late when that leaves none.
func Sliced(events []Event, wms []int64, windows Windows) (map[Window]Agg, int) {
	out := map[Window]Agg{}
	late := 0
	for i, e := range events {
		counted := false
		for _, w := range windows(e.TS) {
			if w[1]-1 > wms[i] {
				add(out, Window{w[0], w[1], e.K}, e.V)
				counted = true
			}
		}
		if !counted {
			late++
		}
	}
	return out, late
}

// Session is Flink's merging window rule for SESSION(gap): per key the
// open sessions; a row's window [ts, ts+gap) merges with the open
// sessions it intersects (touching counts, as TimeWindow.intersects), and
// the row is dropped only when the merged window's end - 1 is at or below
// the watermark; a session fires, and closes, when the watermark reaches
// its end - 1.
func Session(events []Event, wms []int64, gap int64) (map[Window]Agg, int) {
	type sess struct {
		start, end int64
		rows       []Event
	}
	open := map[string][]sess{}
	out := map[Window]Agg{}
	fire := func(k string, s sess) {
		for _, r := range s.rows {
			add(out, Window{s.start, s.end, k}, r.V)
		}
	}
	late := 0
	for i, e := range events {
		wm := wms[i]
		for k, ss := range open {
			kept := ss[:0]
			for _, s := range ss {
				if s.end-1 <= wm {
					fire(k, s)
				} else {
					kept = append(kept, s)
				}
			}
			open[k] = kept
		}
		cur := sess{e.TS, e.TS + gap, []Event{e}}
		var kept []sess
		merged := false
		for _, s := range open[e.K] {
			if s.start <= cur.end && s.end >= cur.start {
				cur = sess{min(s.start, cur.start), max(s.end, cur.end), append(s.rows, cur.rows...)}
				merged = true
				continue
			}
			kept = append(kept, s)
		}
		if !merged && cur.end-1 <= wm {
			late++
			continue
		}
		open[e.K] = append(kept, cur)
	}
	for k, ss := range open {
		for _, s := range ss {
			fire(k, s)
		}
	}
	return out, late
}
