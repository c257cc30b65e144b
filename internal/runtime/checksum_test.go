package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/runtime"
	"github.com/weirproject/weir/stream"
)

// Checksums on checkpoint files (issue 31): a byte flipped anywhere in a
// checkpoint or savepoint fails the restore, naming the file, instead of
// restoring into wrong results.

// flipKeys: enough keys that a savepoint's Sum state spans several
// 64 KiB checksum blocks. The legacy fixtures were written with 37.
const (
	flipKeys   = 20_000
	legacyKeys = 37
)

// takeSavepoint runs the endless sums job on the given state backend
// until it has taken a few checkpoints, and stops it with a savepoint.
func takeSavepoint(t *testing.T, backend string) string {
	t.Helper()
	// Every operator's state in a file of its own, as large state is.
	env, _ := sumsJob(t, 1, -1, flipKeys, 0, "state.backend.type", backend, "state.storage.fs.memory-threshold", "1 b")
	job, err := env.ExecuteAsync(context.Background(), "savepoint-"+backend)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Cancel()
	waitFor(t, func() bool { return job.CompletedCheckpoints() >= 3 && sourceProgress(job) > flipKeys })
	sp, err := job.StopWithSavepoint(context.Background(), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatalf("stop with a savepoint: %v", err)
	}
	return sp
}

// sourceOffset reads from a checkpoint's _metadata the generator's next
// index: the number of records its state covers.
func sourceOffset(t *testing.T, chk string) int64 {
	t.Helper()
	cp, err := runtime.LoadCheckpoint(chk)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range cp.Tasks {
		if data, ok := task.Operators["numbers"]; ok {
			var splits []struct{ Next int64 }
			if err := json.Unmarshal(data, &splits); err != nil || len(splits) != 1 {
				t.Fatalf("%s: generator state %q: %v", chk, data, err)
			}
			return splits[0].Next
		}
	}
	t.Fatalf("%s: no state of the generator", chk)
	return 0
}

// restoreSums restores the endless sums job from chk and returns what it
// committed once it has committed at least min records, or the error it
// failed with. It does not restart: a restore that fails, fails the job.
// At parallelism 1 every checkpoint commits a prefix of the input, so the
// records committed are those right after the restored state's.
func restoreSums(t *testing.T, chk, backend string, keys int64, min int) ([]string, error) {
	t.Helper()
	env, got := sumsJob(t, 1, -1, keys, 0, "state.backend.type", backend, "restart-strategy.type", "none")
	// A collect sink's transactions live in the process that ran it: the
	// restored job's sink is a new operator, and the old one's pending
	// transaction is left behind (allowNonRestoredState).
	got.UID("restored-collect")
	job, err := env.RestoreFrom(chk, true).ExecuteAsync(context.Background(), "restore")
	if err != nil {
		return nil, err
	}
	defer job.Cancel()
	waitFor(t, func() bool {
		select {
		case <-job.Done():
			return true
		default:
			return len(got.Values()) >= min
		}
	})
	select {
	case <-job.Done():
		err := job.Wait()
		if err == nil {
			err = errors.New("the endless job ended")
		}
		return nil, err
	default:
	}
	job.Cancel()
	_ = job.Wait()
	g := got.Values()
	slices.Sort(g)
	return g, nil
}

// checkAfter fails unless got are the running sums of the records right
// after the first from.
func checkAfter(t *testing.T, what string, got []string, from, keys int64) {
	t.Helper()
	if want := wantAfter(from, from+int64(len(got)), keys); !slices.Equal(got, want) {
		t.Fatalf("%s restored into %d records that are not the running sums after record %d; first: %v, want %v",
			what, len(got), from, got[:min(3, len(got))], want[:min(3, len(want))])
	}
}

// wantAfter is what a job restored from a state covering the first from
// records commits running to n: the running sums of the records after.
func wantAfter(from, n, keys int64) []string {
	sums := make(map[int64]int64)
	var out []string
	for i := range n {
		sums[i%keys] += i
		if i >= from {
			out = append(out, formatKV(i%keys, sums[i%keys]))
		}
	}
	slices.Sort(out)
	return out
}

func formatKV(k, v int64) string { return fmt.Sprintf("%d:%d", k, v) }

