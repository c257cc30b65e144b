package stream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/network"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// distributedJob builds, in one environment per worker, a job whose
// source has parallelism 4, a map 4 and a keyed running count 3: the
// seeds' example. Its output is "key:count" per update, which does not
// depend on how the sources' records interleave.
func distributedJob(t *testing.T, n int64, kvs ...string) (*stream.Environment, *stream.Collected[string]) {
	env, out := countingJob(t, 4, n, 2000, kvs...)
	return env, stream.Collect(out)
}

// countingJob builds distributedJob at parallelism p, whose sources pause
// a millisecond every pauseEvery records, up to its sink.
func countingJob(t *testing.T, p int, n, pauseEvery int64, kvs ...string) (*stream.Environment, *stream.Stream[string]) {
	env := newEnv(t, p, append([]string{"taskmanager.network.buffer-records", "64"}, kvs...)...)
	src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
		if i%pauseEvery == 0 {
			time.Sleep(time.Millisecond) // several checkpoints per run
		}
		return kv{K: i % 37, V: i}
	}}, "numbers").UID("numbers")
	ones := stream.Map(src, func(x kv) kv { return kv{K: x.K, V: 1} }).UID("ones")
	counts := stream.Sum(stream.KeyBy(ones, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("counts").SetParallelism(3)
	out := stream.Map(counts, func(x kv) string { return fmt.Sprintf("%d:%d", x.K, x.V) }).UID("format").SetParallelism(3)
	return env, out
}

// runDistributed runs the job of build on workers placed by placement,
// all in this process but exchanging records and control messages over
// TCP, and returns the union of what their sinks committed.
func runDistributed(t *testing.T, placement []int, build func() (*stream.Environment, *stream.Collected[string])) ([]string, []*stream.JobClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sinks []*stream.Collected[string]
	jobs := executeOn(t, ctx, placement, "job-1", func() *stream.Environment {
		env, got := build()
		sinks = append(sinks, got)
		return env
	})
	var out []string
	for w, job := range jobs {
		if err := job.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
		out = append(out, sinks[w].Values()...)
	}
	slices.Sort(out)
	return out, jobs
}

// runningCounts37 is the reference output of distributedJob.
func runningCounts37(n int64) []string {
	var want []string
	for k := range int64(37) {
		for c := int64(1); c <= (n-k+36)/37; c++ {
			want = append(want, fmt.Sprintf("%d:%d", k, c))
		}
	}
	slices.Sort(want)
	return want
}

func TestDistributedJob(t *testing.T) {
	const n = 40_000
	want := runningCounts37(n)
	for _, tc := range []struct {
		name      string
		placement []int
		kvs       []string
	}{
		{"two workers, alternating slots", []int{0, 1, 0, 1}, nil},
		{"three workers", []int{0, 0, 1, 2}, nil},
		{"checkpoints", []int{0, 1, 1, 0}, []string{"execution.checkpointing.interval", "10 ms"}},
		{"checkpoints to files, pebble", []int{1, 0, 1, 0}, []string{"execution.checkpointing.interval", "10 ms",
			"state.backend.type", "pebble", "state.checkpoints.dir", filepath.Join(t.TempDir(), "chk")}},
		{"unaligned checkpoints", []int{0, 1, 0, 1}, []string{"execution.checkpointing.interval", "10 ms",
			"execution.checkpointing.unaligned.enabled", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, jobs := runDistributed(t, tc.placement, func() (*stream.Environment, *stream.Collected[string]) {
				return distributedJob(t, n, tc.kvs...)
			})
			if !slices.Equal(got, want) {
				var missing []string
				for _, w := range want {
					if _, ok := slices.BinarySearch(got, w); !ok {
						missing = append(missing, w)
					}
				}
				for w, j := range jobs {
					for _, m := range j.Metrics() {
						t.Logf("worker %d: %s in %d out %d", w, m.Task, m.RecordsIn, m.RecordsOut)
					}
				}
				t.Fatalf("committed %d records, want %d; %d missing, e.g. %v; checkpoints %d", len(got), len(want), len(missing), missing[:min(len(missing), 10)], jobs[0].CompletedCheckpoints())
			}
			if tc.kvs != nil && jobs[0].CompletedCheckpoints() == 0 {
				t.Fatal("no checkpoint completed")
			}
		})
	}
}

// startWorkers listens on a data plane per worker and returns them with
// their addresses.
func startWorkers(t *testing.T, workers int) ([]*network.Manager, []string) {
	t.Helper()
	var nets []*network.Manager
	var peers []string
	for range workers {
		nm, err := network.Listen(network.Config{Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nm.Close() })
		nets, peers = append(nets, nm), append(peers, nm.Addr())
	}
	return nets, peers
}

// executeOn starts the job that build makes once per worker, spread by
// placement over workers in this process.
func executeOn(t *testing.T, ctx context.Context, placement []int, key string, build func() *stream.Environment) []*stream.JobClient {
	t.Helper()
	nets, peers := startWorkers(t, slices.Max(placement)+1)
	var jobs []*stream.JobClient
	for w := range nets {
		env := build()
		if len(nets) > 1 {
			stream.SetDistribution(env, &runtime.Distribution{Self: w, Placement: placement, Net: nets[w], Peers: peers, Key: key})
		}
		jc, err := env.ExecuteAsync(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, jc)
	}
	return jobs
}

// waitCheckpoints waits until the leader's job completed n checkpoints.
func waitCheckpoints(t *testing.T, ctx context.Context, job *stream.JobClient, n int) {
	t.Helper()
	for job.CompletedCheckpoints() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d checkpoints completed", job.CompletedCheckpoints(), n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestDistributedStopWithSavepoint stops a job spread over two workers
// with a savepoint (the leader prepares the other worker for it, both
// write self-contained pebble snapshots, and the leader stops the other
// once the sinks committed), resumes it from the savepoint in one process
// at another parallelism, and requires that the two runs together
// committed exactly the reference output.
func TestDistributedStopWithSavepoint(t *testing.T) {
	const n = 200_000
	dir := t.TempDir()
	kvs := []string{"execution.checkpointing.interval", "20 ms", "state.backend.type", "pebble",
		"state.checkpoints.dir", filepath.Join(dir, "chk")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Both runs commit into one directory, exactly once; the resumed run
	// commits again (idempotently) what the savepoint holds.
	out := filepath.Join(dir, "out")
	job := func(p int) *stream.Environment {
		env, counts := countingJob(t, p, n, 200, kvs...)
		stream.SinkTo(counts, file.Text[string](out, nil), "files").UID("files")
		return env
	}
	jobs := executeOn(t, ctx, []int{0, 1, 0, 1}, "job-sp", func() *stream.Environment { return job(4) })
	waitCheckpoints(t, ctx, jobs[0], 2)
	path, err := jobs[0].StopWithSavepoint(ctx, filepath.Join(dir, "savepoints"), false)
	if err != nil {
		t.Fatal(err)
	}
	for w, jc := range jobs {
		if err := jc.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	got, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	first := len(got)
	if first == 0 || first >= n {
		t.Fatalf("the first run committed %d of %d records; want some, not all", first, n)
	}

	env := job(2)
	env.RestoreFrom(path, false)
	jc, err := env.ExecuteAsync(ctx, "resumed")
	if err != nil {
		t.Fatal(err)
	}
	if err := jc.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, err = file.ReadLines(out); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := runningCounts37(n); !slices.Equal(got, want) {
		t.Fatalf("committed %d records (%d before the savepoint), want %d", len(got), first, len(want))
	}
}

type wordN struct {
	W string
	N int64
}

// oneFileJob counts the lines of one file at parallelism 4, so that one
// source subtask reads it and three finish at once, into files under out,
// pausing a millisecond every pauseEvery lines.
func oneFileJob(t *testing.T, input, out string, pauseEvery int) *stream.Environment {
	env := newEnv(t, 4, "execution.checkpointing.interval", "20 ms", "execution.runtime-mode", "STREAMING")
	lines := stream.FromSource(env, file.Lines(input), "lines").UID("lines")
	var n int
	slow := stream.Map(lines, func(s string) wordN {
		if n++; n%pauseEvery == 0 {
			time.Sleep(time.Millisecond) // several checkpoints while it reads
		}
		return wordN{W: s, N: 1}
	}).UID("slow")
	sums := stream.Sum(stream.KeyBy(slow, func(x wordN) string { return x.W }), func(x *wordN) *int64 { return &x.N }).UID("count")
	counts := stream.Map(sums, func(x wordN) string { return fmt.Sprintf("%s %d", x.W, x.N) }).UID("format")
	stream.SinkTo(counts, file.Text[string](out, nil), "files").UID("files")
	return env
}

// TestStopWithSavepointAfterSourcesFinished: three of four source
// subtasks finished and exited long before the stop, in one process and
// spread over two workers. The stop used to wait forever for them to
// handle the savepoint's completion.
func TestStopWithSavepointAfterSourcesFinished(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.txt")
	var text strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&text, "w%d\n", i%7)
	}
	if err := os.WriteFile(input, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, placement := range [][]int{{0, 0, 0, 0}, {0, 1, 0, 1}} {
		workers := slices.Max(placement) + 1
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		jobs := executeOn(t, ctx, placement, "job-stop", func() *stream.Environment {
			return oneFileJob(t, input, filepath.Join(dir, fmt.Sprintf("out-%d", workers)), 10)
		})
		waitCheckpoints(t, ctx, jobs[0], 3)
		if _, err := jobs[0].StopWithSavepoint(ctx, filepath.Join(dir, "savepoints"), false); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		for w, jc := range jobs {
			if err := jc.Wait(); err != nil {
				t.Fatalf("%d workers: worker %d: %v", workers, w, err)
			}
		}
	}
}

// TestDistributedCheckpointsWithFinishedSources: one source subtask reads
// the only file while the other three finish at once, on both workers;
// checkpoints go on with the finished subtasks (whose final checkpoints
// the leader takes through the link) until the job ends.
func TestDistributedCheckpointsWithFinishedSources(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.txt")
	var text strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&text, "w%d\n", i%7)
	}
	if err := os.WriteFile(input, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var want []string
	seen := map[string]int{}
	for _, w := range strings.Fields(text.String()) {
		seen[w]++
		want = append(want, fmt.Sprintf("%s %d", w, seen[w]))
	}
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs := executeOn(t, ctx, []int{0, 1, 0, 1}, "job-fin", func() *stream.Environment { return oneFileJob(t, input, out, 50) })
	for w, jc := range jobs {
		if err := jc.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	got, err := file.ReadLines(out)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d", len(got), len(want))
	}
	if jobs[0].CompletedCheckpoints() < 3 {
		t.Fatalf("%d checkpoints completed; want checkpoints to go on after three sources finished", jobs[0].CompletedCheckpoints())
	}
}
