package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/internal/tests3"
	"github.com/weirproject/weir/stream"
)

type kv struct{ K, V int64 }

func testEnv(t *testing.T, p int, kvs ...string) *stream.Environment {
	t.Helper()
	cfg := config.New()
	config.Parallelism.Set(cfg, p)
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := cfg.Set(kvs[i], kvs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return stream.NewEnvironmentWithConfig(cfg)
}

// runningSums is the reference output of sumsJob: every update of a
// per-key running sum of 0..n-1 keyed by value mod keys.
func runningSums(n, keys int64) []string {
	sums := make(map[int64]int64)
	out := make([]string, 0, n)
	for i := range n {
		sums[i%keys] += i
		out = append(out, fmt.Sprintf("%d:%d", i%keys, sums[i%keys]))
	}
	slices.Sort(out)
	return out
}

// sumsJob: a generator (n records, -1 for endless) → keyed running sum
// on the given state → a function failing the first attempts →
// transactional collect.
func sumsJob(t *testing.T, p int, n, keys int64, failures int, kvs ...string) (*stream.Environment, *stream.Collected[string]) {
	env := testEnv(t, p, append([]string{
		"execution.checkpointing.interval", "20 ms",
		"restart-strategy.type", "fixed-delay",
		"restart-strategy.fixed-delay.attempts", "5",
		"restart-strategy.fixed-delay.delay", "10 ms",
		"taskmanager.network.buffer-records", "64",
		"io.tmp.dirs", t.TempDir(),
	}, kvs...)...)
	src := stream.FromSource[kv](env, &stream.Generator[kv]{Count: n, Fn: func(i int64) kv {
		if i%500 == 0 {
			time.Sleep(time.Millisecond)
		}
		return kv{K: i % keys, V: i}
	}}, "numbers").SetParallelism(1).UID("numbers")
	sums := stream.Sum(stream.KeyBy(src, func(x kv) int64 { return x.K }), func(x *kv) *int64 { return &x.V }).UID("sums")
	var seen [16]int
	out := stream.Process(sums, stream.ProcessFunc[kv, string](func(x kv, ctx *stream.Context, out stream.Collector[string]) error {
		if x.K == 0 {
			seen[ctx.Attempt()]++
			if ctx.Attempt() < failures && seen[ctx.Attempt()] == 300 {
				return fmt.Errorf("injected failure in attempt %d", ctx.Attempt())
			}
		}
		out.Collect(fmt.Sprintf("%d:%d", x.K, x.V))
		return nil
	})).UID("fail")
	return env, stream.Collect(out)
}

func runExactlyOnce(t *testing.T, p int, n, keys int64, failures int, kvs ...string) {
	t.Helper()
	env, got := sumsJob(t, p, n, keys, failures, kvs...)
	job, err := env.ExecuteAsync(context.Background(), "sums")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("p=%d: %v", p, err)
	}
	g := got.Values()
	slices.Sort(g)
	if want := runningSums(n, keys); !slices.Equal(g, want) {
		t.Fatalf("p=%d: committed %d records, want %d (restarts %d, checkpoints %d)", p, len(g), len(want), job.Restarts(), job.CompletedCheckpoints())
	}
	if job.Restarts() != failures || job.CompletedCheckpoints() == 0 {
		t.Fatalf("p=%d: %d restarts (want %d), %d checkpoints", p, job.Restarts(), failures, job.CompletedCheckpoints())
	}
}

// TestIncrementalCheckpointsAreExactlyOnce restores Pebble state from
// incremental checkpoints (files in the shared area) after failures.
func TestIncrementalCheckpointsAreExactlyOnce(t *testing.T) {
	for _, p := range []int{1, 2} {
		dir := t.TempDir()
		runExactlyOnce(t, p, 40_000, 37, 3, "state.backend.type", "pebble", "state.checkpoints.dir", "file://"+dir,
			"state.checkpoints.num-retained", "2")
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("a finished job left %d entries in its checkpoint directory", len(entries))
		}
	}
}

// manifest is the part of an incremental snapshot this test reads.
type manifest struct {
	Shared []struct{ Handle string }
}

// sharedHandles reads the shared files that a retained checkpoint's Sum
// operator references, straight from the storage.
func sharedHandles(t *testing.T, chk string) []string {
	t.Helper()
	cp, err := runtime.LoadCheckpoint(chk)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, task := range cp.Tasks {
		data, ok := task.Operators["sums"]
		if !ok {
			continue
		}
		const magic = "weir-pebble-incremental-1\n"
		if !strings.HasPrefix(string(data), magic) {
			t.Fatalf("%s: the Sum state is not an incremental snapshot: %.30q", chk, data)
		}
		var m manifest
		if err := json.Unmarshal(data[len(magic):], &m); err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Shared {
			hs = append(hs, f.Handle)
		}
	}
	return hs
}

