package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

type reading struct {
	Sensor int
	TS     int64
	Value  int64
}

// bucketSums sums each sensor's values per 100 ms bucket of event time
// and emits a bucket's sum when an event-time timer at its end fires. It
// records the most keys it ever held state for.
type bucketSums struct {
	sums     state.MapState[int64, int64]
	maxKeys  *atomic.Int64
	maxWmark *atomic.Int64
}

func (b *bucketSums) Open(ctx *stream.KeyedContext[int]) error {
	b.sums = state.Map[int64, int64](ctx.State(), "sums")
	return nil
}

func (b *bucketSums) ProcessElement(r reading, ctx *stream.KeyedContext[int], out stream.Collector[string]) error {
	bucket := r.TS / 100
	s, _ := b.sums.Get(bucket)
	b.sums.Put(bucket, s+r.Value)
	ctx.RegisterEventTimeTimer(bucket*100 + 99)
	if n := int64(ctx.State().Len()); n > b.maxKeys.Load() {
		b.maxKeys.Store(n)
	}
	if wm := ctx.CurrentWatermark(); wm > b.maxWmark.Load() {
		b.maxWmark.Store(wm)
	}
	return nil
}

func (b *bucketSums) OnTimer(ts int64, ctx *stream.KeyedContext[int], out stream.Collector[string]) error {
	bucket := ts / 100
	s, _ := b.sums.Get(bucket)
	out.Collect(fmt.Sprintf("sensor %d bucket %d: %d", ctx.CurrentKey(), bucket, s))
	b.sums.Remove(bucket)
	return nil
}

// TestBatchKeyedProcessKeyByKey runs a keyed process function with state
// and event-time timers over out-of-order readings of many sensors, in
// streaming and in batch mode, at parallelism 1, 2 and 4, and compares
// both with a reference: in batch mode the function sees one key at a
// time (it never holds state for two sensors), event time does not
// advance within a key, and every timer fires at the end of its key.
func TestBatchKeyedProcessKeyByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var data []reading
	for i := range 120000 {
		// Up to 400 ms out of order.
		data = append(data, reading{Sensor: rng.IntN(60), TS: int64(i/10) + rng.Int64N(400), Value: rng.Int64N(100)})
	}
	sums := make(map[[2]int64]int64)
	for _, r := range data {
		sums[[2]int64{int64(r.Sensor), r.TS / 100}] += r.Value
	}
	var want []string
	for k, s := range sums {
		want = append(want, fmt.Sprintf("sensor %d bucket %d: %d", k[0], k[1], s))
	}
	slices.Sort(want)
	for _, mode := range []string{"STREAMING", "BATCH"} {
		for _, p := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/p=%d", mode, p), func(t *testing.T) {
				// A budget small enough that the batch input spills.
				env := newEnv(t, p, "execution.runtime-mode", mode, "taskmanager.memory.managed.size", "1m", "io.tmp.dirs", t.TempDir())
				src := stream.FromSlice(env, data).AssignTimestampsAndWatermarks(
					stream.ForBoundedOutOfOrderness[reading](500 * time.Millisecond).WithTimestampAssigner(func(r reading, _ int64) int64 { return r.TS }))
				fn := &bucketSums{maxKeys: new(atomic.Int64), maxWmark: new(atomic.Int64)}
				fn.maxWmark.Store(-1 << 63)
				got := stream.Collect(stream.KeyedProcess(stream.KeyBy(src, func(r reading) int { return r.Sensor }), stream.KeyedProcessFunction[int, reading, string](fn)))
				before := stream.SpilledRuns()
				if err := env.Execute(context.Background(), "buckets"); err != nil {
					t.Fatal(err)
				}
				g := got.Values()
				slices.Sort(g)
				if !slices.Equal(g, want) {
					t.Fatalf("%d results, want %d; first %q, want %q", len(g), len(want), g[:min(2, len(g))], want[:2])
				}
				if mode == "BATCH" {
					if n := fn.maxKeys.Load(); n != 1 {
						t.Errorf("held state for %d keys at once, want 1", n)
					}
					if wm := fn.maxWmark.Load(); wm != -1<<63 {
						t.Errorf("event time advanced to %d while processing records, want no watermark", wm)
					}
					if stream.SpilledRuns() == before {
						t.Errorf("the sorted input never spilled under a 1 MiB budget")
					}
				} else if fn.maxKeys.Load() < 2 {
					t.Errorf("streaming mode held state for %d keys; the test does not tell the modes apart", fn.maxKeys.Load())
				}
			})
		}
	}
}

