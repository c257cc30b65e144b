package stream_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

type kv struct {
	K int64
	V int64
}

// runningSums is the reference: every update of a per-key running sum of
// the values 0..n-1 keyed by value mod keys, in generation order.
func runningSums(n, keys int64) []string {
	sums := make(map[int64]int64)
	var out []string
	for i := int64(0); i < n; i++ {
		k := i % keys
		sums[k] += i
		out = append(out, fmt.Sprintf("%d:%d", k, sums[k]))
	}
	slices.Sort(out)
	return out
}

// injectFailures passes running sums on as "key:sum" and fails the first
// attempts: attempt 0 after 400 updates of key 0 (past the first
// checkpoints), later ones after 100 more (a little progress after the
// restore). Key 0's updates all reach one subtask, so counting them needs
// no lock.
func injectFailures(sums *stream.Stream[kv], failures int) *stream.Stream[string] {
	var seen [16]int
	return stream.Process(sums, stream.ProcessFunc[kv, string](func(x kv, ctx *stream.Context, out stream.Collector[string]) error {
		if x.K == 0 {
			seen[ctx.Attempt()]++
			threshold := 100
			if ctx.Attempt() == 0 {
				threshold = 400
			}
			if ctx.Attempt() < failures && seen[ctx.Attempt()] == threshold {
				return fmt.Errorf("injected failure in attempt %d", ctx.Attempt())
			}
		}
		out.Collect(fmt.Sprintf("%d:%d", x.K, x.V))
		return nil
	})).UID("fail")
}

// failingJob builds source (parallelism 1, so that each key's order is
// fixed) → keyBy → Sum (every update emitted) → a function that fails in
// the first attempts after some records → transactional collect.
func failingJob(t *testing.T, p int, n int64, failures int, kvs ...string) (*stream.Environment, *stream.Collected[string]) {
	env := newEnv(t, p, append([]string{
		"execution.checkpointing.interval", "10 ms",
		"restart-strategy.type", "fixed-delay",
		"restart-strategy.fixed-delay.attempts", "5",
		"restart-strategy.fixed-delay.delay", "10 ms",
		"taskmanager.network.buffer-records", "64",
	}, kvs...)...)
	src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
		if i%500 == 0 {
			time.Sleep(time.Millisecond) // slow enough for several checkpoints
		}
		return kv{K: i % 37, V: i}
	}}, "numbers").SetParallelism(1).UID("numbers")
	sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
	out := injectFailures(sums, failures)
	return env, stream.Collect(out)
}

// runExactlyOnce executes env's job and requires that got committed
// exactly want (in any order), after exactly restarts restarts and with
// at least one completed checkpoint, so that recovery was exercised.
func runExactlyOnce(t *testing.T, name string, env *stream.Environment, got *stream.Collected[string], want []string, restarts int) *stream.JobClient {
	t.Helper()
	job, err := env.ExecuteAsync(context.Background(), "exactly-once")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	g := got.Values()
	slices.Sort(g)
	if !slices.Equal(g, want) {
		t.Fatalf("%s: committed %d records, want %d (restarts %d, checkpoints %d)",
			name, len(g), len(want), job.Restarts(), job.CompletedCheckpoints())
	}
	if job.Restarts() != restarts {
		t.Fatalf("%s: %d restarts, want %d", name, job.Restarts(), restarts)
	}
	if job.CompletedCheckpoints() == 0 {
		t.Fatalf("%s: no checkpoint completed; the test would not exercise recovery", name)
	}
	return job
}

