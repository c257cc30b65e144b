package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// This file is a brute-force reference model of what windowcount prints,
// written to be checked by reading rather than to be fast. It follows
// Flink's WindowOperator with the EventTimeTrigger, the
// BoundedOutOfOrderness watermark strategy emitting after every element,
// and a late-data side output.
//
// The rules, all times in milliseconds:
//
//  1. Elements are processed one by one in file order. Before the first
//     element the watermark is -inf. After each element the watermark
//     becomes wm = maxTs - outOfOrderness - 1, where maxTs is the largest
//     timestamp seen so far (so it never goes back). When the input ends
//     the watermark becomes +inf.
//  2. An element is processed against the watermark of the elements
//     before it; every watermark advance then fires what it makes due.
//  3. A window [s, e) is due when wm >= e-1 (its last millisecond has
//     passed). It is expired when wm >= e-1+L (L = allowed lateness); its
//     state is then gone.
//  4. Tumbling and sliding windows (tumbling = sliding with slide = size):
//     the windows of an element with timestamp ts are all [s, s+size)
//     with s a multiple of slide and s <= ts < s+size. For each of them:
//     if it is expired, the element is not added to it. Otherwise its
//     count grows by one and, if it is already due (it fired before, or
//     became due without any element), it fires at once with the new
//     count; if it is not due yet, it fires once when the watermark makes
//     it due. An element that was added to none of its windows is late:
//     "late key ts".
//  5. Session windows with gap g: an element opens the window [ts, ts+g).
//     It merges with every live (not expired) session of its key that it
//     intersects, where, as in Flink's TimeWindow.intersects, windows that
//     merely touch ([a,b) and [b,c)) intersect too; the merged session
//     spans them all and counts all their elements plus this one. If it
//     merges with nothing and [ts, ts+g) is itself expired, the element is
//     late. (If it merges with a live session, it is counted even when its
//     own window is expired: Flink checks the merged window.) Otherwise:
//     if the resulting session is already due, it fires at once with its
//     count; else it fires when the watermark makes it due. A session
//     that fired and later grows by a merge fires again when the grown
//     session is due, with the total count.
//  6. At the end of the input (watermark +inf) every window that has
//     elements not yet fired fires.
//
// A firing prints "key start end count".

// record is one valid line of the input.
type record struct {
	key string
	ts  int64
}

// spec is the window configuration, in milliseconds.
type spec struct {
	kind           windowKind
	size, slide    int64 // tumbling (slide = size) and sliding windows
	gap            int64 // session windows
	outOfOrderness int64
	lateness       int64
}

func (s spec) String() string {
	switch s.kind {
	case tumbling:
		return fmt.Sprintf("tumbling %dms, ooo %dms, lateness %dms", s.size, s.outOfOrderness, s.lateness)
	case sliding:
		return fmt.Sprintf("sliding %dms/%dms, ooo %dms, lateness %dms", s.size, s.slide, s.outOfOrderness, s.lateness)
	}
	return fmt.Sprintf("session gap %dms, ooo %dms, lateness %dms", s.gap, s.outOfOrderness, s.lateness)
}

// modelStats counts the interesting things the model saw, so that tests
// can check that their inputs exercise them.
type modelStats struct {
	firings, late, refirings, merges, absorbedLate int
	touching                                       int // merges of sessions that only touch
}

// model returns the lines windowcount prints for recs, in no particular
// order.
func model(recs []record, sp spec) ([]string, modelStats) {
	if sp.kind == session {
		return sessionModel(recs, sp)
	}
	return slidingModel(recs, sp)
}