// stateFiles lists the files under dir with their sizes, as paths
// relative to it.
func stateFiles(t *testing.T, dir string) (names []string, sizes []int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		sizes = append(sizes, info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, sizes
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// TestFlippedByteInSavepointFailsRestore flips one byte at 100 random
// positions of a savepoint's files (its _metadata and every operator's
// state file), for the heap and for Pebble, each in
// a fresh copy: every restore must fail and name the file, none may
// succeed with different state. Before checksums most flips in the state
// restored with exit 0 and wrong sums.
func TestFlippedByteInSavepointFailsRestore(t *testing.T) {
	const flips = 100
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			sp := takeSavepoint(t, backend)
			from := sourceOffset(t, sp)
			// The intact savepoint restores into the right sums.
			got, err := restoreSums(t, sp, backend, flipKeys, 200)
			if err != nil {
				t.Fatalf("restore of the intact savepoint: %v", err)
			}
			checkAfter(t, "the intact savepoint", got, from, flipKeys)

			names, sizes := stateFiles(t, sp)
			var total int64
			for _, s := range sizes {
				total += s
			}
			rng := rand.New(rand.NewPCG(uint64(len(backend)), 31))
			failedIn := make(map[string]int)
			for i := range flips {
				// Odd flips: a position uniformly over all bytes of the
				// savepoint; even: a file, then a position in it, so that
				// the small files (_metadata) are hit too.
				var f int
				var pos int64
				if i%2 == 1 {
					pos = rng.Int64N(total)
					for pos >= sizes[f] {
						pos -= sizes[f]
						f++
					}
				} else {
					f = rng.IntN(len(names))
					pos = rng.Int64N(sizes[f])
				}
				dir := filepath.Join(t.TempDir(), filepath.Base(sp))
				copyTree(t, sp, dir)
				target := filepath.Join(dir, names[f])
				data, err := os.ReadFile(target)
				if err != nil {
					t.Fatal(err)
				}
				mask := byte(1 + rng.IntN(255))
				data[pos] ^= mask
				if err := os.WriteFile(target, data, 0o600); err != nil {
					t.Fatal(err)
				}
				got, err := restoreSums(t, dir, backend, flipKeys, 200)
				if err == nil {
					same := slices.Equal(got, wantAfter(from, from+int64(len(got)), flipKeys))
					t.Fatalf("flip %d: byte %d of %s (of %d bytes) xor %#02x restored without error (same results: %v)", i, pos, names[f], sizes[f], mask, same)
				}
				if !strings.Contains(err.Error(), target) {
					t.Fatalf("flip %d: byte %d of %s: the error does not name the file %s: %v", i, pos, names[f], target, err)
				}
				failedIn[names[f]]++
			}
			t.Logf("%d flips over %d files (%d bytes): every restore failed naming its file: %v", flips, len(names), total, failedIn)
		})
	}
}

// TestFlippedByteInRetainedCheckpointFailsRestore damages a retained
// incremental Pebble checkpoint where each kind of file lives: an SST in
// the shared area, the operator's state file, and _metadata. Each
// restore fails naming the damaged file.
func TestFlippedByteInRetainedCheckpointFailsRestore(t *testing.T) {
	dir := t.TempDir()
	// State above the inline threshold so that the Sum operator's
	// manifest gets a file of its own.
	env, _ := sumsJob(t, 1, -1, legacyKeys, 0, "state.backend.type", "pebble", "state.checkpoints.dir", dir,
		"state.storage.fs.memory-threshold", "1 b",
		"execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	job, err := env.ExecuteAsync(context.Background(), "retained")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return job.CompletedCheckpoints() >= 3 })
	job.Cancel()
	_ = job.Wait()
	chk := job.LatestCheckpoint()
	if chk == "" {
		t.Fatal("no retained checkpoint")
	}
	from := sourceOffset(t, chk)
	got, err := restoreSums(t, chk, "pebble", legacyKeys, 200)
	if err != nil {
		t.Fatalf("restore of the intact checkpoint: %v", err)
	}
	checkAfter(t, "the intact checkpoint", got, from, legacyKeys)

	ssts := sharedHandles(t, chk)
	ops, _ := filepath.Glob(filepath.Join(chk, "op-*"))
	if len(ssts) == 0 || len(ops) == 0 {
		t.Fatalf("the checkpoint has %d shared files and %d operator files; want both", len(ssts), len(ops))
	}
	for _, c := range []struct{ what, file string }{
		{"shared SST", filepath.Join(dir, ssts[0])},
		{"operator state file", ops[0]},
		{"_metadata", filepath.Join(chk, "_metadata")},
	} {
		t.Run(c.what, func(t *testing.T) {
			orig, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			bad := slices.Clone(orig)
			// Inside the data, not the trailer: what a rotting disk or a
			// bad copy does to the bytes that matter.
			bad[len(bad)/3] ^= 0x08
			if err := os.WriteFile(c.file, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(c.file, orig, 0o600)
			_, err = restoreSums(t, chk, "pebble", legacyKeys, 200)
			if err == nil {
				t.Fatalf("a byte flipped in the %s %s restored without error", c.what, c.file)
			}
			if !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), "checksum") {
				t.Fatalf("the error does not name the damaged %s %s and the checksum: %v", c.what, c.file, err)
			}
			t.Logf("%s: %v", c.what, err)
		})
	}
}