// TestIncrementalCheckpointsOnStorage checks on the storage that Pebble
// checkpoints go to <dir>/<job>/shared/, that later checkpoints reference
// files of earlier ones instead of uploading them again, and that files
// no retained checkpoint references any more are deleted.
func TestIncrementalCheckpointsOnStorage(t *testing.T) {
	dir := t.TempDir()
	env, _ := sumsJob(t, 1, -1, 200_000, 0, "state.backend.type", "pebble", "state.checkpoints.dir", dir,
		"state.checkpoints.num-retained", "2", "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	job, err := env.ExecuteAsync(context.Background(), "incremental")
	if err != nil {
		t.Fatal(err)
	}
	defer job.Cancel()
	jobDirs := func() []string { m, _ := filepath.Glob(filepath.Join(dir, "*")); return m }
	waitFor(t, func() bool { return len(jobDirs()) == 1 && job.CompletedCheckpoints() >= 1 })
	jobDir := jobDirs()[0]
	first := sharedHandles(t, filepath.Join(jobDir, "chk-1"))
	if len(first) == 0 {
		t.Fatal("checkpoint 1 references no shared file")
	}
	waitFor(t, func() bool { return job.CompletedCheckpoints() >= 12 })
	job.Cancel()
	if err := job.Wait(); err == nil {
		t.Fatal("a cancelled job reported success")
	}

	chks, _ := filepath.Glob(filepath.Join(jobDir, "chk-*"))
	if len(chks) != 2 {
		t.Fatalf("retained %d checkpoints, want 2: %v", len(chks), chks)
	}
	chkNumber := func(p string) (n int) { fmt.Sscanf(filepath.Base(p), "chk-%d", &n); return n }
	slices.SortFunc(chks, func(a, b string) int { return chkNumber(a) - chkNumber(b) })
	older, newer := sharedHandles(t, chks[0]), sharedHandles(t, chks[1])
	for _, h := range append(slices.Clone(older), newer...) {
		if _, err := os.Stat(filepath.Join(dir, h)); err != nil {
			t.Fatalf("a retained checkpoint references %s, which is not on the storage: %v", h, err)
		}
	}
	reused := 0
	for _, h := range newer {
		if slices.Contains(older, h) {
			reused++
		}
	}
	if reused == 0 {
		t.Fatalf("the newest checkpoint shares no file with the one before: it is not incremental (%d and %d files)", len(older), len(newer))
	}
	gone := 0
	for _, h := range first {
		referenced := slices.Contains(newer, h) || slices.Contains(older, h)
		_, err := os.Stat(filepath.Join(dir, h))
		switch {
		case os.IsNotExist(err):
			gone++
		case !referenced:
			t.Fatalf("%s of checkpoint 1 is still on the storage, though no retained checkpoint references it", h)
		}
	}
	if gone == 0 && !slices.ContainsFunc(first, func(h string) bool { return slices.Contains(newer, h) || slices.Contains(older, h) }) {
		t.Fatalf("no file of checkpoint 1 was deleted, though no retained checkpoint references them: %v", first)
	}
	t.Logf("checkpoint 1: %d files, %d deleted since; retained: %d and %d files, %d shared", len(first), gone, len(older), len(newer), reused)

	// The history tells the two sizes apart: later checkpoints write less
	// than the state they need.
	hist := job.CheckpointHistory()
	if len(hist) < 12 {
		t.Fatalf("history holds %d checkpoints, want every one of the %d", len(hist), job.CompletedCheckpoints())
	}
	smaller := 0
	for _, h := range hist {
		if h.CheckpointedSize > h.FullSize || h.FullSize == 0 || h.Duration <= 0 {
			t.Fatalf("checkpoint %d: checkpointed %d bytes of %d in %v", h.ID, h.CheckpointedSize, h.FullSize, h.Duration)
		}
		if h.CheckpointedSize < h.FullSize {
			smaller++
		}
		// The subtasks' parts add up to the checkpoint's sizes: what each
		// uploaded, and what it uploaded or reused.
		var written, state int64
		for _, st := range h.Tasks {
			written += st.CheckpointedSize
			state += st.StateSize
			if st.Finished || st.AckAt.Before(st.BarrierAt) || st.BarrierAt.Before(h.TriggeredAt) || st.Sync <= 0 {
				t.Fatalf("checkpoint %d, %s %d: %+v (triggered %v)", h.ID, st.Vertex, st.Subtask, st.SubtaskCheckpointStats, h.TriggeredAt)
			}
		}
		if len(h.Tasks) != h.Subtasks || h.Acknowledged != h.Subtasks || written != h.CheckpointedSize || state != h.FullSize {
			t.Fatalf("checkpoint %d: %d subtasks' parts of %d wrote %d of %d bytes and hold %d of %d", h.ID, len(h.Tasks), h.Subtasks,
				written, h.CheckpointedSize, state, h.FullSize)
		}
	}
	if smaller == 0 {
		t.Fatal("no checkpoint wrote less than its full size")
	}
}

// TestFullPebbleCheckpoints turns incremental checkpoints off: every
// checkpoint uploads all of the store's files into its own directory, and
// recovery still restores from them.
func TestFullPebbleCheckpoints(t *testing.T) {
	dir := t.TempDir()
	env, got := sumsJob(t, 2, 30_000, 37, 2, "state.backend.type", "pebble", "state.checkpoints.dir", dir,
		"state.backend.incremental", "false", "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	job, err := env.ExecuteAsync(context.Background(), "full")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	g := got.Values()
	slices.Sort(g)
	if want := runningSums(30_000, 37); !slices.Equal(g, want) {
		t.Fatalf("committed %d records, want %d", len(g), len(want))
	}
	for _, h := range job.CheckpointHistory() {
		if h.CheckpointedSize != h.FullSize {
			t.Fatalf("checkpoint %d wrote %d of %d bytes; a full checkpoint writes all", h.ID, h.CheckpointedSize, h.FullSize)
		}
	}

	// What a full checkpoint leaves on the storage: its files in its own
	// directory, nothing shared.
	env, _ = sumsJob(t, 1, -1, 37, 0, "state.backend.type", "pebble", "state.checkpoints.dir", dir,
		"state.backend.incremental", "false", "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	job, err = env.ExecuteAsync(context.Background(), "full-endless")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return job.CompletedCheckpoints() >= 3 })
	job.Cancel()
	_ = job.Wait()
	latest := job.LatestCheckpoint()
	if ssts, _ := filepath.Glob(filepath.Join(latest, "files", "*.sst")); len(ssts) == 0 {
		t.Fatalf("the full checkpoint %s holds no store file", latest)
	}
	if shared, _ := filepath.Glob(filepath.Join(filepath.Dir(latest), "shared", "*")); len(shared) != 0 {
		t.Fatalf("full checkpoints put %d files into the shared area", len(shared))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startS3 starts an S3-compatible server in process and returns the
// checkpoint URI of a fresh bucket on it.
func startS3(t *testing.T) string {
	t.Helper()
	return tests3.Start(t, "checkpoints").URI("weir")
}

// TestCheckpointsOnS3 runs the exactly-once job with both backends
// checkpointing to an S3-compatible server, and resumes a job from a
// checkpoint read back from it.
func TestCheckpointsOnS3(t *testing.T) {
	uri := startS3(t)
	for _, backend := range []string{"hashmap", "pebble"} {
		runExactlyOnce(t, 2, 30_000, 37, 2, "state.backend.type", backend, "state.checkpoints.dir", uri)
	}

	// A job cancelled with retention leaves its checkpoint on S3; a new
	// job resumes from it by URI, with its state.
	env, _ := sumsJob(t, 2, -1, 37, 0, "state.backend.type", "pebble", "state.checkpoints.dir", uri,
		"execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	job, err := env.ExecuteAsync(context.Background(), "endless")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return job.CompletedCheckpoints() >= 3 })
	job.Cancel()
	_ = job.Wait()
	latest := job.LatestCheckpoint()
	if !strings.HasPrefix(latest, "s3://checkpoints/weir/") {
		t.Fatalf("latest checkpoint at %q, not on S3", latest)
	}
	cp, err := runtime.LoadCheckpoint(latest)
	if err != nil {
		t.Fatalf("load the retained checkpoint from S3: %v", err)
	}
	if len(cp.Tasks) == 0 {
		t.Fatalf("loaded checkpoint %d with no tasks from %s", cp.ID, latest)
	}
	env, got := sumsJob(t, 2, -1, 37, 0, "state.backend.type", "pebble", "state.checkpoints.dir", uri)
	// The collect sink keeps its transactions in the memory of the
	// process that ran it: the new job gets a new one.
	got.UID("collect-resumed")
	env.RestoreFrom(latest, true)
	resumed, err := env.ExecuteAsync(context.Background(), "resumed")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		select {
		case <-resumed.Done():
			t.Fatalf("the resumed job ended: %v", resumed.Wait())
		default:
		}
		return resumed.CompletedCheckpoints() >= 2 && len(got.Values()) > 0
	})
	resumed.Cancel()
	_ = resumed.Wait()
	// Key k's m-th running sum is k*m + 37*m*(m-1)/2: every sum the
	// resumed job committed is one, and none is the first few of its key
	// (the state was not lost).
	for _, line := range got.Values() {
		var k, sum int64
		fmt.Sscanf(line, "%d:%d", &k, &sum)
		m := int64(1)
		for k*m+37*m*(m-1)/2 < sum {
			m++
		}
		if k*m+37*m*(m-1)/2 != sum {
			t.Fatalf("resumed job committed %q, which is no running sum of key %d", line, k)
		}
		if m <= 3 {
			t.Fatalf("resumed job committed %q, the %d. sum of its key: it started from empty state", line, m)
		}
	}
	if _, err := runtime.LoadCheckpoint(strings.Replace(uri, "/weir?", "/no-such-job/chk-1?", 1)); err == nil || !strings.Contains(err.Error(), "no _metadata") {
		t.Fatalf("loading a missing checkpoint: %v", err)
	}
}