// watermarks calls process for each record with the watermark before it,
// then advance with the watermark after it, and finally advance(+inf).
func watermarks(recs []record, outOfOrderness int64, process func(r record, wm int64), advance func(wm int64)) {
	wm, maxTs := int64(math.MinInt64), int64(math.MinInt64)
	for _, r := range recs {
		process(r, wm)
		maxTs = max(maxTs, r.ts)
		wm = maxTs - outOfOrderness - 1
		advance(wm)
	}
	advance(math.MaxInt64)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// slidingModel implements rule 4.
func slidingModel(recs []record, sp spec) ([]string, modelStats) {
	type window struct {
		key        string
		start, end int64
	}
	var out []string
	var st modelStats
	counts := make(map[window]int64)
	fired := make(map[window]bool) // fired at least once
	var pending []window           // have elements, not due yet
	fire := func(w window) {
		out = append(out, fmt.Sprintf("%s %d %d %d", w.key, w.start, w.end, counts[w]))
		st.firings++
		if fired[w] {
			st.refirings++
		}
		fired[w] = true
	}
	process := func(r record, wm int64) {
		added := false
		for k := floorDiv(r.ts, sp.slide); k*sp.slide+sp.size > r.ts; k-- {
			w := window{r.key, k * sp.slide, k*sp.slide + sp.size}
			if w.end-1+sp.lateness <= wm {
				continue // expired
			}
			added = true
			counts[w]++
			if w.end-1 <= wm {
				fire(w) // due already: fire at once
			} else if !slices.Contains(pending, w) {
				pending = append(pending, w)
			}
		}
		if !added {
			out = append(out, fmt.Sprintf("late %s %d", r.key, r.ts))
			st.late++
		}
	}
	advance := func(wm int64) {
		var still []window
		for _, w := range pending {
			if w.end-1 <= wm {
				fire(w)
			} else {
				still = append(still, w)
			}
		}
		pending = still
	}
	watermarks(recs, sp.outOfOrderness, process, advance)
	return out, st
}

// sessionModel implements rule 5.
func sessionModel(recs []record, sp spec) ([]string, modelStats) {
	type session struct {
		start, end, count int64
		pending           bool // has elements that have not fired
		fired             bool
	}
	var out []string
	var st modelStats
	live := make(map[string][]*session) // per key, the sessions not expired
	var keys []string                   // the keys of live, in order of appearance
	fire := func(key string, s *session) {
		out = append(out, fmt.Sprintf("%s %d %d %d", key, s.start, s.end, s.count))
		st.firings++
		if s.fired {
			st.refirings++
		}
		s.fired, s.pending = true, false
	}
	process := func(r record, wm int64) {
		merged := &session{start: r.ts, end: r.ts + sp.gap, count: 1}
		var rest []*session
		n := 0
		// Live sessions never intersect each other (they would have
		// merged), so the sessions to merge are exactly those that
		// intersect the element's own window.
		for _, s := range live[r.key] {
			if s.start <= r.ts+sp.gap && s.end >= r.ts { // intersects [ts, ts+gap)
				merged.start, merged.end = min(merged.start, s.start), max(merged.end, s.end)
				merged.count += s.count
				merged.fired = merged.fired || s.fired
				n++
				if s.end == r.ts || s.start == r.ts+sp.gap {
					st.touching++
				}
			} else {
				rest = append(rest, s)
			}
		}
		ownExpired := r.ts+sp.gap-1+sp.lateness <= wm
		if n == 0 && ownExpired {
			out = append(out, fmt.Sprintf("late %s %d", r.key, r.ts))
			st.late++
			return
		}
		if n > 0 {
			st.merges++
			if ownExpired {
				st.absorbedLate++
			}
		}
		if _, ok := live[r.key]; !ok {
			keys = append(keys, r.key)
		}
		live[r.key] = append(rest, merged)
		if merged.end-1 <= wm {
			fire(r.key, merged)
		} else {
			merged.pending = true
		}
	}
	advance := func(wm int64) {
		for _, k := range keys {
			var still []*session
			for _, s := range live[k] {
				if s.pending && s.end-1 <= wm {
					fire(k, s)
				}
				if s.end-1+sp.lateness > wm {
					still = append(still, s)
				}
			}
			live[k] = still
		}
	}
	watermarks(recs, sp.outOfOrderness, process, advance)
	return out, st
}

// TestModel checks the model on small cases worked out by hand.
func TestModel(t *testing.T) {
	recs := func(s string) []record {
		var out []record
		for _, f := range strings.Fields(s) {
			k, ts, _ := strings.Cut(f, "@")
			var v int64
			fmt.Sscan(ts, &v)
			out = append(out, record{k, v})
		}
		return out
	}
	cases := []struct {
		name string
		in   string
		sp   spec
		want string // lines separated by "|"
	}{
		{"tumbling in order", "a@1 b@2 a@9 a@10 a@25", spec{kind: tumbling, size: 10, slide: 10},
			"a 0 10 2|b 0 10 1|a 10 20 1|a 20 30 1"},
		{"tumbling late", "a@1 a@12 a@5 a@9 a@15", spec{kind: tumbling, size: 10, slide: 10},
			// a@12 makes wm 11: [0,10) fires with 1; a@5, a@9 are late.
			"a 0 10 1|late a 5|late a 9|a 10 20 2"},
		{"tumbling out-of-orderness", "a@1 a@12 a@5 a@9 a@15", spec{kind: tumbling, size: 10, slide: 10, outOfOrderness: 2},
			// wm 9 after a@12 fires [0,10) with 1; a@5 arrives at wm 9: late.
			"a 0 10 1|late a 5|late a 9|a 10 20 2"},
		{"tumbling bound keeps window open", "a@1 a@12 a@5 a@9 a@15", spec{kind: tumbling, size: 10, slide: 10, outOfOrderness: 3},
			// wm 8 after a@12: [0,10) still open; a@15 makes wm 11.
			"a 0 10 3|a 10 20 2"},
		{"tumbling allowed lateness", "a@1 a@12 a@5 a@30 a@9 a@28", spec{kind: tumbling, size: 10, slide: 10, lateness: 5},
			// wm 11: [0,10) fires 1; a@5 at wm 11 (9+5 > 11) refires 2;
			// a@30 makes wm 29: [10,20) fires 1, [0,10) expires; a@9 is
			// late; a@28 counts in [20,30), due already: fires at once.
			"a 0 10 1|a 0 10 2|a 10 20 1|late a 9|a 20 30 1|a 30 40 1"},
		{"window due without elements fires at once", "b@50 a@3", spec{kind: tumbling, size: 10, slide: 10, lateness: 45},
			"a 0 10 1|b 50 60 1"},
		{"sliding", "a@1 a@6 a@12", spec{kind: sliding, size: 10, slide: 5},
			"a -5 5 1|a 0 10 2|a 5 15 2|a 10 20 1"},
		{"sliding partly late", "a@12 a@7", spec{kind: sliding, size: 10, slide: 5},
			// wm 11: [0,10) was never due before; a@7 is in [0,10)
			// (expired) and [5,15) (open): counted, not late.
			"a 5 15 2|a 10 20 1"},
		{"negative timestamps", "a@-7 a@-1", spec{kind: sliding, size: 10, slide: 5},
			"a -15 -5 1|a -10 0 2|a -5 5 1"},
		{"session merge", "a@1 a@4 b@2 a@20 a@12", spec{kind: session, gap: 5},
			// a@1,a@4 -> [1,9); a@20 (wm 19) fires it; a@12 at wm 19 is
			// late ([12,17) expired, touches nothing live); [20,25).
			"a 1 9 2|b 2 7 1|late a 12|a 20 25 1"},
		{"sessions that touch merge", "a@0 a@5", spec{kind: session, gap: 5},
			"a 0 10 2"},
		{"session bridge", "a@0 a@20 a@10", spec{kind: session, gap: 10, outOfOrderness: 100},
			"a 0 30 3"},
		{"session merge out of order", "a@0 a@12 a@8 a@40", spec{kind: session, gap: 5, lateness: 10},
			// a@12 (wm 11) fires [0,5) with 1; a@8 ([8,13)) merges with
			// [12,17) only; a@40 fires [8,17) with 2, expires [0,5).
			"a 0 5 1|a 8 17 2|a 40 45 1"},
		{"fired session grows and fires again", "a@0 a@10 a@3 a@30", spec{kind: session, gap: 5, lateness: 10},
			// a@10 (wm 9) fires [0,5) 1; a@3 at wm 9 merges [0,5) and
			// [3,8) into [0,8), due: fires 2 at once; a@30 fires [10,15)
			// and expires everything.
			"a 0 5 1|a 0 8 2|a 10 15 1|a 30 35 1"},
		{"expired element absorbed by a live session", "a@45 b@51 a@36", spec{kind: session, gap: 10},
			// wm 50: [36,46) is expired but touches the live [45,55).
			"a 36 55 2|b 51 61 1"},
	}
	for _, c := range cases {
		got, _ := model(recs(c.in), c.sp)
		slices.Sort(got)
		want := strings.Split(c.want, "|")
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s (%v):\n got %q\nwant %q", c.name, c.sp, got, want)
		}
	}
}
