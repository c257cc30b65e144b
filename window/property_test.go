package window_test

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

// genInput returns n elements over keys keys, with timestamps that grow by
// a few ms per element and arrive out of order: most within bound (on
// time), some later than the watermark (late, or within the allowed
// lateness), a few very late. Timestamps start around zero, often below.
func genInput(rng *rand.Rand, n, keys int, bound, spread int64) []elem {
	base := rng.Int64N(2000) - 1500
	out := make([]elem, n)
	for i := range out {
		base += rng.Int64N(12)
		var delay int64
		switch r := rng.IntN(100); {
		case r < 70:
			delay = rng.Int64N(bound + 1)
		case r < 92:
			delay = bound + rng.Int64N(spread+1)
		default:
			delay = rng.Int64N(4*spread + 1)
		}
		out[i] = elem{seq: i, key: int32(rng.IntN(keys)), ts: base - delay, val: rng.Int64N(100)}
	}
	return out
}

// configs is what the property test runs; every configuration runs at
// parallelism 1, 2 and 4 with the five window functions in one job.
var configs = []wcfg{
	{name: "tumbling", kind: "tumbling", size: 50, bound: 20, sideOutput: true},
	{name: "tumbling-offset-lateness", kind: "tumbling", size: 50, offset: 7, lateness: 40, bound: 20, sideOutput: true},
	{name: "tumbling-negative-offset", kind: "tumbling", size: 40, offset: -13, lateness: 15, bound: 10, sideOutput: true},
	{name: "sliding-offset", kind: "sliding", size: 60, slide: 20, offset: 13, bound: 20, sideOutput: true},
	{name: "sliding-uneven-lateness", kind: "sliding", size: 45, slide: 20, lateness: 30, bound: 15, sideOutput: true},
	{name: "session", kind: "session", gap: 25, bound: 20, sideOutput: true},
	{name: "session-lateness", kind: "session", gap: 25, lateness: 50, bound: 20, sideOutput: true},
	{name: "session-dynamic-lateness", kind: "dynamic", lateness: 30, bound: 20, sideOutput: true},
	{name: "tumbling-purging-lateness", kind: "tumbling", size: 80, trig: "purging", lateness: 60, bound: 20, sideOutput: true},
	{name: "session-purging-lateness", kind: "session", gap: 20, trig: "purging", lateness: 40, bound: 15},
	{name: "session-count", kind: "session", gap: 30, trig: "count", n: 3, lateness: 20, bound: 20, sideOutput: true},
	{name: "tumbling-continuous", kind: "tumbling", size: 100, trig: "continuous", n: 15, bound: 20, sideOutput: true},
	{name: "sliding-continuous-lateness", kind: "sliding", size: 90, slide: 30, trig: "continuous", n: 20, lateness: 25, bound: 20, sideOutput: true},
	{name: "global-continuous", kind: "global", trig: "continuous", n: 40, bound: 20},
	{name: "count-window", kind: "global", helper: "count", trig: "purging-count", n: 4, bound: 20},
	{name: "count-window-sliding", kind: "global", helper: "count-sliding", trig: "count", n: 2, evict: "count", evictN: 5, bound: 20},
	{name: "global-typed-trigger", kind: "global", trig: "custom-mod", bound: 20},
	{name: "global-purging-typed-trigger", kind: "global", trig: "purging-custom-mod", bound: 20},
	{name: "global-timer-trigger", kind: "global", trig: "custom-timer", bound: 20},
	{name: "tumbling-count-evictor-lateness", kind: "tumbling", size: 60, evict: "count", evictN: 3, lateness: 30, bound: 20, sideOutput: true},
	{name: "sliding-count-evictor-after", kind: "sliding", size: 80, slide: 40, evict: "count", evictN: 2, evictAfter: true, lateness: 20, bound: 20},
	{name: "tumbling-time-evictor-lateness", kind: "tumbling", size: 100, evict: "time", evictN: 30, lateness: 20, bound: 20, sideOutput: true},
	{name: "session-time-evictor-after", kind: "session", gap: 30, evict: "time", evictN: 20, evictAfter: true, lateness: 10, bound: 20},
	{name: "session-count-evictor-lateness", kind: "session", gap: 30, evict: "count", evictN: 3, lateness: 30, bound: 20, sideOutput: true},
	{name: "tumbling-delta-evictor", kind: "tumbling", size: 70, evict: "delta", deltaTh: 40, bound: 20, sideOutput: true},
	{name: "session-delta-evictor-after", kind: "session", gap: 25, evict: "delta", deltaTh: 30, evictAfter: true, lateness: 20, bound: 20},
	{name: "all-tumbling-lateness", kind: "tumbling", size: 50, lateness: 20, bound: 20, sideOutput: true, all: true},
	{name: "all-count-window", kind: "global", helper: "count", trig: "purging-count", n: 7, bound: 20, all: true},
	{name: "all-session-lateness", kind: "session", gap: 15, lateness: 10, bound: 10, sideOutput: true, all: true},
	{name: "global-never", kind: "global", bound: 20},
}

func seedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// TestWindowsMatchModel runs every configuration on random out-of-order
// multi-key streams at parallelism 1, 2 and 4 and compares the multiset of
// results of each window function, and the late side output, with the
// reference model.
func TestWindowsMatchModel(t *testing.T) {
	var total modelStats
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			ps := []int{1, 2, 4}
			if c.all {
				ps = []int{1, 3}
			}
			for _, p := range ps {
				seed := seedOf(c.name) + uint64(p)
				rng := rand.New(rand.NewPCG(seed, 1))
				n := 300 + rng.IntN(200)
				keys := 1 + rng.IntN(7)
				if c.all {
					keys = 1 // the model has one key; the engine ignores keys
				}
				input := genInput(rng, n, keys, c.bound, 60)
				m := runModel(c, input)
				t.Logf("p=%d seed=%d: %d elements, %d firings (%d by late elements), %d late, %d merges, %d evicted",
					p, seed, n, m.stats.firings, m.stats.lateFirings, m.stats.late, m.stats.merges, m.stats.evicted)
				total.firings += m.stats.firings
				total.lateFirings += m.stats.lateFirings
				total.late += m.stats.late
				total.merges += m.stats.merges
				total.evicted += m.stats.evicted
				r := runEngine(t, c, input, p)
				for _, kind := range kinds {
					if d := diff(r.main[kind].Values(), m.outputs(kind)); d != "" {
						t.Errorf("p=%d seed=%d %s: %s", p, seed, kind, d)
					}
					if c.sideOutput {
						if d := diff(r.late[kind].Values(), m.late); d != "" {
							t.Errorf("p=%d seed=%d %s late side output: %s", p, seed, kind, d)
						}
					}
				}
			}
		})
	}
	// The inputs must exercise what the model distinguishes.
	if total.lateFirings == 0 || total.late == 0 || total.merges == 0 || total.evicted == 0 {
		t.Errorf("inputs too tame: %+v", total)
	}
}
