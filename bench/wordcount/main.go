// Command wordcount measures weir's WordCount job against a hand-written
// single-goroutine Go loop over the same in-memory text, with the same
// tokenizer (wc.Tokenize), so that the ratio between the two is the cost of
// the engine itself: sources, chaining, the exchange, keyed state.
//
//	go run ./bench/wordcount [--words N] [--vocab V] [--zipf S] [--seed N] [--caps F]
//	    [--parallelism 1,2] [--runs R] [--cpuprofile FILE] [--memprofile FILE]
//	    [--loopprofile FILE] [--json] [-D key=value]...
//
// The text is generated once: lines of about 10 words drawn from a Zipf
// distribution over a vocabulary of random lower-case words (a few of them
// capitalized), separated by spaces and punctuation. Each timed run starts
// after a garbage collection; loop and engine runs alternate, and the
// table shows the median and min–max of the runs, by wall clock and by
// CPU time (the ratio per core). The engine runs in BATCH mode, so every
// distinct word reaches the sink once, and a counting sink checks the
// engine's totals against the loop's.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/examples/wordcount/wc"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/stream"
)

type options struct {
	words       int64
	vocab       int
	zipf        float64
	seed        uint64
	caps        float64
	parallelism []int
	runs        int
	cpuprofile  string
	memprofile  string
	loopprofile string
	json        bool
	defs        []string
	// streaming runs the engine in STREAMING mode: a running count per
	// occurrence instead of one final count per word.
	streaming bool
}

func main() {
	// No allocation sampling unless --memprofile turns it on for the
	// engine runs.
	goruntime.MemProfileRate = 0
	var o options
	var par, defs string
	flag.Int64Var(&o.words, "words", 20_000_000, "number of words in the generated text")
	flag.IntVar(&o.vocab, "vocab", 100_000, "number of distinct words in the vocabulary")
	flag.Float64Var(&o.zipf, "zipf", 1.1, "Zipf exponent s (> 1) of the word frequencies")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the text generator")
	flag.Float64Var(&o.caps, "caps", 0.01, "fraction of words written with a capital first letter")
	flag.StringVar(&par, "parallelism", "1,2", "comma-separated parallelisms of the engine runs")
	flag.IntVar(&o.runs, "runs", 5, "timed runs per configuration; the median and min–max are reported")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the engine runs (only) to `file`")
	flag.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile of the engine runs (only) to `file`")
	flag.StringVar(&o.loopprofile, "loopprofile", "", "write a CPU profile of the loop runs (only) to `file`, for comparison")
	flag.BoolVar(&o.json, "json", false, "print the results as JSON instead of a table")
	mode := flag.String("mode", "batch", "engine `mode`: batch (one final count per word) or streaming (the running count after every occurrence)")
	flag.Func("D", "set an engine configuration option, `key=value` (repeatable)", func(s string) error {
		defs += "\x00" + s
		return nil
	})
	flag.Parse()
	switch *mode {
	case "batch":
	case "streaming":
		o.streaming = true
	default:
		fatalf("bad --mode %q: want batch or streaming", *mode)
	}
	for _, d := range strings.Split(defs, "\x00") {
		if d != "" {
			o.defs = append(o.defs, d)
		}
	}
	for _, f := range strings.Split(par, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			fatalf("bad --parallelism %q", par)
		}
		o.parallelism = append(o.parallelism, p)
	}
	switch {
	case o.words < 1:
		fatalf("--words must be positive")
	case o.vocab < 1:
		fatalf("--vocab must be positive")
	case o.zipf <= 1:
		fatalf("--zipf must be greater than 1")
	case o.runs < 1:
		fatalf("--runs must be positive")
	}
	if err := run(o); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "wordcount bench: "+format+"\n", args...)
	os.Exit(1)
}

