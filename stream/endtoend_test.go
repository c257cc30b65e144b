package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

// runningCount keeps, per key, the count and sum of the values seen in
// keyed state and emits "key:count:sum" for every record.
type runningCount struct {
	count, sum state.ValueState[int64]
}

func (r *runningCount) Open(ctx *stream.KeyedContext[int64]) error {
	r.count = state.Value[int64](ctx.State(), "count", 0)
	r.sum = state.Value[int64](ctx.State(), "sum", 0)
	return nil
}

func (r *runningCount) ProcessElement(x kv, _ *stream.KeyedContext[int64], out stream.Collector[string]) error {
	c, _ := r.count.Value()
	s, _ := r.sum.Value()
	c, s = c+1, s+x.V
	r.count.Update(c)
	r.sum.Update(s)
	out.Collect(fmt.Sprintf("%d:%d:%d", x.K, c, s))
	return nil
}

// TestFailuresAtRandomPoints is the fault-tolerance end-to-end test: keyed
// running state over 100k records into the exactly-once file sink, with
// panics injected at random points of the first three attempts, at
// parallelism 1, 2 and 4 on both state backends. In EXACTLY_ONCE mode the
// committed files equal a failure-free run's output as a multiset of
// lines; in AT_LEAST_ONCE mode every line of it is there.
func TestFailuresAtRandomPoints(t *testing.T) {
	const n, keys, failures = 100_000, 101, 3
	var want []string
	counts, sums := map[int64]int64{}, map[int64]int64{}
	for i := range int64(n) {
		k := i % keys
		counts[k]++
		sums[k] += i
		want = append(want, fmt.Sprintf("%d:%d:%d", k, counts[k], sums[k]))
	}
	slices.Sort(want)

	rng := rand.New(rand.NewPCG(42, uint64(time.Now().UnixNano())))
	for _, mode := range []string{"EXACTLY_ONCE", "AT_LEAST_ONCE"} {
		for _, backend := range []string{"hashmap", "pebble"} {
			for _, p := range []int{1, 2, 4} {
				if mode == "AT_LEAST_ONCE" && p != 2 {
					continue // one parallelism is enough to show nothing is lost
				}
				// Each failing attempt panics after a random number of
				// records, counted over all its subtasks.
				var thresholds [failures]int64
				for i := range thresholds {
					thresholds[i] = 2_000 + rng.Int64N(n/4-2_000) // three of them fit in n
				}
				var processed [failures + 1]atomic.Int64
				dir := t.TempDir()
				env := newEnv(t, p,
					"execution.checkpointing.mode", mode,
					"state.backend.type", backend,
					"io.tmp.dirs", t.TempDir(),
					"execution.checkpointing.interval", "10 ms",
					"restart-strategy.type", "fixed-delay",
					"restart-strategy.fixed-delay.attempts", "5",
					"restart-strategy.fixed-delay.delay", "10 ms",
					"taskmanager.network.buffer-records", "64")
				src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
					if i%1000 == 0 {
						time.Sleep(time.Millisecond)
					}
					return kv{K: i % keys, V: i}
				}}, "numbers").SetParallelism(1).UID("numbers")
				counted := stream.KeyedProcess[int64, kv, string](stream.KeyBy(src, func(x kv) int64 { return x.K }), &runningCount{}).UID("count")
				failing := stream.Map(counted, func(s string) string { return s }).UID("fail")
				failing = stream.Process(failing, stream.ProcessFunc[string, string](func(s string, ctx *stream.Context, out stream.Collector[string]) error {
					if a := ctx.Attempt(); a < failures && processed[a].Add(1) == thresholds[a] {
						panic(fmt.Sprintf("injected panic in attempt %d", a))
					}
					out.Collect(s)
					return nil
				})).UID("panic")
				stream.SinkTo(failing, file.Text[string](dir, nil), "files").UID("files")
				job, err := env.ExecuteAsync(context.Background(), "random-failures")
				if err != nil {
					t.Fatal(err)
				}
				if err := job.Wait(); err != nil {
					t.Fatalf("%s %s p=%d: %v", mode, backend, p, err)
				}
				got, err := file.ReadLines(dir)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				name := fmt.Sprintf("%s %s p=%d (panics after %v records; %d restarts, %d checkpoints)", mode, backend, p, thresholds, job.Restarts(), job.CompletedCheckpoints())
				if job.Restarts() != failures {
					t.Fatalf("%s: want %d restarts", name, failures)
				}
				if mode == "EXACTLY_ONCE" {
					if !slices.Equal(got, want) {
						t.Fatalf("%s: the files hold %d lines, want exactly the %d of a failure-free run", name, len(got), len(want))
					}
				} else if missing := missingLines(got, want); missing != "" {
					t.Fatalf("%s: at least once lost %s", name, missing)
				}
				t.Log(name)
			}
		}
	}
}

// missingLines returns a description of the first line of want (sorted)
// that got (sorted) lacks, or "".
func missingLines(got, want []string) string {
	i := 0
	for _, w := range want {
		for i < len(got) && got[i] < w {
			i++
		}
		if i == len(got) || got[i] != w {
			return fmt.Sprintf("line %q", w)
		}
		i++
	}
	return ""
}
