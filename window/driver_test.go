package window_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// driver is the non-generic face of a window.Driver for ev.
type driver interface {
	Emit(v ev, ts int64)
	Watermark(wm int64)
	Check() error
	Keys() int
}

// drivers builds one operator per window function kind.
func drivers[K comparable](t *testing.T, c wcfg, w *window.Windowed[K, ev], key func(K) int32) (map[string]driver, func(kind string) (main, late []obs)) {
	t.Helper()
	ds := map[string]driver{}
	var collect = map[string]func() ([]obs, []obs){}
	add := func(kind string, d *window.Driver[ev, ev], err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		ds[kind] = d
		collect[kind] = func() ([]obs, []obs) { return toObs(d.Out), toObs(d.Late) }
	}
	fn := func() *procFn[K] { return &procFn[K]{key: key, useState: !c.merging()} }
	d, err := window.NewReduceDriver(w, combine)
	add("reduce", d, err)
	d, err = window.NewAggregateDriver(w, aggregate)
	add("aggregate", d, err)
	d, err = window.NewProcessDriver(w, window.ProcessWindowFunction[K, ev, ev](fn()))
	add("process", d, err)
	d, err = window.NewReduceProcessDriver(w, combine, window.ProcessWindowFunction[K, ev, ev](fn()))
	add("reduce-process", d, err)
	d, err = window.NewAggregateProcessDriver(w, aggregate, window.ProcessWindowFunction[K, ev, ev](fn()))
	add("aggregate-process", d, err)
	return ds, func(kind string) ([]obs, []obs) { return collect[kind]() }
}

func toObs(fs []window.Fired[ev]) []obs {
	out := make([]obs, len(fs))
	for i, f := range fs {
		out[i] = obs{ev: f.V, Ts: f.Ts, Wm: f.Wm}
	}
	return out
}

// drive feeds input with a watermark after every element (when it
// advances) and the end-of-input watermark, checking the operator's
// invariants after every step.
func drive(t *testing.T, d driver, input []elem, bound int64) {
	t.Helper()
	wm, maxTs := int64(math.MinInt64), int64(math.MinInt64)
	for i, e := range input {
		d.Emit(e.ev(), e.ts)
		if err := d.Check(); err != nil {
			t.Fatalf("after element %d (ts %d): %v", i, e.ts, err)
		}
		maxTs = max(maxTs, e.ts)
		if next := maxTs - bound - 1; next > wm {
			wm = next
			d.Watermark(wm)
			if err := d.Check(); err != nil {
				t.Fatalf("after watermark %d: %v", wm, err)
			}
		}
	}
	d.Watermark(math.MaxInt64)
	if err := d.Check(); err != nil {
		t.Fatalf("after the end: %v", err)
	}
}

// TestOperatorMatchesModel drives the window operator directly (no job)
// with many random inputs per configuration and compares every window
// function's output, the watermark before each result, and the late side
// output with the model; the operator's invariants are checked after
// every element and watermark, and at the end of the input no event-time
// state may be left.
func TestOperatorMatchesModel(t *testing.T) {
	seeds := 25
	if testing.Short() || raceEnabled {
		seeds = 5
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			env := stream.NewEnvironmentWithConfig(nil)
			src := stream.FromSlice(env, []ev{})
			late := stream.NewOutputTag[ev]("late")
			for i := range seeds {
				seed := seedOf(c.name)*31 + uint64(i)
				rng := rand.New(rand.NewPCG(seed, 2))
				keys := 1 + rng.IntN(7)
				if c.all {
					keys = 1
				}
				input := genInput(rng, 200+rng.IntN(600), keys, c.bound, 20+rng.Int64N(100))
				m := runModel(c, input)
				var ds map[string]driver
				var outputs func(string) ([]obs, []obs)
				if c.all {
					w := window.All(src, c.assigner())
					if c.helper == "count" {
						w = window.CountWindowAll(src, c.n)
					}
					ds, outputs = drivers(t, c, configure(c, w, late), nil)
				} else {
					ks := stream.KeyBy(src, func(e ev) int32 { return e.Key })
					var w *window.Windowed[int32, ev]
					switch c.helper {
					case "count":
						w = window.CountWindow(ks, c.n)
					case "count-sliding":
						w = window.CountWindowSliding(ks, c.evictN, c.n)
					default:
						w = window.Of(ks, c.assigner())
					}
					ds, outputs = drivers(t, c, configure(c, w, late), func(k int32) int32 { return k })
				}
				for _, kind := range kinds {
					drive(t, ds[kind], input, c.bound)
					main, lateOut := outputs(kind)
					if d := diff(main, m.outputs(kind)); d != "" {
						t.Fatalf("seed %d %s: %s", seed, kind, d)
					}
					if c.sideOutput {
						if d := diff(lateOut, m.late); d != "" {
							t.Fatalf("seed %d %s late side output: %s", seed, kind, d)
						}
					}
					if n := ds[kind].Keys(); c.eventTime() && n != 0 {
						t.Fatalf("seed %d %s: %d keys keep state after the end of the input", seed, kind, n)
					}
				}
			}
		})
	}
}
