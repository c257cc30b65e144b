package window_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// rec is the end-to-end tests' record: key and sequence number.
type rec struct{ K, I int64 }

// recTs spreads the records over event time with a pause of 500 ms after
// every 1000 records, so that sessions (gap 100 ms) end.
func recTs(i int64) int64 { return i + i/1000*500 }

var countRecs = window.NewAggregate(
	func() int64 { return 0 },
	func(_ rec, acc int64) int64 { return acc + 1 },
	func(acc int64) int64 { return acc },
	func(a, b int64) int64 { return a + b },
)

// windowedJob: source (parallelism 1) → keyBy → tumbling event-time counts
// (fast path, AggregateProcess) and event-time sessions (general
// operator, Process buffering the records) → an optional failure after
// some output of key 0 → transactional collect.
func windowedJob(t *testing.T, env *stream.Environment, n int64, keys int64, fail func(s string, ctx *stream.Context) error) *stream.Collected[string] {
	return stream.Collect(windowedStream(t, env, n, keys, fail))
}

func windowedStream(t *testing.T, env *stream.Environment, n int64, keys int64, fail func(s string, ctx *stream.Context) error) *stream.Stream[string] {
	t.Helper()
	gen := &stream.Generator[rec]{Count: n, Fn: func(i int64) rec {
		if i%500 == 0 {
			time.Sleep(time.Millisecond) // slow enough for several checkpoints
		}
		return rec{K: i % keys, I: i}
	}}
	src := stream.FromSourceWithWatermarks[rec](env, gen, "numbers",
		stream.ForMonotonousTimestamps[rec]().WithTimestampAssigner(func(x rec, _ int64) int64 { return recTs(x.I) }).WithWatermarkPerEvent()).
		SetParallelism(1).UID("numbers")
	ks := stream.KeyBy(src, func(x rec) int64 { return x.K })
	tumbling := window.AggregateProcess(window.Of(ks, window.TumblingEventTime(100*time.Millisecond)), countRecs,
		window.ProcessWindowFunc[int64, int64, string](func(k int64, ctx *window.ProcessContext, c []int64, out stream.Collector[string]) error {
			out.Collect(fmt.Sprintf("T:%d:%d:%d", k, ctx.Window().Start, c[0]))
			return nil
		})).UID("tumbling")
	sessions := window.Process(window.Of(ks, window.EventTimeSession(100*time.Millisecond)),
		window.ProcessWindowFunc[int64, rec, string](func(k int64, ctx *window.ProcessContext, rs []rec, out stream.Collector[string]) error {
			var sum int64
			for _, r := range rs {
				sum += r.I
			}
			out.Collect(fmt.Sprintf("S:%d:%v:%d:%d", k, ctx.Window(), len(rs), sum))
			return nil
		})).UID("sessions")
	all := stream.Union(tumbling, sessions)
	if fail != nil {
		all = stream.Process(all, stream.ProcessFunc[string, string](func(s string, ctx *stream.Context, out stream.Collector[string]) error {
			if err := fail(s, ctx); err != nil {
				return err
			}
			out.Collect(s)
			return nil
		})).UID("fail")
	}
	return all
}

func runWindowedJob(t *testing.T, env *stream.Environment, got *stream.Collected[string]) ([]string, *stream.JobClient) {
	t.Helper()
	job, err := env.ExecuteAsync(context.Background(), "windows")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	g := got.Values()
	slices.Sort(g)
	return g, job
}

// TestWindowsAreExactlyOnceAfterFailures: tumbling counts and sessions
// with checkpoints every 10 ms and a failure downstream in the first two
// attempts commit exactly the output of a failure-free run, and the
// restarted attempts resume from a checkpoint taken while the windows held
// state (the last attempt does not read the whole input).
func TestWindowsAreExactlyOnceAfterFailures(t *testing.T) {
	const n, keys = 30_000, 37
	env := newEnv(t, 2, "taskmanager.network.buffer-records", "64")
	want, _ := runWindowedJob(t, env, windowedJob(t, env, n, keys, nil))
	if len(want) < 1000 {
		t.Fatalf("failure-free run: only %d results", len(want))
	}
	for _, p := range []int{1, 3} {
		env := newEnv(t, p,
			"execution.checkpointing.interval", "10 ms",
			"restart-strategy.type", "fixed-delay",
			"restart-strategy.fixed-delay.attempts", "5",
			"restart-strategy.fixed-delay.delay", "10 ms",
			"taskmanager.network.buffer-records", "64")
		var seen [8]int
		got := windowedJob(t, env, n, keys, func(s string, ctx *stream.Context) error {
			if strings.HasPrefix(s, "T:0:") {
				seen[ctx.Attempt()]++
				if ctx.Attempt() < 2 && seen[ctx.Attempt()] == 60 {
					return errors.New("injected")
				}
			}
			return nil
		})
		g, job := runWindowedJob(t, env, got)
		if !slices.Equal(g, want) {
			t.Fatalf("p=%d: committed %d results, want %d (restarts %d, checkpoints %d)", p, len(g), len(want), job.Restarts(), job.CompletedCheckpoints())
		}
		if job.Restarts() != 2 || job.CompletedCheckpoints() == 0 {
			t.Fatalf("p=%d: %d restarts, %d checkpoints", p, job.Restarts(), job.CompletedCheckpoints())
		}
		var read int64
		for _, m := range job.Metrics() {
			if strings.HasPrefix(m.Task, "Source: numbers") {
				read += m.RecordsIn
			}
		}
		if read >= n {
			t.Fatalf("p=%d: the last attempt read all %d records; it did not resume from a checkpoint", p, read)
		}
	}
}

// TestWindowsRescaleFromASavepoint stops a windowed job with a savepoint
// at parallelism 2 while windows hold state and resumes it at parallelism
// 3: the windows move between subtasks by key group, and the two runs
// together commit exactly a failure-free run's output.
func TestWindowsRescaleFromASavepoint(t *testing.T) {
	const n, keys = 40_000, 37
	env := newEnv(t, 2, "taskmanager.network.buffer-records", "64")
	want, _ := runWindowedJob(t, env, windowedJob(t, env, n, keys, nil))
	out, savepoints := t.TempDir(), t.TempDir()
	ctx := context.Background()
	env = newEnv(t, 2, "taskmanager.network.buffer-records", "64")
	stream.SinkTo(windowedStream(t, env, n, keys, nil), file.Text[string](out, nil), "files").UID("files")
	job, err := env.ExecuteAsync(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	sp, err := job.StopWithSavepoint(ctx, savepoints, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	first, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	env = newEnv(t, 3, "taskmanager.network.buffer-records", "64")
	stream.SinkTo(windowedStream(t, env, n, keys, nil), file.Text[string](out, nil), "files").UID("files")
	env.RestoreFrom(sp, false)
	job2, err := env.ExecuteAsync(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if err := job2.Wait(); err != nil {
		t.Fatal(err)
	}
	g, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	var read int64
	for _, m := range job2.Metrics() {
		if strings.HasPrefix(m.Task, "Source: numbers") {
			read += m.RecordsIn
		}
	}
	if read >= n || len(first) == 0 {
		t.Fatalf("the savepoint was not taken part way: the first run committed %d results, the second read %d records", len(first), read)
	}
	slices.Sort(g)
	if !slices.Equal(g, want) {
		t.Fatalf("committed %d results (%d in the first run), want %d", len(g), len(first), len(want))
	}
}
