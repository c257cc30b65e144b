package window_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

type joinSide struct {
	Key int
	TS  int64
	ID  int
}

func TestWindowJoinMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	gen := func(n int) []joinSide {
		out := make([]joinSide, n)
		ts := int64(0)
		for i := range out {
			ts += int64(rng.IntN(7))
			out[i] = joinSide{Key: rng.IntN(5), TS: ts, ID: i}
		}
		return out
	}
	left, right := gen(300), gen(250)
	cases := []struct {
		name    string
		a       window.AssignerBase
		windows func(ts int64) [][2]int64 // windows of an element, for the reference
	}{
		{"tumbling", window.TumblingEventTime(50 * time.Millisecond), func(ts int64) [][2]int64 {
			s := ts - ts%50
			return [][2]int64{{s, s + 50}}
		}},
		{"sliding", window.SlidingEventTime(60*time.Millisecond, 20*time.Millisecond), func(ts int64) [][2]int64 {
			var out [][2]int64
			for s := ts - ts%20; s > ts-60; s -= 20 {
				out = append(out, [2]int64{s, s + 60})
			}
			return out
		}},
	}
	for _, c := range cases {
		var want []string
		for _, l := range left {
			for _, r := range right {
				if l.Key != r.Key {
					continue
				}
				for _, wl := range c.windows(l.TS) {
					if slices.Contains(c.windows(r.TS), wl) {
						want = append(want, fmt.Sprintf("%d-%d@%d", l.ID, r.ID, wl[1]-1))
					}
				}
			}
		}
		slices.Sort(want)
		for _, p := range []int{1, 2, 4} {
			cfg := config.New()
			config.Parallelism.Set(cfg, p)
			env := stream.NewEnvironmentWithConfig(cfg)
			strategy := stream.ForMonotonousTimestamps[joinSide]().WithTimestampAssigner(func(s joinSide, _ int64) int64 { return s.TS }).WithWatermarkPerEvent()
			l := stream.FromSlice(env, left).SetParallelism(1).AssignTimestampsAndWatermarks(strategy).SetParallelism(1)
			r := stream.FromSlice(env, right).SetParallelism(1).AssignTimestampsAndWatermarks(strategy).SetParallelism(1)
			key := func(s joinSide) int { return s.Key }
			joined := window.Join(stream.KeyBy(l, key), stream.KeyBy(r, key), c.a, func(a, b joinSide, out stream.Collector[string]) {
				out.Collect(fmt.Sprintf("%d-%d", a.ID, b.ID))
			})
			got := stream.Collect(stream.Process(joined, stream.ProcessFunc[string, string](func(v string, ctx *stream.Context, out stream.Collector[string]) error {
				ts, _ := ctx.Timestamp()
				out.Collect(fmt.Sprintf("%s@%d", v, ts))
				return nil
			})))
			if err := env.Execute(context.Background(), "join"); err != nil {
				t.Fatal(err)
			}
			g := got.Values()
			slices.Sort(g)
			if len(want) == 0 || !slices.Equal(g, want) {
				t.Fatalf("%s p=%d: %d results, want %d", c.name, p, len(g), len(want))
			}
		}
	}
}
