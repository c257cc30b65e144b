package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
)

type nexmarkOptions struct {
	query       string
	events      int64
	parallelism int
	rate        int64
	seed        uint64
	baseline    bool
	pregenerate bool
	backend     string
	checkpoint  time.Duration
	defines     []string
	output      string
	loopOutput  string
	cpuProfile  string
	memProfile  string
	runs        int
	warmup      int
	jobManager  string
	// fromSavepoint and allowNonRestored are set by a TaskManager that
	// restarts the query from its latest checkpoint (--jobmanager).
	fromSavepoint    string
	allowNonRestored bool
	clusterFlags     clusterFlags
}

func newNexmarkCommand() *cobra.Command {
	var opts nexmarkOptions
	cmd := &cobra.Command{
		Use:   "nexmark --query NAME [flags]",
		Short: "Run a Nexmark benchmark query on the local mini cluster",
		Long: `Run a query of the Nexmark benchmark (an online auction's people, auctions
and bids) on the local mini cluster, over events generated in the source,
into a sink that counts and drops the results, and print the throughput,
the CPU time and the peak memory.

With --baseline, a hand-written single-goroutine loop then computes the same
result over the same events, and weir prints the engine's throughput
relative to the loop's, by wall-clock time and per core (CPU time). Both
sides hash every result, and the command fails unless the engine's results
equal the loop's (their number and an order-independent hash of their
contents). --runs N repeats engine and loop alternately N times and prints
the median and min–max of the runs; ratios are taken run by run. --output FILE writes the engine's results to FILE
and --baseline-output FILE the loop's, as JSON lines, one result a line;
the results written are compared as those not written are.

Queries: ` + queryList() + `. With --pregenerate the events are generated in
memory first, so that the timing leaves the generator out.

With --jobmanager HOST:PORT the query runs on a cluster instead: the weir
executable is uploaded as the job's artifact and a TaskManager runs it;
weir follows the job and prints its throughput over the job's run time.`,
		Example: `  weir nexmark --query q1 --events 1000000
  weir nexmark --query q3 --events 10000000 --parallelism 4 --baseline
  weir nexmark generate --events 1000 --output events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if opts.jobManager != "" {
				return runNexmarkOnCluster(cmd, opts)
			}
			return runNexmark(cmd.Context(), cmd.OutOrStdout(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.query, "query", "q", "", "the query to run: "+queryList())
	f.Int64Var(&opts.events, "events", 1_000_000, "number of events to generate")
	f.IntVarP(&opts.parallelism, "parallelism", "p", 1, "parallelism of the job's operators")
	f.Int64Var(&opts.rate, "rate", nexmark.DefaultConfig().FirstEventRate, "events per second of event time (the generator's firstEventRate)")
	f.Uint64Var(&opts.seed, "seed", nexmark.DefaultConfig().Seed, "seed of the generator")
	f.BoolVar(&opts.baseline, "baseline", false, "also run a single-goroutine loop computing the same result and print the ratio")
	f.BoolVar(&opts.pregenerate, "pregenerate", false, "generate the events in memory before timing, so that the figures leave out the generator")
	f.StringVar(&opts.backend, "state-backend", "hashmap", "keyed state backend: hashmap or pebble (state.backend.type)")
	f.DurationVar(&opts.checkpoint, "checkpoint-interval", 0, "take checkpoints at this interval (execution.checkpointing.interval); 0 takes none")
	f.StringArrayVarP(&opts.defines, "define", "D", nil, "set a configuration option, key=value (repeatable)")
	f.IntVar(&opts.runs, "runs", 1, "run the query (and the loop) `N` times, alternately, and print the median and min–max of the runs")
	f.IntVar(&opts.warmup, "warmup", 0, "first run the query (and the loop) `N` times without counting them: a process's first run also pays for growing its heap")
	f.StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the engine's run to `file` (for go tool pprof)")
	f.StringVar(&opts.memProfile, "memprofile", "", "write the allocations of the process up to the end of the engine's run to `file` (go tool pprof -sample_index=alloc_space)")
	f.StringVar(&opts.output, "output", "", "also write the engine's results as JSON lines to `file`")
	f.StringVar(&opts.loopOutput, "baseline-output", "", "write the baseline loop's results as JSON lines to `file` (implies --baseline)")
	f.StringVar(&opts.jobManager, "jobmanager", "", "run the query on the cluster whose JobManager's REST API is at `HOST:PORT` instead of the local mini cluster")
	f.StringVar(&opts.clusterFlags.token, "token", "", "the cluster's security token, with --jobmanager (prefer WEIR_TOKEN)")
	f.StringVar(&opts.fromSavepoint, "from-savepoint", "", "start from a retained checkpoint or savepoint (set by a TaskManager restarting the query)")
	f.BoolVar(&opts.allowNonRestored, "allow-non-restored-state", false, "with --from-savepoint, accept state no operator claims")
	_ = f.MarkHidden("from-savepoint")
	_ = f.MarkHidden("allow-non-restored-state")
	cmd.AddCommand(newNexmarkGenerateCommand())
	return cmd
}

func queryList() string { return strings.Join(nexmark.QueryNames(), ", ") }

func (o *nexmarkOptions) validate(cmd *cobra.Command) error {
	if o.query == "" {
		return usageErrorf(cmd, "nexmark needs --query: one of %s", queryList())
	}
	if _, ok := nexmark.Queries[strings.ToLower(o.query)]; !ok {
		return usageErrorf(cmd, "unknown query %q: want one of %s", o.query, queryList())
	}
	o.query = strings.ToLower(o.query)
	if o.loopOutput != "" {
		o.baseline = true
	}
	if o.runs < 1 {
		return usageErrorf(cmd, "--runs %d must be at least 1", o.runs)
	}
	if o.warmup < 0 {
		return usageErrorf(cmd, "--warmup %d must not be negative", o.warmup)
	}
	if o.runs > 1 && (o.output != "" || o.loopOutput != "") {
		return usageErrorf(cmd, "--output and --baseline-output write one run's results: use them with --runs 1")
	}
	return validateGenerator(cmd, o.events, o.rate, o.parallelism)
}

func validateGenerator(cmd *cobra.Command, events, rate int64, parallelism int) error {
	if events < 0 {
		return usageErrorf(cmd, "--events %d must not be negative", events)
	}
	if rate < 1 {
		return usageErrorf(cmd, "--rate %d must be at least 1", rate)
	}
	if parallelism < 1 {
		return usageErrorf(cmd, "--parallelism %d must be at least 1", parallelism)
	}
	return nil
}

func (o *nexmarkOptions) config() nexmark.Config {
	c := nexmark.DefaultConfig()
	c.FirstEventRate = o.rate
	c.Seed = o.seed
	return c
}

// peakHeap samples the bytes of heap objects (live and not yet swept)
// until stop is called, and returns the highest.
func peakHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	read := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			peak = max(peak, sample[0].Value.Uint64())
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		read()
		return peak
	}
}

type measurement struct {
	elapsed time.Duration
	cpu     time.Duration
	results int64
	heap    uint64
	// stateCache is the peak of what the Pebble backends' caches of
	// decoded values held together (their stateCacheBytes gauges), and
	// cacheWork what they did, summed once the job ended.
	stateCache int64
	cacheWork  cacheWork
}

// cacheWork is the Pebble state caches' counts of a run, summed over
// their gauges (state.Metrics), in the order of cacheWorkGauges.
type cacheWork [6]int64

var cacheWorkGauges = [...]string{"stateCacheHits", "stateCacheMisses", "stateCacheReadAhead", "stateCacheWriteBacks", "stateCacheSpilled", "stateCacheSpillReads"}

func (c *cacheWork) add(name string, v int64) {
	if i := slices.Index(cacheWorkGauges[:], name); i >= 0 {
		c[i] += v
	}
}

// watchStateCache samples the job's stateCacheBytes gauges every 50 ms
// until it ends, keeping the peak of their sum in peak: with a cache
// large enough to hold everything, the size of the job's keyed state
// as the cache counts it, to size a cache that it outgrows. Then it
// sums the caches' final counts into work.
func watchStateCache(jc *stream.JobClient, peak *int64, work *cacheWork) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-jc.Done():
			for _, m := range jc.Metrics() {
				for _, g := range m.Gauges {
					work.add(g.Name, g.Value)
				}
			}
			return
		case <-t.C:
		}
		var sum int64
		for _, m := range jc.Metrics() {
			for _, g := range m.Gauges {
				if g.Name == "stateCacheBytes" {
					sum += g.Value
				}
			}
		}
		*peak = max(*peak, sum)
	}
}

func measure(run func() (int64, error)) (measurement, error) {
	goruntime.GC()
	cpu0, _ := nexmark.ProcessUsage()
	stop := peakHeap()
	start := time.Now()
	n, err := run()
	m := measurement{elapsed: time.Since(start), results: n}
	m.heap = stop()
	cpu1, _ := nexmark.ProcessUsage()
	m.cpu = cpu1 - cpu0
	return m, err
}

// environment configures the query's job as the flags say.
func (o nexmarkOptions) environment() (*stream.Environment, error) {
	cfg := config.New()
	config.Parallelism.Set(cfg, o.parallelism)
	settings := [][2]string{{config.StateBackend.Key, o.backend}}
	if o.checkpoint > 0 {
		settings = append(settings, [2]string{config.CheckpointInterval.Key, o.checkpoint.String()})
	}
	for _, d := range o.defines {
		k, v, err := config.ParseDefinition(d)
		if err != nil {
			return nil, err
		}
		settings = append(settings, [2]string{k, v})
	}
	for _, kv := range settings {
		if err := cfg.SetFrom("weir nexmark", kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	env := stream.NewEnvironmentWithConfig(cfg)
	if o.fromSavepoint != "" {
		env.RestoreFrom(o.fromSavepoint, o.allowNonRestored)
	}
	return env, nil
}

func runNexmark(ctx context.Context, w io.Writer, o nexmarkOptions) error {
	q := nexmark.Queries[o.query]
	gen := o.config()
	var events []nexmark.Event
	if o.pregenerate {
		events = nexmark.Generate(gen, o.events)
	}
	var engines, loops []measurement
	var cfg *config.Configuration
	for run := range o.warmup + o.runs {
		counted := run >= o.warmup
		env, err := o.environment()
		if err != nil {
			return err
		}
		cfg = env.Config()
		eng, engDigest, err := runNexmarkEngine(ctx, env, q, gen, events, o, run == o.warmup)
		if err != nil {
			return err
		}
		if counted {
			engines = append(engines, eng)
		}
		if !o.baseline {
			continue
		}
		input := gen.All(o.events)
		if o.pregenerate {
			input = nexmark.Slice(events)
		}
		var loopDigest nexmark.Digest
		loop, err := measure(func() (int64, error) {
			if o.loopOutput != "" {
				return writeFile(o.loopOutput, func(w io.Writer) (int64, error) {
					d, err := q.LoopOutput(input, w)
					loopDigest = d
					return d.Count, err
				})
			}
			loopDigest = q.LoopDigest(input)
			return loopDigest.Count, nil
		})
		if err != nil {
			return fmt.Errorf("nexmark %s: --baseline-output: %w", q.Name, err)
		}
		if counted {
			loops = append(loops, loop)
		}
		switch {
		case loop.results != eng.results && q.WallClock:
		case loop.results != eng.results:
			return fmt.Errorf("nexmark %s: the engine produced %d results, the loop %d", q.Name, eng.results, loop.results)
		case !q.WallClock && loopDigest != engDigest:
			return fmt.Errorf("nexmark %s: the engine's results differ from the loop's: %v against %v", q.Name, engDigest, loopDigest)
		}
	}
	_, maxRSS := nexmark.ProcessUsage()
	n := float64(o.events)
	fmt.Fprintf(w, "query        %s: %s\n", q.Name, q.Description)
	fmt.Fprintf(w, "events       %d (%.1f s of event time at %d events/s), parallelism %d, GOMAXPROCS %d\n",
		o.events, float64(gen.Timestamp(o.events)-gen.BaseTime)/1000, o.rate, o.parallelism, goruntime.GOMAXPROCS(0))
	fmt.Fprintf(w, "state        %s backend, checkpoints %s\n", config.StateBackend.Get(cfg), checkpointsDescription(o.checkpoint))
	if o.pregenerate {
		fmt.Fprintf(w, "input        generated in memory before timing\n")
	}
	if o.runs > 1 {
		fmt.Fprintf(w, "runs         %d; figures are the median (min–max)\n", o.runs)
	}
	if o.warmup > 0 {
		fmt.Fprintf(w, "warm-up      %d run(s) before, not counted\n", o.warmup)
	}
	elapsed, cpu := series(engines)
	fmt.Fprintf(w, "results      %d\n", engines[0].results)
	fmt.Fprintf(w, "elapsed      %s s\n", benchstat.Of(elapsed).Format("%.3f"))
	fmt.Fprintf(w, "throughput   %s events/s\n", rates(n, elapsed))
	fmt.Fprintf(w, "cpu          %s s (%s cores), %s events/s per core\n",
		benchstat.Of(cpu).Format("%.3f"), benchstat.Of(benchstat.Ratios(cpu, elapsed)).Format("%.2f"), rates(n, cpu))
	fmt.Fprintf(w, "memory       peak heap %s, max RSS %s\n", mib(slices.MaxFunc(engines, byHeap).heap), mib(uint64(maxRSS)))
	if c := slices.MaxFunc(engines, func(a, b measurement) int { return cmp.Compare(a.stateCache, b.stateCache) }).stateCache; c > 0 {
		fmt.Fprintf(w, "state cache  peak %s (Pebble's decoded values, as state.backend.pebble.cache-size counts them)\n", mib(uint64(c)))
		var counts [len(cacheWork{})]any
		for i := range counts {
			xs := make([]float64, len(engines))
			for j, e := range engines {
				xs[j] = float64(e.cacheWork[i])
			}
			counts[i] = benchstat.Of(xs).Format("%.0f")
		}
		fmt.Fprintf(w, "cache work   hits %s, misses %s, read ahead %s, write-backs %s, spilled %s, read from the spill %s\n", counts[:]...)
	}
	if !o.baseline {
		return nil
	}
	loopElapsed, loopCPU := series(loops)
	fmt.Fprintf(w, "loop         %s s, %s events/s, %s events/s per core (%s cores), peak heap %s\n",
		benchstat.Of(loopElapsed).Format("%.3f"), rates(n, loopElapsed), rates(n, loopCPU),
		benchstat.Of(benchstat.Ratios(loopCPU, loopElapsed)).Format("%.2f"), mib(slices.MaxFunc(loops, byHeap).heap))
	fmt.Fprintf(w, "engine/loop  throughput %s, per core %s\n",
		benchstat.Of(benchstat.Ratios(loopElapsed, elapsed)), benchstat.Of(benchstat.Ratios(loopCPU, cpu)))
	switch {
	case q.WallClock:
		fmt.Fprintf(w, "note         %s windows by processing time: the engine and the loop need not find the same windows, so their results are not compared\n", q.Name)
	default:
		fmt.Fprintf(w, "checked      the engine's results equal the loop's (count and order-independent hash)\n")
	}
	return nil
}

// runNexmarkEngine runs the query once on env and measures it. With
// --baseline it sends the results into a digest, to be compared with the
// loop's; profile says to honour --cpuprofile and --output (the first
// run only).
func runNexmarkEngine(ctx context.Context, env *stream.Environment, q nexmark.Query, gen nexmark.Config, events []nexmark.Event, o nexmarkOptions, first bool) (measurement, nexmark.Digest, error) {
	var src *stream.Stream[nexmark.Event]
	if events != nil {
		src = nexmark.EventsOf(env, events)
	} else {
		src = nexmark.Events(env, gen, o.events)
	}
	var parts string // the sink's directory, when --output asks for a file
	var cachePeak int64
	var work cacheWork
	var results func() int64
	var digest func() nexmark.Digest
	switch {
	case o.output != "" && first:
		var err error
		parts, err = os.MkdirTemp(filepath.Dir(o.output), "."+filepath.Base(o.output)+".parts-")
		if err != nil {
			return measurement{}, nexmark.Digest{}, err
		}
		defer os.RemoveAll(parts)
		// The results written are digested too: with --baseline they are
		// compared with the loop's as without --output.
		digest = q.AttachOutput(src, parts)
		results = func() int64 { return digest().Count }
	case o.baseline:
		digest = q.AttachDigest(src)
		results = func() int64 { return digest().Count }
	default:
		results = q.Attach(src)
	}
	if o.cpuProfile != "" && first {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return measurement{}, nexmark.Digest{}, fmt.Errorf("nexmark: --cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return measurement{}, nexmark.Digest{}, fmt.Errorf("nexmark: --cpuprofile: %w", err)
		}
	}
	eng, err := measure(func() (int64, error) {
		jc, err := env.ExecuteAsync(ctx, "nexmark-"+q.Name)
		if err != nil {
			return 0, err
		}
		watchStateCache(jc, &cachePeak, &work)
		return results(), jc.Wait()
	})
	eng.stateCache, eng.cacheWork = cachePeak, work
	if o.cpuProfile != "" && first {
		pprof.StopCPUProfile()
	}
	if o.memProfile != "" && first {
		if err := benchstat.WriteAllocProfile(o.memProfile); err != nil {
			return eng, nexmark.Digest{}, fmt.Errorf("nexmark: --memprofile: %w", err)
		}
	}
	if err != nil {
		return eng, nexmark.Digest{}, fmt.Errorf("nexmark %s: %w", q.Name, err)
	}
	if parts != "" {
		if err := concatParts(parts, o.output); err != nil {
			return eng, nexmark.Digest{}, fmt.Errorf("nexmark %s: --output: %w", q.Name, err)
		}
	}
	var d nexmark.Digest
	if digest != nil {
		d = digest()
	}
	return eng, d, nil
}

// series returns the runs' elapsed and CPU seconds.
func series(ms []measurement) (elapsed, cpu []float64) {
	for _, m := range ms {
		elapsed = append(elapsed, m.elapsed.Seconds())
		cpu = append(cpu, m.cpu.Seconds())
	}
	return elapsed, cpu
}

func byHeap(a, b measurement) int { return cmp.Compare(a.heap, b.heap) }

// rates formats n events over each run's seconds as events/s: the median
// and, for several runs, the range.
func rates(n float64, seconds []float64) string {
	s := benchstat.Of(benchstat.Scale(n, seconds))
	if s.N <= 1 {
		return thousands(int64(s.Median))
	}
	return fmt.Sprintf("%s (%s–%s)", thousands(int64(s.Median)), thousands(int64(s.Min)), thousands(int64(s.Max)))
}

// concatParts writes the part files that the text file sink committed
// under dir into one file, in the order of file.ReadLines (subtask order),
// without holding them in memory.
func concatParts(dir, path string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type part struct {
		name    string
		subtask int // -1 if the name has no number after "part-"
	}
	var parts []part
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "part-")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 {
			n = -1
		}
		parts = append(parts, part{e.Name(), n})
	}
	slices.SortFunc(parts, func(a, b part) int {
		if (a.subtask < 0) != (b.subtask < 0) {
			return cmp.Compare(b.subtask, a.subtask)
		}
		return cmp.Or(cmp.Compare(a.subtask, b.subtask), strings.Compare(a.name, b.name))
	})
	_, err = writeFile(path, func(w io.Writer) (int64, error) {
		for _, p := range parts {
			f, err := os.Open(filepath.Join(dir, p.name))
			if err != nil {
				return 0, err
			}
			_, err = io.Copy(w, f)
			f.Close()
			if err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	return err
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) (int64, error)) (n int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return write(f)
}

func checkpointsDescription(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return "every " + d.String()
}

func rate(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return thousands(int64(n / d.Seconds()))
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// thousands formats n with commas.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

type generateOptions struct {
	events int64
	output string
	rate   int64
	seed   uint64
}

func newNexmarkGenerateCommand() *cobra.Command {
	var opts generateOptions
	cmd := &cobra.Command{
		Use:   "generate --events N [--output FILE]",
		Short: "Write Nexmark events as JSON lines",
		Long: `Write the first N events of the Nexmark generator as JSON lines: one object
a line with "kind" (person, auction or bid) and the one event of that kind.
Times are milliseconds since the epoch.`,
		Example: `  weir nexmark generate --events 1000 --output events.jsonl`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateGenerator(cmd, opts.events, opts.rate, 1); err != nil {
				return err
			}
			c := nexmark.DefaultConfig()
			c.FirstEventRate, c.Seed = opts.rate, opts.seed
			return generateEvents(cmd.OutOrStdout(), opts.output, c, opts.events)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.events, "events", 1000, "number of events to write")
	f.StringVarP(&opts.output, "output", "o", "-", "output `file` (- for standard output)")
	f.Int64Var(&opts.rate, "rate", nexmark.DefaultConfig().FirstEventRate, "events per second of event time")
	f.Uint64Var(&opts.seed, "seed", nexmark.DefaultConfig().Seed, "seed of the generator")
	return cmd
}

func generateEvents(stdout io.Writer, output string, c nexmark.Config, n int64) (err error) {
	w := stdout
	if output != "-" && output != "" {
		f, err := os.Create(output)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	for e := range c.All(n) {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return bw.Flush()
}
