package stream_test

import (
	"context"
	"testing"
	"time"
)

// TestSwitchStateBackendOnResume stops a running-sum job with a savepoint
// or cancels it after retained checkpoints, and resumes it on the other
// state backend each time: heap Reduce results, Pebble full snapshots and
// Pebble incremental checkpoints all restore into either backend.
func TestSwitchStateBackendOnResume(t *testing.T) {
	out, savepoints, checkpoints := t.TempDir(), t.TempDir(), t.TempDir()
	ctx := context.Background()
	run := func(backend, from string, p int, viaCheckpoint bool) string {
		env := endlessSums(t, out, p)
		for _, kv := range [][2]string{{"state.backend.type", backend}, {"io.tmp.dirs", t.TempDir()},
			{"state.checkpoints.dir", checkpoints}, {"execution.checkpointing.interval", "20 ms"},
			{"execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"}} {
			if err := env.Config().Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		if from != "" {
			env.RestoreFrom(from, false)
		}
		job, err := env.ExecuteAsync(ctx, backend)
		if err != nil {
			t.Fatal(err)
		}
		waitForSource(t, job, 2000)
		if viaCheckpoint {
			// Cancelled after retained checkpoints: output after the
			// latest one stays uncommitted, and the resumed run commits
			// what that checkpoint covers.
			want := job.CompletedCheckpoints() + 2
			deadline := time.Now().Add(20 * time.Second)
			for job.CompletedCheckpoints() < want {
				if time.Now().After(deadline) {
					t.Fatalf("%d checkpoints in 20 s", job.CompletedCheckpoints())
				}
				time.Sleep(time.Millisecond)
			}
			job.Cancel()
			_ = job.Wait()
			return job.LatestCheckpoint()
		}
		sp, err := job.StopWithSavepoint(ctx, savepoints, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Wait(); err != nil {
			t.Fatal(err)
		}
		return sp
	}
	from := run("hashmap", "", 2, false)
	from = run("pebble", from, 2, false)
	from = run("hashmap", from, 3, false)
	from = run("pebble", from, 2, true)
	run("hashmap", from, 2, false)
	checkRunningSumsPrefix(t, out)
}