func TestExactlyOnceAfterFailures(t *testing.T) {
	const n = 60_000
	want := runningSums(n, 37)
	for _, p := range []int{1, 2, 4} {
		for _, failures := range []int{0, 1, 3} {
			env, got := failingJob(t, p, n, failures)
			job := runExactlyOnce(t, fmt.Sprintf("p=%d failures=%d", p, failures), env, got, want, failures)
			// The last attempt resumed from a checkpoint: its source read
			// only what came after it.
			var read int64
			for _, m := range job.Metrics() {
				if strings.HasPrefix(m.Task, "Source: numbers") {
					read += m.RecordsIn
				}
			}
			if failures > 0 && read >= n {
				t.Fatalf("p=%d failures=%d: the last attempt read all %d records; it did not resume from a checkpoint", p, failures, read)
			}
			t.Logf("p=%d failures=%d: %d checkpoints, last attempt read %d records", p, failures, job.CompletedCheckpoints(), read)
		}
	}
}

func TestFailureWithoutRestartStrategyFailsTheJob(t *testing.T) {
	env, _ := failingJob(t, 2, 20_000, 1, "restart-strategy.type", "none")
	err := env.Execute(context.Background(), "no-restart")
	if err == nil || !strings.Contains(err.Error(), "injected failure in attempt 0") {
		t.Fatalf("err = %v", err)
	}
}

