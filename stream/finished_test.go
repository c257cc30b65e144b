package stream_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/stream"
)

// TestCheckpointsContinueAfterTasksFinish unions a short and a long
// source: the short one finishes early, checkpoints go on without it, and
// failures after it finished restore it as finished (its records are not
// emitted again) while the long one resumes from its position.
func TestCheckpointsContinueAfterTasksFinish(t *testing.T) {
	const short, long = 1_000, 40_000
	// Reference: per key, running sums in generation order; the short
	// source's keys (100..104) never mix with the long one's (0..36).
	sums := map[int64]int64{}
	var want []string
	for i := range int64(short) {
		k := 100 + i%5
		sums[k] += i
		want = append(want, fmt.Sprintf("%d:%d", k, sums[k]))
	}
	for i := range int64(long) {
		sums[i%37] += i
		want = append(want, fmt.Sprintf("%d:%d", i%37, sums[i%37]))
	}
	slices.Sort(want)

	for _, p := range []int{1, 2} {
		env := newEnv(t, p,
			"execution.checkpointing.interval", "10 ms",
			"restart-strategy.type", "fixed-delay",
			"restart-strategy.fixed-delay.delay", "10 ms",
			"taskmanager.network.buffer-records", "64")
		a := stream.FromSource[kv](env, &stream.Generator[kv]{Count: short, Fn: func(i int64) kv { return kv{K: 100 + i%5, V: i} }}, "short").
			SetParallelism(1).UID("short")
		b := stream.FromSource[kv](env, &stream.Generator[kv]{Count: long, Fn: func(i int64) kv {
			if i%200 == 0 {
				time.Sleep(time.Millisecond)
			}
			return kv{K: i % 37, V: i}
		}}, "numbers").SetParallelism(1).UID("numbers")
		sumsStream := stream.Sum(stream.KeyBy(stream.Union(a, b), func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
		var seen [8]int
		out := stream.Process(sumsStream, stream.ProcessFunc[kv, string](func(x kv, ctx *stream.Context, out stream.Collector[string]) error {
			if x.K == 0 {
				seen[ctx.Attempt()]++
				// Late in every attempt but the last: the short source
				// finished long before.
				if ctx.Attempt() < 2 && seen[ctx.Attempt()] == 500 {
					return errors.New("injected failure")
				}
			}
			out.Collect(fmt.Sprintf("%d:%d", x.K, x.V))
			return nil
		})).UID("fail")
		got := stream.Collect(out)
		job := runExactlyOnce(t, fmt.Sprintf("p=%d", p), env, got, want, 2)
		// The last attempt read neither source from the start: the long one
		// resumed, the short one was restored finished.
		for _, m := range job.Metrics() {
			if strings.HasPrefix(m.Task, "Source: short") && m.RecordsIn != 0 {
				t.Fatalf("p=%d: the finished source emitted %d records again after the restore", p, m.RecordsIn)
			}
			if strings.HasPrefix(m.Task, "Source: numbers") && m.RecordsIn >= long {
				t.Fatalf("p=%d: the long source read everything again", p)
			}
		}
	}
}
