package window_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// feeder drives an operator as drive does, in steps.
type feeder struct {
	wm, maxTs int64
}

func (f *feeder) feed(t *testing.T, d driver, input []elem, bound int64) {
	t.Helper()
	for _, e := range input {
		d.Emit(e.ev(), e.ts)
		if err := d.Check(); err != nil {
			t.Fatalf("after element (ts %d): %v", e.ts, err)
		}
		f.maxTs = max(f.maxTs, e.ts)
		if next := f.maxTs - f.boundOf(bound); next > f.wm {
			f.wm = next
			d.Watermark(f.wm)
			if err := d.Check(); err != nil {
				t.Fatalf("after watermark %d: %v", f.wm, err)
			}
		}
	}
}

func (f *feeder) boundOf(bound int64) int64 { return bound + 1 }

func (f *feeder) end(t *testing.T, d driver) {
	t.Helper()
	d.Watermark(math.MaxInt64)
	if err := d.Check(); err != nil {
		t.Fatalf("after the end: %v", err)
	}
}

// TestSnapshotRoundTrip runs every configuration of the property test and
// every window function part way, snapshots the operator, restores the
// snapshot into a fresh operator, and continues both with the rest of the
// input: the restored operator must produce exactly the original's
// remaining output (results, timestamps, watermarks before them, late
// side output). Both the general operator and the fast path are covered,
// with sessions, evictors, lateness and custom triggers; some cuts are
// taken twice (snapshot of a restored operator).
func TestSnapshotRoundTrip(t *testing.T) {
	seeds := 6
	if testing.Short() || raceEnabled {
		seeds = 2
	}
	fastSeen, generalSeen := false, false
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			env := stream.NewEnvironmentWithConfig(nil)
			src := stream.FromSlice(env, []ev{})
			late := stream.NewOutputTag[ev]("late")
			for i := range seeds {
				seed := seedOf(c.name)*17 + uint64(i)
				rng := rand.New(rand.NewPCG(seed, 3))
				keys := 1 + rng.IntN(7)
				if c.all {
					keys = 1
				}
				input := genInput(rng, 100+rng.IntN(400), keys, c.bound, 20+rng.Int64N(100))
				cuts := []int{rng.IntN(len(input) + 1)}
				if i%2 == 1 {
					cuts = append(cuts, cuts[0]+rng.IntN(len(input)-cuts[0]+1))
				}
				var ds map[string]driver
				if c.all {
					w := window.All(src, c.assigner())
					if c.helper == "count" {
						w = window.CountWindowAll(src, c.n)
					}
					ds, _ = drivers(t, c, configure(c, w, late), nil)
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
					ds, _ = drivers(t, c, configure(c, w, late), func(k int32) int32 { return k })
				}
				for _, kind := range kinds {
					orig := ds[kind].(*window.Driver[ev, ev])
					if orig.FastPath() {
						fastSeen = true
					} else {
						generalSeen = true
					}
					// chain[0] is the original; each cut restores the
					// last operator's snapshot into a new one, and every
					// operator goes on with the same input.
					chain := []*window.Driver[ev, ev]{orig}
					marks, lateMarks := []int{0}, []int{0}
					f := feeder{wm: math.MinInt64, maxTs: math.MinInt64}
					feedAll := func(seg []elem, end bool) {
						for _, d := range chain {
							g := f
							g.feed(t, d, seg, c.bound)
							if end {
								g.end(t, d)
							}
						}
						for _, e := range seg {
							f.maxTs = max(f.maxTs, e.ts)
							if next := f.maxTs - f.boundOf(c.bound); next > f.wm {
								f.wm = next
							}
						}
					}
					from := 0
					for _, cut := range cuts {
						feedAll(input[from:cut], false)
						from = cut
						last := chain[len(chain)-1]
						b, err := last.SnapshotBytes()
						if err != nil {
							t.Fatalf("seed %d %s: snapshot at %d: %v", seed, kind, cut, err)
						}
						r, err := last.Restore(b)
						if err != nil {
							t.Fatalf("seed %d %s: restore at %d: %v", seed, kind, cut, err)
						}
						if err := r.Check(); err != nil {
							t.Fatalf("seed %d %s: restored at %d: %v", seed, kind, cut, err)
						}
						if r.Keys() != last.Keys() {
							t.Fatalf("seed %d %s: restored %d keys of %d", seed, kind, r.Keys(), last.Keys())
						}
						chain = append(chain, r)
						marks = append(marks, len(orig.Out))
						lateMarks = append(lateMarks, len(orig.Late))
					}
					feedAll(input[from:], true)
					for j, r := range chain[1:] {
						want, wantLate := orig.Out[marks[j+1]:], orig.Late[lateMarks[j+1]:]
						if !slices.Equal(r.Out, want) {
							t.Fatalf("seed %d %s restored at %d: output differs: %s (%d results, want %d)",
								seed, kind, cuts[j], diff(toObs(r.Out), toObs(want)), len(r.Out), len(want))
						}
						if !slices.Equal(r.Late, wantLate) {
							t.Fatalf("seed %d %s restored at %d: late output differs (%d, want %d)", seed, kind, cuts[j], len(r.Late), len(wantLate))
						}
					}
				}
			}
		})
	}
	if !fastSeen || !generalSeen {
		t.Errorf("fast path covered %v, general operator %v", fastSeen, generalSeen)
	}
}
