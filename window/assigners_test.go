package window_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/window"
)

func TestWindowStartMatchesFloorDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		size := 1 + rng.Int64N(1000)
		offset := rng.Int64N(2*size-1) - (size - 1) // |offset| < size
		ts := rng.Int64N(1_000_000) - 500_000
		if rng.IntN(10) == 0 {
			ts = math.MinInt64/2 + rng.Int64N(1000)
		}
		want := floorDiv(ts-offset, size)*size + offset
		if got := window.WindowStart(ts, offset, size); got != want {
			t.Fatalf("WindowStart(%d, %d, %d) = %d, want %d", ts, offset, size, got, want)
		}
	}
	// Flink's older formula, ts - (ts - offset + size) % size, is wrong
	// here: it gives -20, a window that does not contain -25.
	if got := window.WindowStart(-25, 0, 10); got != -30 {
		t.Fatalf("WindowStart(-25, 0, 10) = %d, want -30", got)
	}
}

func TestTumblingAndSlidingAssignment(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for range 2000 {
		size := 1 + rng.Int64N(200)
		slide := 1 + rng.Int64N(size)
		offset := rng.Int64N(2*slide-1) - (slide - 1)
		ts := rng.Int64N(20000) - 10000
		got := window.SlidingEventTime(ms(size), ms(slide), ms(offset)).AssignWindows(ts, 0)
		// Brute force: every start s ≡ offset (mod slide) with
		// s <= ts < s+size, latest first.
		var want []window.TimeWindow
		for s := ts; s > ts-size; s-- {
			if floorDiv(s-offset, slide)*slide+offset == s {
				want = append(want, window.TimeWindow{Start: s, End: s + size})
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("sliding(%d, %d, %d) at %d: got %v, want %v", size, slide, offset, ts, got, want)
		}
		for _, w := range got {
			if ts < w.Start || ts > w.MaxTimestamp() {
				t.Fatalf("%v does not contain %d", w, ts)
			}
		}
		tum := window.TumblingEventTime(ms(size), ms(offset%size)).AssignWindows(ts, 0)
		if len(tum) != 1 || tum[0].End-tum[0].Start != size || ts < tum[0].Start || ts >= tum[0].End {
			t.Fatalf("tumbling(%d, %d) at %d: %v", size, offset%size, ts, tum)
		}
	}
	// Processing-time assigners use the processing time, not ts.
	if got := window.TumblingProcessingTime(time.Second).AssignWindows(5, 2500); !slices.Equal(got, []window.TimeWindow{{Start: 2000, End: 3000}}) {
		t.Fatalf("tumbling processing time: %v", got)
	}
	if got := window.ProcessingTimeSession(time.Second).AssignWindows(5, 2500); !slices.Equal(got, []window.TimeWindow{{Start: 2500, End: 3500}}) {
		t.Fatalf("processing-time session: %v", got)
	}
	if got := window.Global().AssignWindows(5, 2500); !slices.Equal(got, []window.TimeWindow{window.GlobalWindow}) {
		t.Fatalf("global: %v", got)
	}
	if window.Global().EventTime() || !window.EventTimeSession(time.Second).EventTime() || window.SlidingProcessingTime(2*time.Second, time.Second).EventTime() {
		t.Fatal("EventTime wrong")
	}
	if got := window.GlobalWindow.MaxTimestamp(); got != math.MaxInt64-1 {
		t.Fatalf("global window max timestamp %d", got)
	}
}

func TestMergeTimeWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 2000 {
		n := 1 + rng.IntN(8)
		var ws []window.TimeWindow
		for range n {
			s := rng.Int64N(100)
			ws = append(ws, window.TimeWindow{Start: s, End: s + 1 + rng.Int64N(20)})
		}
		covered := map[window.TimeWindow]bool{}
		var results []window.TimeWindow
		window.MergeTimeWindows(ws, func(toMerge []window.TimeWindow, result window.TimeWindow) {
			if len(toMerge) < 2 {
				t.Fatalf("merge of %d windows", len(toMerge))
			}
			cover := toMerge[0]
			for _, w := range toMerge {
				if covered[w] {
					t.Fatalf("%v merged twice", w)
				}
				covered[w] = true
				cover = cover.Cover(w)
			}
			if cover != result {
				t.Fatalf("result %v, cover %v", result, cover)
			}
			results = append(results, result)
		})
		// After merging, the groups and the unmerged windows must be
		// pairwise disjoint (not even touching), and each group connected.
		var final []window.TimeWindow
		final = append(final, results...)
		for _, w := range ws {
			if !covered[w] && !slices.Contains(final, w) {
				final = append(final, w)
			}
		}
		for i, a := range final {
			for j, b := range final {
				if i != j && a.Intersects(b) {
					t.Fatalf("%v and %v intersect after merging %v", a, b, ws)
				}
			}
		}
	}
	a, b := window.TimeWindow{Start: 0, End: 5}, window.TimeWindow{Start: 5, End: 9}
	if !a.Intersects(b) || a.Intersects(window.TimeWindow{Start: 6, End: 9}) {
		t.Fatal("touching windows must intersect, separate ones not")
	}
}

