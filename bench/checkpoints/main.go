// Command checkpoints measures what checkpoints cost.
//
//	go run ./bench/checkpoints overhead [--records N] [--keys K] [--backend hashmap|pebble] [--interval 1s] [--runs R]
//	go run ./bench/checkpoints pebble [--gib 1] [--checkpoints 4] [--dir DIR]
//	go run ./bench/checkpoints checksums [--backend pebble|hashmap] [--gib 1] [--keys 4000000] [--runs 5]
//
// overhead runs a keyed running count (generator → keyBy → count in keyed
// state → blackhole) with and without periodic checkpoints to a
// directory, alternating, and prints the median and min–max throughput of
// each and their ratio, by wall clock and per core.
//
// pebble builds about --gib GiB of incompressible Pebble state, then
// takes incremental checkpoints while a few keys change, then full
// checkpoints (state.backend.incremental=false), and finally restores the
// last checkpoint into a new job; it prints each checkpoint's duration,
// full size and checkpointed size, and the time until the restored job
// processed its first record.
//
// checksums measures the cost of the checkpoint files' checksums: the
// duration of a full checkpoint and of its restore, with checksums and
// without, alternating child processes (checksums.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/state"
	"github.com/weirproject/weir/stream"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: checkpoints overhead|pebble|checksums [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "overhead":
		err = overhead(os.Args[2:])
	case "pebble":
		err = pebbleSizes(os.Args[2:])
	case "checksums":
		err = checksums(os.Args[2:])
	case "checksums-run":
		err = checksumsRun(os.Args[2:])
	default:
		err = fmt.Errorf("unknown benchmark %q: overhead, pebble or checksums", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkpoints:", err)
		os.Exit(1)
	}
}

func newEnv(kv ...string) (*stream.Environment, error) {
	cfg := config.New()
	config.Parallelism.Set(cfg, 1)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			return nil, err
		}
	}
	return stream.NewEnvironmentWithConfig(cfg), nil
}

// counter keeps a running count per key in keyed state and emits it.
type counter struct{ n state.ValueState[int64] }

func (c *counter) Open(ctx *stream.KeyedContext[int64]) error {
	c.n = state.Value[int64](ctx.State(), "count", 0)
	return nil
}

func (c *counter) ProcessElement(_ int64, _ *stream.KeyedContext[int64], out stream.Collector[int64]) error {
	v, _ := c.n.Value()
	v++
	c.n.Update(v)
	out.Collect(v)
	return nil
}

func overhead(args []string) error {
	fs := flag.NewFlagSet("overhead", flag.ExitOnError)
	records := fs.Int64("records", 20_000_000, "records per run")
	keys := fs.Int64("keys", 100_000, "distinct keys")
	backend := fs.String("backend", "hashmap", "state backend: hashmap or pebble")
	interval := fs.Duration("interval", time.Second, "checkpoint interval of the checkpointed runs")
	runs := fs.Int("runs", 5, "runs of each kind")
	_ = fs.Parse(args)

	// run returns the records per second by wall-clock and by CPU time.
	run := func(checkpoint bool) (float64, float64, int, error) {
		dir, err := os.MkdirTemp("", "weir-bench-checkpoints-")
		if err != nil {
			return 0, 0, 0, err
		}
		defer os.RemoveAll(dir)
		kv := []string{"state.backend.type", *backend, "io.tmp.dirs", dir}
		if checkpoint {
			kv = append(kv, "execution.checkpointing.interval", interval.String(), "state.checkpoints.dir", filepath.Join(dir, "checkpoints"))
		}
		env, err := newEnv(kv...)
		if err != nil {
			return 0, 0, 0, err
		}
		n, k := *records, *keys
		src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: n, Fn: func(i int64) int64 { return i % k }}, "numbers")
		counts := stream.KeyedProcess[int64, int64, int64](stream.KeyBy(src, func(i int64) int64 { return i }), &counter{})
		sink := nexmark.ToBlackhole(counts)
		runtime.GC()
		start, cpu := time.Now(), benchstat.ProcessCPU()
		job, err := env.ExecuteAsync(context.Background(), "running-count")
		if err != nil {
			return 0, 0, 0, err
		}
		if err := job.Wait(); err != nil {
			return 0, 0, 0, err
		}
		wall, used := time.Since(start).Seconds(), (benchstat.ProcessCPU() - cpu).Seconds()
		if sink.Count() != n {
			return 0, 0, 0, fmt.Errorf("the sink got %d records, want %d", sink.Count(), n)
		}
		return float64(n) / wall, float64(n) / used, job.CompletedCheckpoints(), nil
	}
	var plain, checked, plainCPU, checkedCPU []float64
	var checkpoints []float64
	for r := range *runs {
		p, pc, _, err := run(false)
		if err != nil {
			return err
		}
		c, cc, cps, err := run(true)
		if err != nil {
			return err
		}
		plain, checked = append(plain, p), append(checked, c)
		plainCPU, checkedCPU = append(plainCPU, pc), append(checkedCPU, cc)
		checkpoints = append(checkpoints, float64(cps))
		fmt.Printf("run %d: no checkpoints %.2f M records/s (%.2f M per core), checkpoint every %v %.2f M records/s (%.2f M per core, %d checkpoints)\n",
			r+1, p/1e6, pc/1e6, *interval, c/1e6, cc/1e6, cps)
	}
	m := func(xs []float64) string {
		s := benchstat.Of(xs)
		s.Median, s.Min, s.Max = s.Median/1e6, s.Min/1e6, s.Max/1e6
		return s.Format("%.2f")
	}
	fmt.Printf("backend %s, %d records, %d keys, median (min–max) of %d runs:\n", *backend, *records, *keys, *runs)
	fmt.Printf("  no checkpoints        %s M records/s, %s M records/s per core\n", m(plain), m(plainCPU))
	fmt.Printf("  checkpoint every %v  %s M records/s, %s M records/s per core, %s checkpoints\n", *interval, m(checked), m(checkedCPU), benchstat.Of(checkpoints).Format("%.0f"))
	fmt.Printf("  ratio                 %s, per core %s\n", benchstat.Of(benchstat.Ratios(checked, plain)), benchstat.Of(benchstat.Ratios(checkedCPU, plainCPU)))
	return nil
}

