package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
)

type side struct {
	Key int
	TS  int64
	ID  int
}

func ascending(rng *rand.Rand, n, keys int) []side {
	out := make([]side, n)
	ts := int64(0)
	for i := range out {
		ts += int64(rng.IntN(20))
		out[i] = side{Key: rng.IntN(keys), TS: ts, ID: i}
	}
	return out
}

func TestIntervalJoinMatchesReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	left, right := ascending(rng, 600, 7), ascending(rng, 500, 7)
	for _, bounds := range [][2]time.Duration{{-30 * time.Millisecond, 20 * time.Millisecond}, {0, 0}, {10 * time.Millisecond, 50 * time.Millisecond}, {-50 * time.Millisecond, -10 * time.Millisecond}} {
		lo, hi := bounds[0].Milliseconds(), bounds[1].Milliseconds()
		var want []string
		for _, l := range left {
			for _, r := range right {
				if l.Key == r.Key && r.TS >= l.TS+lo && r.TS <= l.TS+hi {
					want = append(want, fmt.Sprintf("%d-%d@%d", l.ID, r.ID, max(l.TS, r.TS)))
				}
			}
		}
		if len(want) == 0 {
			t.Fatalf("bounds %v: the reference has no matches; the test would prove nothing", bounds)
		}
		for _, run := range []struct {
			mode string
			p    int
		}{{"STREAMING", 1}, {"STREAMING", 2}, {"STREAMING", 4}, {"BATCH", 1}, {"BATCH", 2}, {"BATCH", 4}} {
			// In batch mode the join sees each key's records of both
			// sides in time order and its timers fire at the key's end.
			p := run.p
			env := newEnv(t, p, "execution.runtime-mode", run.mode)
			strategy := stream.ForMonotonousTimestamps[side]().WithTimestampAssigner(func(s side, _ int64) int64 { return s.TS }).WithWatermarkPerEvent()
			l := stream.FromSlice(env, left).SetParallelism(1).AssignTimestampsAndWatermarks(strategy).SetParallelism(1)
			r := stream.FromSlice(env, right).SetParallelism(1).AssignTimestampsAndWatermarks(strategy).SetParallelism(1)
			key := func(s side) int { return s.Key }
			joined := stream.IntervalJoin(stream.KeyBy(l, key), stream.KeyBy(r, key), bounds[0], bounds[1],
				func(a, b side, out stream.Collector[string]) { out.Collect(fmt.Sprintf("%d-%d", a.ID, b.ID)) })
			got := stream.Collect(stream.Process(joined, stream.ProcessFunc[string, string](func(v string, ctx *stream.Context, out stream.Collector[string]) error {
				ts, _ := ctx.Timestamp()
				out.Collect(fmt.Sprintf("%s@%d", v, ts))
				return nil
			})))
			if err := env.Execute(context.Background(), "interval-join"); err != nil {
				t.Fatal(err)
			}
			g, w := sorted(got.Values(), strings.Compare), sorted(slices.Clone(want), strings.Compare)
			if !slices.Equal(g, w) {
				t.Fatalf("bounds %v %s p=%d: %d results, want %d", bounds, run.mode, p, len(g), len(w))
			}
		}
	}
}