// Result is one configuration's measurements.
type Result struct {
	Mode        string            `json:"mode"` // "loop" or "engine"
	Parallelism int               `json:"parallelism"`
	Seconds     []float64         `json:"seconds"`     // every run, in order
	CPUSeconds  []float64         `json:"cpu_seconds"` // user+system CPU time of every run (all goroutines, the GC included)
	Wall        benchstat.Summary `json:"wall_seconds"`
	CPU         benchstat.Summary `json:"cpu"`
	WordsPerSec benchstat.Summary `json:"words_per_second"`
	// Ratio is the throughput relative to the loop, run by run: the
	// loop's seconds ÷ these seconds; RatioPerCore is the same by CPU
	// time, which counts every core the engine keeps busy.
	Ratio        benchstat.Summary `json:"ratio_to_loop"`
	RatioPerCore benchstat.Summary `json:"ratio_to_loop_per_core"`
	// AllocBytesPerWord and GCs are of the first run.
	AllocBytesPerWord float64 `json:"alloc_bytes_per_word"`
	GCs               uint32  `json:"gcs"`
	Distinct          int64   `json:"distinct_words"`
	Sum               int64   `json:"sum_of_counts"`
}

// Report is what --json prints.
type Report struct {
	GoVersion   string   `json:"go_version"`
	CPU         string   `json:"cpu"`
	NumCPU      int      `json:"num_cpu"`
	GOMAXPROCS  int      `json:"gomaxprocs"`
	Words       int64    `json:"words"`
	Lines       int      `json:"lines"`
	TextBytes   int      `json:"text_bytes"`
	Vocab       int      `json:"vocab"`
	Zipf        float64  `json:"zipf"`
	Seed        uint64   `json:"seed"`
	Runs        int      `json:"runs"`
	Config      []string `json:"config,omitempty"`
	GenerateSec float64  `json:"generate_seconds"`
	Results     []Result `json:"results"`
}

func run(o options) error {
	rep := Report{
		GoVersion:  goruntime.Version(),
		CPU:        cpuModel(),
		NumCPU:     goruntime.NumCPU(),
		GOMAXPROCS: goruntime.GOMAXPROCS(0),
		Words:      o.words,
		Vocab:      o.vocab,
		Zipf:       o.zipf,
		Seed:       o.seed,
		Runs:       o.runs,
		Config:     o.defs,
	}
	start := time.Now()
	lines, size := generate(o)
	rep.GenerateSec = time.Since(start).Seconds()
	rep.Lines, rep.TextBytes = len(lines), size
	if !o.json {
		fmt.Fprintf(os.Stderr, "generated %d words in %d lines (%.1f MB) in %.1fs\n",
			o.words, len(lines), float64(size)/1e6, rep.GenerateSec)
	}

	loopRun := func() totals {
		counts := make(map[string]int64)
		add := func(w string) { counts[w]++ }
		for _, line := range lines {
			wc.Tokenize(line, add)
		}
		return mapTotals(counts)
	}
	loop := Result{Mode: "loop", Parallelism: 1}
	engines := make([]Result, len(o.parallelism))
	for i, p := range o.parallelism {
		engines[i] = Result{Mode: "engine", Parallelism: p}
	}
	var want totals
	var failed error
	// The runs alternate between the loop and the engine, so that a
	// slower moment of a shared machine falls on both and the ratio of
	// the i-th runs compares like with like.
	for r := range o.runs {
		var t totals
		sample(&loop, o.words, r == 0, func() { t = loopRun() }, profileFile(o.loopprofile, r))
		if r == 0 {
			want = t
			loop.Distinct, loop.Sum = t.distinct, t.sum
			if want.sum != o.words {
				return fmt.Errorf("the loop counted %d words, the generator wrote %d", want.sum, o.words)
			}
		} else if t != want {
			return fmt.Errorf("the loop counted differently in run %d", r+1)
		}
		for i, p := range o.parallelism {
			var got totals
			sample(&engines[i], o.words, r == 0, func() {
				if o.memprofile != "" {
					// Sampled in the engine runs only, so that the
					// profile's alloc_space holds them alone.
					goruntime.MemProfileRate = 64 << 10
					defer func() { goruntime.MemProfileRate = 0 }()
				}
				var err error
				if got, err = runEngine(o, lines, p); err != nil {
					fatalf("engine at parallelism %d: %v", p, err)
				}
			}, profileFile(o.cpuprofile, r*len(o.parallelism)+i))
			engines[i].Distinct, engines[i].Sum = got.distinct, got.sum
			if o.streaming {
				// Every occurrence emits the word's running count: as
				// many records as words; the counts do not compare.
				if got.distinct != want.sum && failed == nil {
					failed = fmt.Errorf("engine at parallelism %d in streaming mode: %d updates, want one per word, %d", p, got.distinct, want.sum)
					fmt.Fprintln(os.Stderr, "wordcount bench: MISMATCH:", failed)
				}
			} else if got != want && failed == nil {
				failed = fmt.Errorf("engine at parallelism %d: %d distinct words, sum %d, fingerprint %x; the loop: %d, %d, %x",
					p, got.distinct, got.sum, got.fingerprint, want.distinct, want.sum, want.fingerprint)
				fmt.Fprintln(os.Stderr, "wordcount bench: MISMATCH:", failed)
			}
		}
	}
	if o.memprofile != "" {
		writeMemProfile(o.memprofile)
	}
	rep.Results = append(rep.Results, loop)
	rep.Results = append(rep.Results, engines...)
	for i := range rep.Results {
		r := &rep.Results[i]
		r.Wall, r.CPU = benchstat.Of(r.Seconds), benchstat.Of(r.CPUSeconds)
		r.WordsPerSec = benchstat.Of(benchstat.Scale(float64(o.words), r.Seconds))
		r.Ratio = benchstat.Of(benchstat.Ratios(loop.Seconds, r.Seconds))
		r.RatioPerCore = benchstat.Of(benchstat.Ratios(loop.CPUSeconds, r.CPUSeconds))
	}

	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printTable(rep)
	}
	return failed
}