func TestRestartsAreLimited(t *testing.T) {
	env, _ := failingJob(t, 1, 60_000, 3, "restart-strategy.fixed-delay.attempts", "2")
	err := env.Execute(context.Background(), "limited")
	if err == nil || !strings.Contains(err.Error(), "job failed after 2 restarts") || !strings.Contains(err.Error(), "injected failure in attempt 2") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckpointDirectoryLifecycle(t *testing.T) {
	// A job that fails for good keeps its latest checkpoints, as many as
	// state.checkpoints.num-retained says: <dir>/<job-id>/chk-<n>/_metadata.
	dir := t.TempDir()
	env, _ := failingJob(t, 2, 60_000, 1, "state.checkpoints.dir", "file://"+dir,
		"restart-strategy.type", "none", "state.checkpoints.num-retained", "2")
	if err := env.Execute(context.Background(), "fails"); err == nil {
		t.Fatal("the job did not fail")
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*", "chk-*", "_metadata"))
	if err != nil || len(matches) != 2 {
		t.Fatalf("retained checkpoints %v (%v)", matches, err)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil || !strings.Contains(string(data), `"Operators"`) {
		t.Fatalf("metadata %q (%v)", data, err)
	}

	// A job that finishes removes its checkpoints.
	dir = t.TempDir()
	env, got := failingJob(t, 2, 60_000, 1, "state.checkpoints.dir", dir)
	if err := env.Execute(context.Background(), "finishes"); err != nil {
		t.Fatal(err)
	}
	if g := got.Values(); len(g) != 60_000 {
		t.Fatalf("committed %d records", len(g))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", "chk-*")); len(left) != 0 {
		t.Fatalf("a finished job left checkpoints: %v", left)
	}

	// A cancelled job removes them unless asked to retain them.
	for _, retention := range []string{"DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"} {
		dir = t.TempDir()
		env := endlessSums(t, t.TempDir(), 2)
		for _, kv := range [][2]string{{"state.checkpoints.dir", dir}, {"execution.checkpointing.interval", "10 ms"},
			{"execution.checkpointing.externalized-checkpoint-retention", retention}} {
			if err := env.Config().Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		job, err := env.ExecuteAsync(context.Background(), "cancelled")
		if err != nil {
			t.Fatal(err)
		}
		for job.CompletedCheckpoints() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		job.Cancel()
		if err := job.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, "*", "chk-*"))
		if want := retention == "RETAIN_ON_CANCELLATION"; (len(left) == 1) != want {
			t.Fatalf("%s: checkpoints left after cancel: %v", retention, left)
		}
	}
}

func TestPebbleBackendNeedsAWritableDirectory(t *testing.T) {
	env := newEnv(t, 1, "state.backend.type", "pebble", "io.tmp.dirs", "/proc/weir-cannot-write-here")
	ks := stream.KeyBy(stream.FromSlice(env, []kv{{1, 1}}), func(x kv) int64 { return x.K })
	stream.Collect(stream.KeyedProcess[int64, kv, string](ks, &countAndRemind{}))
	err := env.Execute(context.Background(), "pebble")
	if err == nil || !strings.Contains(err.Error(), "pebble state backend in /proc/weir-cannot-write-here") {
		t.Fatalf("err = %v", err)
	}
}

// countAndRemind keeps a running count per key in keyed state and sets an
// event-time timer 50 ms after every record.
type countAndRemind struct {
	count state.ValueState[int64]
	last  state.ListState[int64]
}

func (c *countAndRemind) Open(ctx *stream.KeyedContext[int64]) error {
	c.count = state.Value[int64](ctx.State(), "count", 0)
	c.last = state.List[int64](ctx.State(), "last")
	return nil
}

func (c *countAndRemind) ProcessElement(x kv, ctx *stream.KeyedContext[int64], out stream.Collector[string]) error {
	n, _ := c.count.Value()
	c.count.Update(n + 1)
	last := append(slices.Clone(c.last.Get()), x.V)
	if len(last) > 3 {
		last = last[1:]
	}
	c.last.Update(last)
	out.Collect(fmt.Sprintf("%d:%d:%v", x.K, n+1, last))
	ts, _ := ctx.Timestamp()
	ctx.RegisterEventTimeTimer(ts + 50)
	return nil
}

func (c *countAndRemind) OnTimer(ts int64, ctx *stream.KeyedContext[int64], out stream.Collector[string]) error {
	out.Collect(fmt.Sprintf("t:%d:%d", ctx.CurrentKey(), ts))
	return nil
}

func TestKeyedStateAndTimersAreCheckpointed(t *testing.T) {
	const n, keys = 30_000, 37
	var want []string
	counts := map[int64]int64{}
	lasts := map[int64][]int64{}
	for i := int64(0); i < n; i++ {
		k := i % keys
		counts[k]++
		lasts[k] = append(lasts[k], i)
		if len(lasts[k]) > 3 {
			lasts[k] = lasts[k][1:]
		}
		want = append(want, fmt.Sprintf("%d:%d:%v", k, counts[k], lasts[k]), fmt.Sprintf("t:%d:%d", k, i+50))
	}
	slices.Sort(want)
	for _, c := range []struct {
		p       int
		backend string
	}{{1, "hashmap"}, {3, "hashmap"}, {1, "pebble"}, {3, "pebble"}} {
		p := c.p
		env := newEnv(t, p,
			"state.backend.type", c.backend,
			"io.tmp.dirs", t.TempDir(),
			"execution.checkpointing.interval", "10 ms",
			"restart-strategy.type", "fixed-delay",
			"restart-strategy.fixed-delay.delay", "10 ms",
			"taskmanager.network.buffer-records", "64")
		src := stream.FromSourceWithWatermarks[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
			if i%500 == 0 {
				time.Sleep(time.Millisecond)
			}
			return kv{K: i % keys, V: i}
		}}, "numbers", stream.ForMonotonousTimestamps[kv]().WithTimestampAssigner(func(x kv, _ int64) int64 { return x.V }).WithWatermarkPerEvent()).SetParallelism(1)
		processed := stream.KeyedProcess[int64, kv, string](stream.KeyBy(src, func(x kv) int64 { return x.K }), &countAndRemind{}).UID("count")
		var seen [8]int
		failed := stream.Process(processed, stream.ProcessFunc[string, string](func(s string, ctx *stream.Context, out stream.Collector[string]) error {
			if strings.HasPrefix(s, "0:") {
				seen[ctx.Attempt()]++
				if ctx.Attempt() < 2 && seen[ctx.Attempt()] == 200 {
					return errors.New("injected")
				}
			}
			out.Collect(s)
			return nil
		}))
		got := stream.Collect(failed)
		job, err := env.ExecuteAsync(context.Background(), "keyed")
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(); err != nil {
			t.Fatal(err)
		}
		g := got.Values()
		slices.Sort(g)
		if !slices.Equal(g, want) {
			t.Fatalf("p=%d: committed %d records, want %d (restarts %d, checkpoints %d)", p, len(g), len(want), job.Restarts(), job.CompletedCheckpoints())
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

func TestFileSinkIsExactlyOnceAfterFailures(t *testing.T) {
	const n = 60_000
	want := runningSums(n, 37)
	for _, failures := range []int{0, 2} {
		dir := t.TempDir()
		env := newEnv(t, 2,
			"execution.checkpointing.interval", "10 ms",
			"restart-strategy.type", "fixed-delay",
			"restart-strategy.fixed-delay.delay", "10 ms",
			"taskmanager.network.buffer-records", "64")
		src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
			if i%500 == 0 {
				time.Sleep(time.Millisecond)
			}
			return kv{K: i % 37, V: i}
		}}, "numbers").SetParallelism(1)
		sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V })
		lines := injectFailures(sums, failures)
		stream.SinkTo(lines, file.Text[string](dir, nil), "files")
		job, err := env.ExecuteAsync(context.Background(), "files")
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(); err != nil {
			t.Fatal(err)
		}
		got, err := file.ReadLines(dir)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("failures=%d: the files hold %d lines, want %d (restarts %d, checkpoints %d)", failures, len(got), len(want), job.Restarts(), job.CompletedCheckpoints())
		}
		if job.Restarts() != failures {
			t.Fatalf("%d restarts, want %d", job.Restarts(), failures)
		}
	}
}