// pairSums sums each sensor's values from two inputs and emits both sums
// from a timer at the end of time; it records the most keys it held
// state for at once.
type pairSums struct {
	a, b    state.ValueState[int64]
	maxKeys *atomic.Int64
}

func (s *pairSums) Open(ctx *stream.KeyedContext[int]) error {
	s.a = state.Value[int64](ctx.State(), "a", 0)
	s.b = state.Value[int64](ctx.State(), "b", 0)
	return nil
}

func (s *pairSums) add(v state.ValueState[int64], r reading, ctx *stream.KeyedContext[int]) {
	n, _ := v.Value()
	v.Update(n + r.Value)
	ctx.RegisterEventTimeTimer(1 << 40)
	if k := int64(ctx.State().Len()); k > s.maxKeys.Load() {
		s.maxKeys.Store(k)
	}
}

func (s *pairSums) ProcessElement1(r reading, ctx *stream.KeyedContext[int], _ stream.Collector[string]) error {
	s.add(s.a, r, ctx)
	return nil
}

func (s *pairSums) ProcessElement2(r reading, ctx *stream.KeyedContext[int], _ stream.Collector[string]) error {
	s.add(s.b, r, ctx)
	return nil
}

func (s *pairSums) OnTimer(_ int64, ctx *stream.KeyedContext[int], out stream.Collector[string]) error {
	a, _ := s.a.Value()
	b, _ := s.b.Value()
	out.Collect(fmt.Sprintf("sensor %d: %d %d", ctx.CurrentKey(), a, b))
	return nil
}

// TestBatchKeyedCoProcessKeyByKey: in batch mode a keyed co-process
// function sees one key at a time, both inputs' records of it together,
// with the same results as in streaming mode.
func TestBatchKeyedCoProcessKeyByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	gen := func(n int) []reading {
		out := make([]reading, n)
		for i := range out {
			out[i] = reading{Sensor: rng.IntN(40), TS: int64(i) + rng.Int64N(100), Value: rng.Int64N(100)}
		}
		return out
	}
	left, right := gen(20000), gen(15000)
	sums := make(map[int][2]int64)
	for _, r := range left {
		s := sums[r.Sensor]
		s[0] += r.Value
		sums[r.Sensor] = s
	}
	for _, r := range right {
		s := sums[r.Sensor]
		s[1] += r.Value
		sums[r.Sensor] = s
	}
	var want []string
	for k, s := range sums {
		want = append(want, fmt.Sprintf("sensor %d: %d %d", k, s[0], s[1]))
	}
	slices.Sort(want)
	for _, mode := range []string{"STREAMING", "BATCH"} {
		for _, p := range []int{1, 3} {
			env := newEnv(t, p, "execution.runtime-mode", mode)
			strategy := stream.ForBoundedOutOfOrderness[reading](200 * time.Millisecond).WithTimestampAssigner(func(r reading, _ int64) int64 { return r.TS })
			key := func(r reading) int { return r.Sensor }
			l := stream.KeyBy(stream.FromSlice(env, left).AssignTimestampsAndWatermarks(strategy), key)
			r := stream.KeyBy(stream.FromSlice(env, right).AssignTimestampsAndWatermarks(strategy), key)
			fn := &pairSums{maxKeys: new(atomic.Int64)}
			got := stream.Collect(stream.KeyedCoProcess(stream.ConnectKeyed(l, r), stream.KeyedCoProcessFunction[int, reading, reading, string](fn)))
			if err := env.Execute(context.Background(), "pairs"); err != nil {
				t.Fatal(err)
			}
			g := got.Values()
			slices.Sort(g)
			if !slices.Equal(g, want) {
				t.Fatalf("%s p=%d: %d results, want %d; first %q, want %q", mode, p, len(g), len(want), g[:min(1, len(g))], want[:1])
			}
			// Two states of one key count as 2.
			if mode == "BATCH" && fn.maxKeys.Load() > 2 {
				t.Errorf("%s p=%d: held state for %d entries at once, want one key's", mode, p, fn.maxKeys.Load())
			}
			if mode == "STREAMING" && fn.maxKeys.Load() <= 2 {
				t.Errorf("streaming mode held state for %d entries; the test does not tell the modes apart", fn.maxKeys.Load())
			}
		}
	}
}