// profileFile returns the CPU profile's file name for the first run of
// a configuration (profiles cover one run each: index 0), "" otherwise.
func profileFile(name string, index int) string {
	if index == 0 {
		return name
	}
	return ""
}

// sample times one run of body after a garbage collection and appends it
// to r; the first run also records allocations and GCs. With a profile
// name the run is CPU-profiled into that file.
func sample(r *Result, words int64, first bool, body func(), profile string) {
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fatalf("%v", err)
		}
		defer pprof.StopCPUProfile()
	}
	goruntime.GC()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	cpu0, start := benchstat.ProcessCPU(), time.Now()
	body()
	sec, cpu := time.Since(start).Seconds(), (benchstat.ProcessCPU() - cpu0).Seconds()
	goruntime.ReadMemStats(&after)
	r.Seconds = append(r.Seconds, sec)
	r.CPUSeconds = append(r.CPUSeconds, cpu)
	if first {
		r.AllocBytesPerWord = float64(after.TotalAlloc-before.TotalAlloc) / float64(words)
		r.GCs = after.NumGC - before.NumGC
	}
}

func writeMemProfile(name string) {
	if err := benchstat.WriteAllocProfile(name); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount bench: memprofile:", err)
	}
}

// targets are the engine/loop targets by parallelism.
var targets = map[int]float64{1: 0.5, 2: 0.9}

func printTable(rep Report) {
	fmt.Printf("%s, %s, NumCPU=%d, GOMAXPROCS=%d\n", rep.GoVersion, rep.CPU, rep.NumCPU, rep.GOMAXPROCS)
	fmt.Printf("%d words, %d lines, %.1f MB, vocabulary %d, zipf %g, seed %d; median (min–max) of %d runs, loop and engine alternating\n",
		rep.Words, rep.Lines, float64(rep.TextBytes)/1e6, rep.Vocab, rep.Zipf, rep.Seed, rep.Runs)
	if len(rep.Config) > 0 {
		fmt.Printf("config: %s\n", strings.Join(rep.Config, " "))
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tp\tseconds\tM words/s\tratio\tCPU s\tratio per core\tB/word\tGCs\t")
	for _, r := range rep.Results {
		wps := r.WordsPerSec
		wps.Median, wps.Min, wps.Max = wps.Median/1e6, wps.Min/1e6, wps.Max/1e6
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t\n",
			r.Mode, r.Parallelism, r.Wall.Format("%.3f"), wps.Format("%.2f"), r.Ratio, r.CPU.Format("%.2f"), r.RatioPerCore, r.AllocBytesPerWord, r.GCs)
	}
	tw.Flush()
	fmt.Printf("distinct words %d, sum of counts %d (engine totals equal the loop's in every run)\n",
		rep.Results[0].Distinct, rep.Results[0].Sum)
	for _, r := range rep.Results {
		if target, ok := targets[r.Parallelism]; ok && r.Mode == "engine" {
			fmt.Printf("target at parallelism %d: ≥ %.1f of the loop; per core %s, by the clock %s\n",
				r.Parallelism, target, r.RatioPerCore.Verdict(target), r.Ratio.Verdict(target))
		}
	}
}