// sumsToFiles is the running-sum job writing to files, with explicit UIDs
// so that a later run can take over its state.
func sumsToFiles(t *testing.T, dir, checkpoints string, p int, n int64, failures int, uid string) *stream.Environment {
	env := newEnv(t, p,
		"execution.checkpointing.interval", "10 ms",
		"state.checkpoints.dir", checkpoints,
		"taskmanager.network.buffer-records", "64")
	src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
		if i%500 == 0 {
			time.Sleep(time.Millisecond)
		}
		return kv{K: i % 37, V: i}
	}}, "numbers").SetParallelism(1).UID("numbers")
	sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID(uid)
	stream.SinkTo(injectFailures(sums, failures), file.Text[string](dir, nil), "files").UID("files")
	return env
}

func TestResumeFromARetainedCheckpoint(t *testing.T) {
	const n = 60_000
	out, checkpoints := t.TempDir(), t.TempDir()
	// The first run fails for good (no restart strategy) after some
	// checkpoints; its latest checkpoint stays in the directory.
	err := sumsToFiles(t, out, checkpoints, 2, n, 1, "sums").Execute(context.Background(), "first")
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("first run: %v", err)
	}
	chk, _ := filepath.Glob(filepath.Join(checkpoints, "*", "chk-*"))
	if len(chk) != 1 {
		t.Fatalf("retained checkpoints: %v", chk)
	}

	// A job whose operator lost its UID cannot take the state.
	err = sumsToFiles(t, out, t.TempDir(), 2, n, 0, "renamed").RestoreFrom(chk[0], false).Execute(context.Background(), "mismatch")
	if err == nil || !strings.Contains(err.Error(), `state of operator "sums"`) {
		t.Fatalf("restore with another UID: %v", err)
	}
	// Nor one with another number of key groups.
	env := sumsToFiles(t, out, t.TempDir(), 2, n, 0, "sums")
	if err := env.Config().Set("pipeline.max-parallelism", "64"); err != nil {
		t.Fatal(err)
	}
	err = env.RestoreFrom(chk[0], false).Execute(context.Background(), "key-groups")
	if err == nil || !strings.Contains(err.Error(), "had max parallelism 128 and now 64") {
		t.Fatalf("restore with other key groups: %v", err)
	}

	// The second run resumes: together, the two runs published every
	// update exactly once.
	if err := sumsToFiles(t, out, t.TempDir(), 2, n, 0, "sums").RestoreFrom(chk[0], false).Execute(context.Background(), "second"); err != nil {
		t.Fatal(err)
	}
	got, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := runningSums(n, 37); !slices.Equal(got, want) {
		t.Fatalf("the two runs published %d lines, want %d", len(got), len(want))
	}
}