// bigValue is a random value of key k, so that the store cannot compress
// the state away.
func bigValue(rng *rand.Rand) string {
	b := make([]byte, 400)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

// writer stores a value per key: the first pass writes every key, after
// which the source changes a few random keys at a limited rate.
type writer struct {
	v   state.ValueState[string]
	rng *rand.Rand
}

func (w *writer) Open(ctx *stream.KeyedContext[int64]) error {
	w.v = state.Value[string](ctx.State(), "v", "")
	w.rng = rand.New(rand.NewPCG(1, 2))
	return nil
}

func (w *writer) ProcessElement(_ int64, _ *stream.KeyedContext[int64], _ stream.Collector[int64]) error {
	w.v.Update(bigValue(w.rng))
	return nil
}

func pebbleSizes(args []string) error {
	fs := flag.NewFlagSet("pebble", flag.ExitOnError)
	gib := fs.Float64("gib", 1, "GiB of state to build")
	dirFlag := fs.String("dir", "", "working directory (default: a new temporary one)")
	checkpoints := fs.Int("checkpoints", 4, "checkpoints (every 15 s) to take of each kind")
	_ = fs.Parse(args)
	dir, cleanup, err := workDir(*dirFlag, "weir-bench-pebble-")
	if err != nil {
		return err
	}
	defer cleanup()
	keys := int64(*gib * (1 << 30) / 420)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "kind\tcheckpoint\tduration\tfull size\tcheckpointed size\t")

	var last string
	for _, incremental := range []bool{true, false} {
		kind := "incremental"
		if !incremental {
			kind = "full"
		}
		cpDir := filepath.Join(dir, kind)
		env, err := newEnv("state.backend.type", "pebble", "io.tmp.dirs", filepath.Join(dir, "tmp"),
			"state.checkpoints.dir", cpDir, "state.backend.incremental", fmt.Sprint(incremental),
			"execution.checkpointing.interval", "15 s",
			"execution.checkpointing.timeout", "30 min",
			"execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
		if err != nil {
			return err
		}
		// Every key once, then 1000 random keys per second.
		src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
			if i < keys {
				return i
			}
			time.Sleep(time.Millisecond)
			return rand.Int64N(keys)
		}}, "keys")
		nexmark.ToBlackhole(stream.KeyedProcess[int64, int64, int64](stream.KeyBy(src, func(i int64) int64 { return i }), &writer{}).Name("writer").UID("writer"))
		start := time.Now()
		job, err := env.ExecuteAsync(context.Background(), "pebble-"+kind)
		if err != nil {
			return err
		}
		for sourceRead(job) < keys {
			select {
			case <-job.Done():
				return job.Wait()
			case <-time.After(100 * time.Millisecond):
			}
		}
		fmt.Fprintf(os.Stderr, "%s: %d keys written in %v\n", kind, keys, time.Since(start).Round(time.Millisecond))
		for job.CompletedCheckpoints() < *checkpoints {
			select {
			case <-job.Done():
				return job.Wait()
			case <-time.After(100 * time.Millisecond):
			}
		}
		for _, h := range job.CheckpointHistory() {
			fmt.Fprintf(w, "%s\t%d\t%v\t%s\t%s\t\n", kind, h.ID, h.Duration.Round(time.Millisecond), mib(h.FullSize), mib(h.CheckpointedSize))
		}
		last = job.LatestCheckpoint()
		job.Cancel()
		_ = job.Wait()
	}
	w.Flush()

	// Restore the last (full) checkpoint into a new job.
	env, err := newEnv("state.backend.type", "pebble", "io.tmp.dirs", filepath.Join(dir, "tmp"))
	if err != nil {
		return err
	}
	env.RestoreFrom(last, false)
	src := stream.FromSource[int64](env, &stream.Generator[int64]{Count: -1, Fn: func(i int64) int64 {
		time.Sleep(time.Millisecond)
		return rand.Int64N(keys)
	}}, "keys")
	nexmark.ToBlackhole(stream.KeyedProcess[int64, int64, int64](stream.KeyBy(src, func(i int64) int64 { return i }), &writer{}).Name("writer").UID("writer"))
	start := time.Now()
	job, err := env.ExecuteAsync(context.Background(), "pebble-restore")
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
	fmt.Printf("restore of %s: first record processed after %v\n", last, time.Since(start).Round(time.Millisecond))
	job.Cancel()
	_ = job.Wait()
	return nil
}

// workDir is dir, or a new temporary directory that cleanup removes.
func workDir(dir, prefix string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func sourceRead(job *stream.JobClient) int64 {
	var n int64
	for _, m := range job.Metrics() {
		if strings.HasPrefix(m.Task, "Source: keys") {
			n += m.RecordsIn
		}
	}
	return n
}

// processed reports whether the keyed operator processed a record.
func processed(job *stream.JobClient) bool {
	for _, m := range job.Metrics() {
		if strings.Contains(m.Task, "writer") && m.RecordsIn > 0 {
			return true
		}
	}
	return false
}