// runEngine runs wc.Build over the lines at parallelism p in batch mode.
func runEngine(o options, lines []string, p int) (totals, error) {
	cfg := config.New()
	for _, d := range o.defs {
		k, v, err := config.ParseDefinition(d)
		if err != nil {
			return totals{}, err
		}
		if err := cfg.SetFrom("-D", k, v); err != nil {
			return totals{}, err
		}
	}
	config.Parallelism.Set(cfg, p)
	mode := stream.Batch
	if o.streaming {
		mode = stream.Streaming
	}
	env := stream.NewEnvironmentWithConfig(cfg).SetRuntimeMode(mode)
	sink := &countingSink{}
	stream.SinkTo(wc.Build(stream.FromSlice(env, lines)), sink, "count")
	var err error
	// The label lets `go tool pprof -tagfocus parallelism=N` pick one
	// parallelism out of a profile; the job's goroutines inherit it.
	pprof.Do(context.Background(), pprof.Labels("parallelism", strconv.Itoa(p)), func(ctx context.Context) {
		err = env.Execute(ctx, "wordcount-bench")
	})
	return sink.t, err
}

// totals summarizes a word count: the number of distinct words, the sum
// of the counts and an order-independent fingerprint of the (word, count)
// pairs.
type totals struct {
	distinct, sum int64
	fingerprint   uint64
}

var fingerprintSeed = maphash.MakeSeed()

func (t *totals) add(word string, count int64) {
	t.distinct++
	t.sum += count
	t.fingerprint += maphash.String(fingerprintSeed, word) * uint64(count)
}

func (t *totals) merge(u totals) {
	t.distinct += u.distinct
	t.sum += u.sum
	t.fingerprint += u.fingerprint
}

func mapTotals(counts map[string]int64) totals {
	var t totals
	for w, c := range counts {
		t.add(w, c)
	}
	return t
}

// countingSink adds up what its writers receive without keeping records.
type countingSink struct {
	mu sync.Mutex
	t  totals
}

func (s *countingSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[wc.WordCount], error) {
	return &countingWriter{s: s}, nil
}

type countingWriter struct {
	s *countingSink
	t totals
}

func (w *countingWriter) Write(v wc.WordCount, _ int64) error {
	w.t.add(v.Word, v.Count)
	return nil
}

func (w *countingWriter) Flush() error {
	w.s.mu.Lock()
	w.s.t.merge(w.t)
	w.s.mu.Unlock()
	w.t = totals{}
	return nil
}

func (w *countingWriter) Close() error { return nil }

// generate writes o.words words into one string and returns its lines.
func generate(o options) ([]string, int) {
	r := rand.New(rand.NewPCG(o.seed, o.seed^0x5851f42d4c957f2d))
	vocab := make([]string, 0, o.vocab)
	seen := make(map[string]bool, o.vocab)
	buf := make([]byte, 0, 10)
	for len(vocab) < o.vocab {
		buf = buf[:0]
		for range 2 + r.IntN(9) { // 2–10 letters
			buf = append(buf, byte('a'+r.IntN(26)))
		}
		if w := string(buf); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	zipf := rand.NewZipf(r, o.zipf, 1, uint64(o.vocab-1))
	punct := []string{", ", ". ", "; ", ": ", "! ", "? ", " - ", " (", ") ", "' "}

	var text strings.Builder
	text.Grow(int(o.words) * 8)
	var ends []int
	left := o.words
	for left > 0 {
		n := min(left, int64(8+r.IntN(5))) // 8–12 words, about 10
		left -= n
		for i := range n {
			if i > 0 {
				if r.IntN(6) == 0 {
					text.WriteString(punct[r.IntN(len(punct))])
				} else {
					text.WriteByte(' ')
				}
			}
			w := vocab[zipf.Uint64()]
			if r.Float64() < o.caps {
				text.WriteByte(w[0] - 'a' + 'A')
				w = w[1:]
			}
			text.WriteString(w)
		}
		if r.IntN(2) == 0 {
			text.WriteByte('.')
		}
		ends = append(ends, text.Len())
	}
	s := text.String()
	lines := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		lines[i] = s[start:end]
		start = end
	}
	return lines, len(s)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