// endlessSums is an unbounded running-sum job writing to files.
func endlessSums(t *testing.T, dir string, p int) *stream.Environment {
	env := newEnv(t, p, "taskmanager.network.buffer-records", "64")
	src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: -1, Fn: func(i int64) kv {
		if i%200 == 0 {
			time.Sleep(time.Millisecond)
		}
		return kv{K: i % 37, V: i}
	}}, "numbers").SetParallelism(1).UID("numbers")
	sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
	lines := stream.Map(sums, func(x kv) string { return fmt.Sprintf("%d:%d", x.K, x.V) }).UID("format")
	stream.SinkTo(lines, file.Text[string](dir, nil), "files").UID("files")
	return env
}

func TestSavepointsStopAndResume(t *testing.T) {
	out, savepoints := t.TempDir(), t.TempDir()
	ctx := context.Background()

	job, err := endlessSums(t, out, 2).ExecuteAsync(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	waitForSource(t, job, 2000)
	// A savepoint of a running job leaves it running.
	sp1, err := job.TriggerSavepoint(ctx, savepoints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sp1, "_metadata")); err != nil {
		t.Fatal(err)
	}
	waitForSource(t, job, 4000)
	sp2, err := job.StopWithSavepoint(ctx, savepoints, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("a job stopped with a savepoint ends without error: %v", err)
	}

	// Savepoints are self-contained: move it, then resume from the copy.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(sp2, moved); err != nil {
		t.Fatal(err)
	}
	job, err = endlessSums(t, out, 2).RestoreFrom(moved, false).ExecuteAsync(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	waitForSource(t, job, 2000)
	if _, err := job.StopWithSavepoint(ctx, savepoints, false); err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}

	// Together the two runs published the running sums of a prefix of the
	// input, every update exactly once.
	checkRunningSumsPrefix(t, out)
}