// TestLegacyCheckpointsRestore restores checkpoints and savepoints that
// weir wrote before checksums (testdata/legacy, format 0), for the heap
// and Pebble: they have no trailers and must restore as they did.
func TestLegacyCheckpointsRestore(t *testing.T) {
	for _, c := range []struct{ name, backend string }{
		{"savepoint-hashmap", "hashmap"},
		{"savepoint-pebble", "pebble"},
		{"checkpoint-hashmap", "hashmap"},
		{"checkpoint-pebble", "pebble"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), c.name)
			copyTree(t, filepath.Join("testdata", "legacy", c.name), dir)
			chk := legacyPointer(t, dir)
			from := sourceOffset(t, chk)
			got, err := restoreSums(t, chk, c.backend, legacyKeys, 500)
			if err != nil {
				t.Fatalf("restore of a checkpoint without checksums: %v", err)
			}
			checkAfter(t, c.name, got, from, legacyKeys)
		})
	}
}

// legacyPointer finds the directory with _metadata under a fixture.
func legacyPointer(t *testing.T, dir string) string {
	t.Helper()
	var found string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "_metadata" {
			found = filepath.Dir(p)
		}
		return err
	})
	if found == "" {
		t.Fatalf("%s holds no _metadata", dir)
	}
	return found
}

// TestSavepointTargetRefused: a relative savepoint directory and one
// inside the job's own checkpoint directory are refused at once with the
// reason, and the job keeps running.
func TestSavepointTargetRefused(t *testing.T) {
	dir := t.TempDir()
	env, _ := sumsJob(t, 1, -1, legacyKeys, 0, "state.checkpoints.dir", dir)
	job, err := env.ExecuteAsync(context.Background(), "targets")
	if err != nil {
		t.Fatal(err)
	}
	defer job.Cancel()
	waitFor(t, func() bool { return job.CompletedCheckpoints() >= 1 })
	jobDirs, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(jobDirs) != 1 {
		t.Fatalf("checkpoint directory holds %v", jobDirs)
	}
	for _, c := range []struct{ target, want string }{
		{"savepoints", "relative path"},
		{"./sp", "relative path"},
		{jobDirs[0], "this job's checkpoint directory"},
		{filepath.Join(jobDirs[0], "savepoints"), "this job's checkpoint directory"},
		{"file://" + filepath.Join(jobDirs[0], "sp"), "this job's checkpoint directory"},
	} {
		_, err := job.TriggerSavepoint(context.Background(), c.target)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("savepoint into %q: %v, want an error saying %q", c.target, err, c.want)
		}
	}
	// A directory next to the job's is fine: only its own is deleted.
	sp, err := job.TriggerSavepoint(context.Background(), filepath.Join(dir, "savepoints"))
	if err != nil {
		t.Fatalf("savepoint next to the job's checkpoints: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sp, "_metadata")); err != nil {
		t.Fatal(err)
	}
	job.Cancel()
	if err := job.Wait(); err == nil {
		t.Fatal("a cancelled job reported success")
	}
	if _, err := os.Stat(filepath.Join(sp, "_metadata")); err != nil {
		t.Fatalf("the savepoint is gone after the job ended: %v", err)
	}
}

// sourceProgress is how many records the generator has emitted.
func sourceProgress(job *stream.JobClient) int64 {
	var read int64
	for _, m := range job.Metrics() {
		if strings.HasPrefix(m.Task, "Source: numbers") {
			read += m.RecordsIn
		}
	}
	return read
}
