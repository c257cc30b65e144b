package window_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

func TestStopWithSavepointDrainsWindows(t *testing.T) {
	cfg := config.New()
	config.Parallelism.Set(cfg, 2)
	env := stream.NewEnvironmentWithConfig(cfg)
	// An endless stream of ones, 1 ms of event time apart, in 1 s
	// windows: without draining, the open window would never fire.
	src := stream.FromSourceWithWatermarks[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
		return i
	}}, "ticks", stream.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v })).SetParallelism(1)
	counts := window.Reduce(window.Of(stream.KeyBy(stream.Map(src, func(int64) int64 { return 1 }), func(int64) int { return 0 }), window.TumblingEventTime(time.Hour)),
		func(a, b int64) int64 { return a + b })
	got := stream.Collect(counts)
	job, err := env.ExecuteAsync(context.Background(), "drain")
	if err != nil {
		t.Fatal(err)
	}
	// Wait for real progress (the assertion below needs 100 records).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		var read int64
		for _, m := range job.Metrics() {
			if strings.HasPrefix(m.Task, "Source: ticks") {
				read += m.RecordsIn
			}
		}
		if read >= 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source read only %d records in 20 s", read)
		}
	}
	if _, err := job.StopWithSavepoint(context.Background(), t.TempDir(), true); err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	if v := got.Values(); len(v) != 1 || v[0] < 100 {
		t.Fatalf("the drained window fired %v", v)
	}
}

func TestTolerableCheckpointFailures(t *testing.T) {
	cfg := config.New()
	config.Parallelism.Set(cfg, 1)
	for k, v := range map[string]string{
		"execution.checkpointing.interval":                     "5 ms",
		"execution.checkpointing.tolerable-failed-checkpoints": "2",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	env := stream.NewEnvironmentWithConfig(cfg)
	// An hour-long window always holds state, and its accumulator type
	// has no codec, so the window operator declines checkpoints while it
	// holds state: the third failure in a row fails the job.
	src := stream.FromSourceWithWatermarks[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
		time.Sleep(100 * time.Microsecond)
		return i
	}}, "ticks", stream.ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v, _ int64) int64 { return v }))
	type noCodec struct {
		Sum int64
		C   chan int
	}
	stream.Collect(window.Aggregate(window.Of(stream.KeyBy(src, func(int64) int { return 0 }), window.TumblingEventTime(time.Hour)),
		window.NewAggregate(func() noCodec { return noCodec{} }, func(v int64, a noCodec) noCodec { a.Sum += v; return a },
			func(a noCodec) int64 { return a.Sum }, func(a, b noCodec) noCodec { a.Sum += b.Sum; return a })))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := env.Execute(ctx, "declines")
	if err == nil || !strings.Contains(err.Error(), "3 consecutive failures exceed execution.checkpointing.tolerable-failed-checkpoints (2)") {
		t.Fatalf("err = %v", err)
	}
}