func TestRescaleFromASavepoint(t *testing.T) {
	out, savepoints := t.TempDir(), t.TempDir()
	ctx := context.Background()
	sp := ""
	// Stop and resume at parallelism 2, 3, 1 and 4: the keyed sums move
	// between subtasks by key group, the sinks' pending transactions are
	// committed by whoever restores them.
	for i, p := range []int{2, 3, 1, 4} {
		env := endlessSums(t, out, p)
		if sp != "" {
			env.RestoreFrom(sp, false)
		}
		job, err := env.ExecuteAsync(ctx, fmt.Sprintf("run-%d", i))
		if err != nil {
			t.Fatalf("run %d at parallelism %d: %v", i, p, err)
		}
		waitForSource(t, job, 1000)
		if sp, err = job.StopWithSavepoint(ctx, savepoints, false); err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	checkRunningSumsPrefix(t, out)
}

func TestRescaleSourcesFromASavepoint(t *testing.T) {
	const n, keys = 40_000, 37
	out, savepoints := t.TempDir(), t.TempDir()
	ctx := context.Background()
	build := func(p int) *stream.Environment {
		env := newEnv(t, p, "taskmanager.network.buffer-records", "64")
		// The source itself runs at p: its splits move between subtasks.
		src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
			if i%400 < 2 { // both parities, so that every split is slow
				time.Sleep(time.Millisecond)
			}
			return kv{K: i % keys, V: i}
		}}, "numbers").UID("numbers")
		sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
		lines := stream.Map(sums, func(x kv) string { return fmt.Sprintf("%d:%d", x.K, x.V) }).UID("format")
		stream.SinkTo(lines, file.Text[string](out, nil), "files").UID("files")
		return env
	}
	sp := ""
	for i, p := range []int{2, 1, 2} {
		env := build(p)
		if sp != "" {
			env.RestoreFrom(sp, false)
		}
		job, err := env.ExecuteAsync(ctx, fmt.Sprintf("run-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			// The last run reads to the end.
			if err := job.Wait(); err != nil {
				t.Fatal(err)
			}
			break
		}
		waitForSource(t, job, 1000)
		if sp, err = job.StopWithSavepoint(ctx, savepoints, false); err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// Record order depends on the source parallelism, so the running sums
	// differ from run to run; exactly once still fixes, per key, how many
	// updates there are and the last one.
	lines, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	updates, last := map[int64]int64{}, map[int64]int64{}
	for _, l := range lines {
		var k, v int64
		fmt.Sscanf(l, "%d:%d", &k, &v)
		updates[k]++
		last[k] = max(last[k], v)
	}
	for k := int64(0); k < keys; k++ {
		var count, sum int64
		for i := k; i < n; i += keys {
			count++
			sum += i
		}
		if updates[k] != count || last[k] != sum {
			t.Fatalf("key %d: %d updates ending at %d, want %d ending at %d", k, updates[k], last[k], count, sum)
		}
	}
}

func TestRescaleKeyedProcessState(t *testing.T) {
	for _, backend := range []string{"hashmap", "pebble"} {
		out, savepoints := t.TempDir(), t.TempDir()
		ctx := context.Background()
		sp := ""
		for i, p := range []int{2, 3, 1} {
			env := newEnv(t, p, "taskmanager.network.buffer-records", "64", "state.backend.type", backend, "io.tmp.dirs", t.TempDir())
			src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: -1, Fn: func(i int64) kv {
				if i%200 == 0 {
					time.Sleep(time.Millisecond)
				}
				return kv{K: i % 37, V: i}
			}}, "numbers").SetParallelism(1).UID("numbers")
			counted := stream.KeyedProcess[int64, kv, string](stream.KeyBy(src, func(x kv) int64 { return x.K }), &countAndRemind{}).UID("count")
			stream.SinkTo(counted, file.Text[string](out, nil), "files").UID("files")
			if sp != "" {
				env.RestoreFrom(sp, false)
			}
			job, err := env.ExecuteAsync(ctx, fmt.Sprintf("run-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			waitForSource(t, job, 1000)
			if sp, err = job.StopWithSavepoint(ctx, savepoints, false); err != nil {
				t.Fatalf("%s run %d: %v", backend, i, err)
			}
			if err := job.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := file.ReadLines(out)
		if err != nil {
			t.Fatal(err)
		}
		// Every record produced one "key:count:last3" line; the timers
		// (no watermarks here) are carried along but never fire.
		counts, lasts := map[int64]int64{}, map[int64][]int64{}
		var want []string
		for i := int64(0); i < int64(len(got)); i++ {
			k := i % 37
			counts[k]++
			lasts[k] = append(lasts[k], i)
			if len(lasts[k]) > 3 {
				lasts[k] = lasts[k][1:]
			}
			want = append(want, fmt.Sprintf("%d:%d:%v", k, counts[k], lasts[k]))
		}
		slices.Sort(got)
		slices.Sort(want)
		if len(got) < 1000 || !slices.Equal(got, want) {
			t.Fatalf("%s: %d lines that are not the running counts of the first %d records", backend, len(got), len(got))
		}
	}
}

// countingFn counts the records its subtask saw in operator list state
// and emits the total of its entries when the input ends.
type countingFn struct {
	counts *stream.OperatorListState[int64]
}

func (c *countingFn) Open(ctx *stream.Context) (err error) {
	c.counts, err = stream.GetOperatorListState[int64](ctx, "counts", stream.RedistributeEvenSplit)
	return err
}

func (c *countingFn) ProcessElement(x kv, _ *stream.Context, _ stream.Collector[int64]) error {
	vs := c.counts.Get()
	if len(vs) == 0 {
		c.counts.Add(1)
		return nil
	}
	vs[0]++
	return nil
}

func (c *countingFn) Finish(_ *stream.Context, out stream.Collector[int64]) error {
	var sum int64
	for _, v := range c.counts.Get() {
		sum += v
	}
	out.Collect(sum)
	return nil
}

func TestOperatorListStateSurvivesRescaling(t *testing.T) {
	const n = 40_000
	savepoints := t.TempDir()
	ctx := context.Background()
	sp := ""
	var totals []int64
	for i, p := range []int{2, 3, 1} {
		env := newEnv(t, p, "taskmanager.network.buffer-records", "64")
		src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
			if i%200 == 0 {
				time.Sleep(time.Millisecond)
			}
			return kv{K: i % 37, V: i}
		}}, "numbers").SetParallelism(1).UID("numbers")
		counted := stream.Process[kv, int64](src.Rebalance(), &countingFn{}).UID("count")
		// A collect sink lives in one run only: a new UID each run, and
		// its old transactions are left behind.
		got := stream.Collect(counted)
		got.UID(fmt.Sprintf("collect-%d", i))
		if sp != "" {
			env.RestoreFrom(sp, true)
		}
		job, err := env.ExecuteAsync(ctx, fmt.Sprintf("run-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := job.Wait(); err != nil {
				t.Fatal(err)
			}
			totals = got.Values()
			break
		}
		waitForSource(t, job, 1000)
		if sp, err = job.StopWithSavepoint(ctx, savepoints, false); err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// The counts moved 2 -> 3 -> 1 subtasks by even split; the last run's
	// single subtask holds them all, so it counted every record once.
	if len(totals) != 1 || totals[0] != n {
		t.Fatalf("final counts %v, want [%d]", totals, n)
	}
}