func TestTriggerResult(t *testing.T) {
	for _, c := range []struct {
		r           window.TriggerResult
		fire, purge bool
		s           string
	}{
		{window.Continue, false, false, "CONTINUE"},
		{window.Fire, true, false, "FIRE"},
		{window.Purge, false, true, "PURGE"},
		{window.FireAndPurge, true, true, "FIRE_AND_PURGE"},
	} {
		if c.r.IsFire() != c.fire || c.r.IsPurge() != c.purge || c.r.String() != c.s {
			t.Errorf("%v: fire %v purge %v", c.r, c.r.IsFire(), c.r.IsPurge())
		}
	}
}

func TestEvictorsOnTheirOwn(t *testing.T) {
	// The built-in evictors only need timestamps (count, time); ValueAt
	// needs the operator's buffer, so DeltaEvictor is covered by the
	// model tests.
	type evictCase struct {
		e       window.Evictor
		ts      []int64
		before  []bool // evicted by EvictBefore
		after   []bool // evicted by EvictAfter
		comment string
	}
	for _, c := range []evictCase{
		{window.CountEvictor(2), []int64{1, 2, 3, 4}, []bool{true, true, false, false}, nil, "keeps the last 2"},
		{window.CountEvictor(5), []int64{1, 2, 3}, nil, nil, "fewer than the count"},
		{window.CountEvictor(1, true), []int64{1, 2, 3}, nil, []bool{true, true, false}, "after"},
		{window.TimeEvictor(10 * time.Millisecond), []int64{5, 25, 21, 20, 30}, []bool{true, false, false, true, false}, nil, "keeps ts > max-10"},
		{window.TimeEvictor(10*time.Millisecond, true), []int64{5, 30}, nil, []bool{true, false}, "after"},
		{window.TimeEvictor(time.Millisecond), []int64{math.MinInt64, 5}, nil, nil, "no timestamps"},
	} {
		for pass, want := range [][]bool{c.before, c.after} {
			e := &tsElements{ts: c.ts}
			if pass == 0 {
				c.e.EvictBefore(e, window.TimeWindow{}, nil)
			} else {
				c.e.EvictAfter(e, window.TimeWindow{}, nil)
			}
			if want == nil {
				want = make([]bool, len(c.ts))
			}
			got := make([]bool, len(c.ts))
			for i := range got {
				got[i] = e.Evicted(i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%v (%s) pass %d: evicted %v, want %v", c.e, c.comment, pass, got, want)
			}
		}
	}
}

type tsElements struct {
	ts      []int64
	evicted map[int]bool
}

func (e *tsElements) Len() int              { return len(e.ts) }
func (e *tsElements) Timestamp(i int) int64 { return e.ts[i] }
func (e *tsElements) Evicted(i int) bool    { return e.evicted[i] }
func (e *tsElements) Evict(i int) {
	if e.evicted == nil {
		e.evicted = map[int]bool{}
	}
	e.evicted[i] = true
}
