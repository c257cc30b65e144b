package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

// checksums measures what the checksums of checkpoint files (issue 31)
// cost: a full checkpoint of about 1 GiB of Pebble state and of 4 M keys
// of heap keyed state, and the restore of each, with checksums and
// without (WEIR_BENCH_NO_CHECKSUMS, which writes checkpoints of format 0).
// The format is fixed when the process starts, so each run is a child
// process; runs alternate between the two, --runs of each.
func checksums(args []string) error {
	fs := flag.NewFlagSet("checksums", flag.ExitOnError)
	backend := fs.String("backend", "pebble", "state backend: pebble (--gib of 400-byte values) or hashmap (--keys counts)")
	gib := fs.Float64("gib", 1, "GiB of Pebble state")
	keys := fs.Int64("keys", 4_000_000, "keys of heap state")
	runs := fs.Int("runs", 5, "runs with and without checksums each")
	dirFlag := fs.String("dir", "", "working directory (default: a new temporary one)")
	_ = fs.Parse(args)
	dir, cleanup, err := workDir(*dirFlag, "weir-bench-checksums-")
	if err != nil {
		return err
	}
	defer cleanup()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var results [2][]checksumRun
	for r := range *runs {
		// ABBA order, and the previous run's dirty pages written back
		// before each: the run after another that wrote 1 GiB pays for
		// its writeback otherwise.
		order := []bool{false, true}
		if r%2 == 1 {
			order = []bool{true, false}
		}
		for _, off := range order {
			i := 0
			if off {
				i = 1
			}
			syscall.Sync()
			runDir := filepath.Join(dir, fmt.Sprintf("run-%d-%d", r, i))
			cmd := exec.Command(self, "checksums-run", "--backend", *backend, "--gib", fmt.Sprint(*gib), "--keys", fmt.Sprint(*keys), "--dir", runDir)
			cmd.Env = os.Environ()
			if off {
				cmd.Env = append(cmd.Env, "WEIR_BENCH_NO_CHECKSUMS=1")
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			err := cmd.Run()
			_ = os.RemoveAll(runDir)
			if err != nil {
				return fmt.Errorf("run %d: %w", r+1, err)
			}
			var res checksumRun
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				return fmt.Errorf("run %d: %q: %w", r+1, out.String(), err)
			}
			results[i] = append(results[i], res)
			fmt.Printf("run %d, checksums %-3s: checkpoint %v (%s), restore %v\n", r+1, map[bool]string{false: "on", true: "off"}[off],
				res.Checkpoint.Round(time.Millisecond), mib(res.Size), res.Restore.Round(time.Millisecond))
		}
	}
	col := func(rs []checksumRun, f func(checksumRun) time.Duration) []float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, f(r).Seconds())
		}
		return xs
	}
	cp := func(r checksumRun) time.Duration { return r.Checkpoint }
	rs := func(r checksumRun) time.Duration { return r.Restore }
	on, off := results[0], results[1]
	fmt.Printf("%s, full checkpoint of %s; median (min–max) of %d runs, seconds:\n", *backend, mib(on[0].Size), *runs)
	fmt.Printf("  checkpoint: checksums %s, none %s, ratio %s\n", benchstat.Of(col(on, cp)).Format("%.2f"), benchstat.Of(col(off, cp)).Format("%.2f"),
		benchstat.Of(benchstat.Ratios(col(on, cp), col(off, cp))))
	fmt.Printf("  restore:    checksums %s, none %s, ratio %s\n", benchstat.Of(col(on, rs)).Format("%.2f"), benchstat.Of(col(off, rs)).Format("%.2f"),
		benchstat.Of(benchstat.Ratios(col(on, rs), col(off, rs))))
	return nil
}

// checksumRun is what one child process measured.
type checksumRun struct {
	// Checkpoint is the duration of the first full checkpoint triggered
	// after all keys were written; Size its full size.
	Checkpoint time.Duration
	Size       int64
	// Restore is the time from submitting a job restored from that
	// checkpoint until its keyed operator processed a record.
	Restore time.Duration
}

// checksumsRun is one child process of checksums: it builds the state,
// takes a full checkpoint of it, restores it, and prints a checksumRun.
func checksumsRun(args []string) error {
	fs := flag.NewFlagSet("checksums-run", flag.ExitOnError)
	backend := fs.String("backend", "pebble", "")
	gib := fs.Float64("gib", 1, "")
	keyCount := fs.Int64("keys", 4_000_000, "")
	dir := fs.String("dir", "", "")
	_ = fs.Parse(args)
	keys := *keyCount
	if *backend == "pebble" {
		keys = int64(*gib * (1 << 30) / 420)
	}
	// build adds the job's operators: every key once, then a record a
	// millisecond, so that the state stays as built.
	build := func(env *stream.Environment, fill bool) {
		src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
			if fill && i < keys {
				return i
			}
			time.Sleep(time.Millisecond)
			return rand.Int64N(keys)
		}}, "keys")
		keyed := stream.KeyBy(src, func(i int64) int64 { return i })
		if *backend == "pebble" {
			nexmark.ToBlackhole(stream.KeyedProcess[int64, int64, int64](keyed, &writer{}).Name("writer").UID("writer"))
		} else {
			nexmark.ToBlackhole(stream.KeyedProcess[int64, int64, int64](keyed, &counter{}).Name("writer").UID("writer"))
		}
	}
	env, err := newEnv("state.backend.type", *backend, "io.tmp.dirs", filepath.Join(*dir, "tmp"),
		"state.checkpoints.dir", filepath.Join(*dir, "chk"), "state.backend.incremental", "false",
		"execution.checkpointing.interval", "2 s",
		"execution.checkpointing.timeout", "30 min",
		"execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
	if err != nil {
		return err
	}
	build(env, true)
	job, err := env.ExecuteAsync(context.Background(), "checksums-"+*backend)
	if err != nil {
		return err
	}
	for sourceRead(job) < keys+1 {
		select {
		case <-job.Done():
			return job.Wait()
		case <-time.After(50 * time.Millisecond):
		}
	}
	built := time.Now()
	var res checksumRun
	for res.Checkpoint == 0 {
		for _, h := range job.CheckpointHistory() {
			if h.TriggeredAt.After(built) {
				res.Checkpoint, res.Size = h.Duration, h.FullSize
				break
			}
		}
		select {
		case <-job.Done():
			return job.Wait()
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Checkpoints are retained one at a time: stop before the next.
	job.Cancel()
	_ = job.Wait()
	last := job.LatestCheckpoint()

	env, err = newEnv("state.backend.type", *backend, "io.tmp.dirs", filepath.Join(*dir, "tmp"))
	if err != nil {
		return err
	}
	env.RestoreFrom(last, false)
	build(env, false)
	start := time.Now()
	job, err = env.ExecuteAsync(context.Background(), "checksums-restore")
	if err != nil {
		return err
	}
	for !processed(job) {
		select {
		case <-job.Done():
			return job.Wait()
		case <-time.After(time.Millisecond):
		}
	}
	res.Restore = time.Since(start)
	job.Cancel()
	_ = job.Wait()
	return json.NewEncoder(os.Stdout).Encode(res)
}