func TestJobManagerStorageLimit(t *testing.T) {
	env, _ := failingJob(t, 2, 60_000, 0,
		"state.checkpoint-storage.jobmanager.max-size", "100 bytes",
		"execution.checkpointing.tolerable-failed-checkpoints", "0",
		"restart-strategy.type", "none")
	err := env.Execute(context.Background(), "too-big")
	if err == nil || !strings.Contains(err.Error(), "more than the jobmanager storage keeps in memory") || !strings.Contains(err.Error(), "set state.checkpoints.dir") {
		t.Fatalf("err = %v", err)
	}
}

func TestReduceOnPebbleIsExactlyOnce(t *testing.T) {
	const n = 60_000
	env, got := failingJob(t, 2, n, 3, "state.backend.type", "pebble", "io.tmp.dirs", t.TempDir())
	job, err := env.ExecuteAsync(context.Background(), "pebble-reduce")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	g := got.Values()
	slices.Sort(g)
	if want := runningSums(n, 37); !slices.Equal(g, want) {
		t.Fatalf("committed %d records, want %d (restarts %d)", len(g), len(want), job.Restarts())
	}
	if job.Restarts() != 3 || job.CompletedCheckpoints() == 0 {
		t.Fatalf("%d restarts, %d checkpoints", job.Restarts(), job.CompletedCheckpoints())
	}
}

// waitForSource blocks until the job's source "numbers" read at least n
// records in its current attempt, so that a savepoint comes after real
// progress instead of after a guessed sleep.
func waitForSource(t *testing.T, job *stream.JobClient, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var read int64
		for _, m := range job.Metrics() {
			if strings.HasPrefix(m.Task, "Source: numbers") {
				read += m.RecordsIn
			}
		}
		if read >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source read only %d of %d records in 20 s", read, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkRunningSumsPrefix requires dir to hold exactly the running sums of
// the first records of the input, each once: what exactly-once output of
// an endless running-sum job looks like, however often it was stopped.
func checkRunningSumsPrefix(t *testing.T, dir string) {
	t.Helper()
	got, err := file.ReadLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := runningSums(int64(len(got)), 37); len(got) < 1000 || !slices.Equal(got, want) {
		t.Fatalf("published %d lines that are not the running sums of the first %d records", len(got), len(got))
	}
}
