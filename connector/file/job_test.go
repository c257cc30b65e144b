package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/connector/format/jsonl"
	"github.com/weirproject/weir/stream"
)

func newEnv(t testing.TB, parallelism int, kv ...string) *stream.Environment {
	t.Helper()
	cfg := config.New()
	config.Parallelism.Set(cfg, parallelism)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return stream.NewEnvironmentWithConfig(cfg)
}

// failOnce passes records on and fails attempts below failures once they
// have seen at least after records and ready() holds.
func failOnce(s *stream.Stream[rec], failures int, after int64, ready func() bool) *stream.Stream[rec] {
	var seen [16]atomic.Int64
	return stream.Process(s, stream.ProcessFunc[rec, rec](func(r rec, ctx *stream.Context, out stream.Collector[rec]) error {
		a := ctx.Attempt()
		if a < failures && seen[a].Add(1) >= after && ready() {
			return fmt.Errorf("injected failure in attempt %d", a)
		}
		out.Collect(r)
		return nil
	})).UID("fail")
}

// TestPartSinkExactlyOnceAfterFailures: files that stay open over
// checkpoints (rolling on size only) and fail twice still publish every
// record once.
func TestPartSinkExactlyOnceAfterFailures(t *testing.T) {
	const n = 20_000
	for _, failures := range []int{0, 2} {
		dir := t.TempDir()
		env := newEnv(t, 2,
			"execution.checkpointing.interval", "10 ms",
			"restart-strategy.type", "fixed-delay",
			"restart-strategy.fixed-delay.delay", "10 ms",
			"taskmanager.network.buffer-records", "64")
		src := stream.FromSource[rec](env, &stream.Generator[rec]{Count: n, Fn: func(i int64) rec {
			if i%200 == 0 {
				time.Sleep(time.Millisecond) // several checkpoints in a run
			}
			return recs(i, i+1)[0]
		}}, "numbers").UID("numbers")
		var job atomic.Pointer[stream.JobClient]
		out := failOnce(src.Rebalance(), failures, 3000, func() bool {
			j := job.Load()
			return j != nil && j.CompletedCheckpoints() > 2
		})
		stream.SinkTo(out, file.Sink[rec](dir, jsonl.Format[rec]{}).RollOnSize(20_000), "files").UID("files")
		j, err := env.ExecuteAsync(context.Background(), "parts")
		if err != nil {
			t.Fatal(err)
		}
		job.Store(j)
		if err := j.Wait(); err != nil {
			t.Fatal(err)
		}
		if got, want := byID(readRecs(t, dir)), recs(0, n); !slices.Equal(got, want) {
			t.Fatalf("failures=%d: the files hold %d records, want %d (restarts %d)", failures, len(got), len(want), j.Restarts())
		}
		if j.Restarts() != failures {
			t.Fatalf("%d restarts, want %d", j.Restarts(), failures)
		}
		parts, _ := published(t, dir)
		t.Logf("failures=%d: %d part files, %d checkpoints", failures, len(parts), j.CompletedCheckpoints())
	}
}

// writeAtomically writes a file as well-behaved producers do: under a
// hidden name, then renamed, so that a monitor sees it whole or not at all.
func writeAtomically(t testing.TB, dir, name string, rs []rec) {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(lineOf(r))
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Error(err)
	}
}

// TestMonitoredDirectoryExactlyOnce: a monitoring source reads files that
// appear while the job runs; the job fails once after checkpoints
// completed and resumes from the last one; the exactly-once sink ends with
// every record of every file once.
func TestMonitoredDirectoryExactlyOnce(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	const files, per = 16, 250
	want := recs(0, files*per)
	for i := range 3 { // there before the job starts
		writeAtomically(t, filepath.Join(in), fmt.Sprintf("in-%02d.jsonl", i), want[i*per:(i+1)*per])
	}
	env := newEnv(t, 2,
		"execution.checkpointing.interval", "10 ms",
		"restart-strategy.type", "fixed-delay",
		"restart-strategy.fixed-delay.delay", "10 ms",
		"taskmanager.network.buffer-records", "64")
	src := stream.FromSource[rec](env, file.Source[rec](jsonl.Format[rec]{}, in).MonitorInterval(10*time.Millisecond), "monitor").UID("monitor")
	var job atomic.Pointer[stream.JobClient]
	failed := failOnce(src, 1, 4*per/2, func() bool {
		j := job.Load()
		return j != nil && j.CompletedCheckpoints() > 2
	})
	stream.SinkTo(failed, file.Sink[rec](out, jsonl.Format[rec]{}).RollOnCheckpoint(true), "files").UID("files")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := env.ExecuteAsync(ctx, "monitor")
	if err != nil {
		t.Fatal(err)
	}
	job.Store(j)

	// The rest arrive while the job runs, also in a subdirectory.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 3; i < files; i++ {
			time.Sleep(15 * time.Millisecond)
			dir := in
			if i%4 == 0 {
				dir = filepath.Join(in, "sub")
				os.MkdirAll(dir, 0o755)
			}
			writeAtomically(t, dir, fmt.Sprintf("in-%02d.jsonl", i), want[i*per:(i+1)*per])
		}
	}()
	<-done
	deadline := time.Now().Add(30 * time.Second)
	var got []rec
	for time.Now().Before(deadline) {
		if got = readRecs(t, out); len(got) >= len(want) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A little longer: a duplicate would show now.
	time.Sleep(100 * time.Millisecond)
	read := int64(0)
	for _, m := range j.Metrics() {
		if strings.HasPrefix(m.Task, "Source: monitor") {
			read += m.RecordsIn
		}
	}
	cancel()
	if err := j.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("job ended with %v, want it cancelled", err)
	}
	if got = byID(readRecs(t, out)); !slices.Equal(got, want) {
		t.Fatalf("the sink published %d records, want the %d of the files once each (restarts %d)", len(got), len(want), j.Restarts())
	}
	if j.Restarts() != 1 {
		t.Fatalf("%d restarts, want 1", j.Restarts())
	}
	// The restored attempt read only what the checkpoint had not covered.
	if read == 0 || read >= int64(len(want)) {
		t.Fatalf("the last attempt read %d records of %d; it did not resume from the checkpoint", read, len(want))
	}
	t.Logf("%d checkpoints; the last attempt read %d of %d records", j.CompletedCheckpoints(), read, len(want))
}
