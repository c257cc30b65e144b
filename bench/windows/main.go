// Command windows measures a keyed event-time tumbling-window count
// through weir against a hand-written single-goroutine Go loop computing
// the same windows over the same events, so that the ratio is the cost of
// the engine: the source, watermarks, the KeyBy exchange, the window
// operator's state and timers.
//
//	go run ./bench/windows [--events N] [--keys K] [--rate R] [--window D] [--parallelism 1,2]
//	    [--runs R] [--seed S] [--cpuprofile FILE] [-D key=value]...
//
// Events are generated in memory: event i has key rand(K) and timestamp
// i/rate ms plus a jitter below the out-of-orderness bound, so that no
// event is late and both sides fire the same windows. Each side's firings
// are checked against the other's (number of firings, total count and an
// order-independent checksum).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/window"
)

// Event is one keyed, timestamped event.
type Event struct {
	Key int32
	TS  int64
}

// result summarizes the firings of a run.
type result struct {
	firings, total, checksum int64
}

func (r *result) add(key int32, start, count int64) {
	r.firings++
	r.total += count
	r.checksum += (int64(key)*1_000_003 + start) * count
}

const bound = 10 // ms of out-of-orderness

func generate(n int64, keys int, perMilli int64, seed uint64) []Event {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]Event, n)
	for i := range out {
		out[i] = Event{Key: int32(rng.IntN(keys)), TS: int64(i)/perMilli + int64(rng.IntN(bound))}
	}
	return out
}

// loop is the hand-written limit: one goroutine, a map of open windows per
// window start, the same bounded-out-of-orderness watermark after every
// event, and firing in watermark order.
func loop(events []Event, size int64) result {
	var r result
	open := make(map[int64]map[int32]int64)
	var starts []int64 // open window starts, ascending
	maxTS := int64(-1 << 62)
	fire := func(wm int64) {
		for len(starts) > 0 && starts[0]+size-1 <= wm {
			s := starts[0]
			for k, c := range open[s] {
				r.add(k, s, c)
			}
			delete(open, s)
			starts = starts[1:]
		}
	}
	for _, e := range events {
		start := e.TS - e.TS%size
		m := open[start]
		if m == nil {
			m = make(map[int32]int64)
			open[start] = m
			i, _ := slices.BinarySearch(starts, start)
			starts = slices.Insert(starts, i, start)
		}
		m[e.Key]++
		if e.TS > maxTS {
			maxTS = e.TS
			fire(maxTS - bound - 1)
		}
	}
	fire(1<<63 - 1)
	return r
}

type countResult struct {
	Key   int32
	Start int64
	Count int64
}

// countingSink sums the firings without keeping them.
type countingSink struct {
	mu  sync.Mutex
	res result
}

func (s *countingSink) NewWriter(context.Context, connector.SinkContext) (connector.SinkWriter[countResult], error) {
	return &countingWriter{s: s}, nil
}

type countingWriter struct {
	s   *countingSink
	res result
}

func (w *countingWriter) Write(r countResult, _ int64) error {
	w.res.add(r.Key, r.Start, r.Count)
	return nil
}

func (w *countingWriter) Flush() error {
	w.s.mu.Lock()
	w.s.res.firings += w.res.firings
	w.s.res.total += w.res.total
	w.s.res.checksum += w.res.checksum
	w.s.mu.Unlock()
	w.res = result{}
	return nil
}

func (w *countingWriter) Close() error { return nil }

func engine(events []Event, size time.Duration, p int, defs []string) (result, error) {
	cfg := config.New()
	config.Parallelism.Set(cfg, p)
	for _, d := range defs {
		k, v, err := config.ParseDefinition(d)
		if err != nil {
			return result{}, err
		}
		if err := cfg.Set(k, v); err != nil {
			return result{}, err
		}
	}
	env := stream.NewEnvironmentWithConfig(cfg)
	strategy := stream.ForBoundedOutOfOrderness[Event](bound * time.Millisecond).
		WithTimestampAssigner(func(e Event, _ int64) int64 { return e.TS })
	src := stream.FromSourceWithWatermarks[Event](env, &stream.Generator[Event]{
		Count: int64(len(events)), Fn: func(i int64) Event { return events[i] }, Contiguous: true,
	}, "events", strategy).SetParallelism(1)
	counts := window.AggregateProcess(
		window.Of(stream.KeyBy(src, func(e Event) int32 { return e.Key }), window.TumblingEventTime(size)),
		window.NewAggregate(func() int64 { return 0 }, func(_ Event, acc int64) int64 { return acc + 1 },
			func(acc int64) int64 { return acc }, func(a, b int64) int64 { return a + b }),
		window.ProcessWindowFunc[int32, int64, countResult](func(key int32, ctx *window.ProcessContext, counts []int64, out stream.Collector[countResult]) error {
			out.Collect(countResult{Key: key, Start: ctx.Window().Start, Count: counts[0]})
			return nil
		}))
	sink := &countingSink{}
	stream.SinkTo[countResult](counts, sink, "count")
	err := env.Execute(context.Background(), "windows")
	return sink.res, err
}

type defineFlag []string

func (d *defineFlag) String() string     { return strings.Join(*d, ",") }
func (d *defineFlag) Set(s string) error { *d = append(*d, s); return nil }

func main() {
	n := flag.Int64("events", 10_000_000, "number of events")
	keys := flag.Int("keys", 10_000, "number of distinct keys")
	perMilli := flag.Int64("rate", 100, "events per millisecond of event time")
	size := flag.Duration("window", time.Second, "tumbling window size")
	ps := flag.String("parallelism", "1,2", "comma-separated parallelisms of the engine runs")
	runs := flag.Int("runs", 5, "timed runs per configuration; the median and min–max are reported")
	seed := flag.Uint64("seed", 1, "seed of the generator")
	var defs defineFlag
	flag.Var(&defs, "D", "engine option `key=value` (repeatable)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the engine runs to `file`")
	flag.Parse()

	var parallelisms []int
	for _, f := range strings.Split(*ps, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			fmt.Fprintf(os.Stderr, "windows: bad parallelism %q\n", f)
			os.Exit(2)
		}
		parallelisms = append(parallelisms, p)
	}
	events := generate(*n, *keys, *perMilli, *seed)
	fmt.Printf("%s, %d events, %d keys, %v tumbling windows, out-of-orderness %d ms, NumCPU=%d; median (min–max) of %d runs, loop and engine alternating\n",
		goruntime.Version(), *n, *keys, *size, bound, goruntime.NumCPU(), *runs)

	// timed runs body after a GC and returns its wall and CPU seconds.
	timed := func(body func()) (float64, float64) {
		goruntime.GC()
		cpu, start := benchstat.ProcessCPU(), time.Now()
		body()
		return time.Since(start).Seconds(), (benchstat.ProcessCPU() - cpu).Seconds()
	}
	var loopWall, loopCPU []float64
	wall, cpu := make([][]float64, len(parallelisms)), make([][]float64, len(parallelisms))
	var want result
	failed := false
	for r := 0; r < *runs; r++ {
		w, c := timed(func() { want = loop(events, size.Milliseconds()) })
		loopWall, loopCPU = append(loopWall, w), append(loopCPU, c)
		for i, p := range parallelisms {
			if *cpuprofile != "" && r == 0 && i == 0 {
				f, err := os.Create(*cpuprofile)
				if err != nil {
					fmt.Fprintln(os.Stderr, "windows:", err)
					os.Exit(1)
				}
				pprof.StartCPUProfile(f)
			}
			var got result
			var err error
			w, c := timed(func() { got, err = engine(events, *size, p, defs) })
			if *cpuprofile != "" && r == 0 && i == 0 {
				pprof.StopCPUProfile()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "windows:", err)
				os.Exit(1)
			}
			if got != want {
				fmt.Fprintf(os.Stderr, "windows: engine at parallelism %d fired %+v, the loop %+v\n", p, got, want)
				failed = true
			}
			wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tp\tseconds\tM events/s\tratio\tCPU s\tratio per core\tfirings\t")
	row := func(mode string, p int, w, c []float64) {
		eps := benchstat.Of(benchstat.Scale(float64(*n)/1e6, w))
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t\n", mode, p, benchstat.Of(w).Format("%.3f"), eps.Format("%.2f"),
			benchstat.Of(benchstat.Ratios(loopWall, w)), benchstat.Of(c).Format("%.2f"), benchstat.Of(benchstat.Ratios(loopCPU, c)), want.firings)
	}
	row("loop", 1, loopWall, loopCPU)
	for i, p := range parallelisms {
		row("engine", p, wall[i], cpu[i])
	}
	tw.Flush()
	if failed {
		os.Exit(1)
	}
	fmt.Println("engine firings equal the loop's in every run")
	for i, p := range parallelisms {
		if p == 1 {
			fmt.Printf("target at parallelism 1: ≥ 0.5 of the loop; per core %s, by the clock %s\n",
				benchstat.Of(benchstat.Ratios(loopCPU, cpu[i])).Verdict(0.5), benchstat.Of(benchstat.Ratios(loopWall, wall[i])).Verdict(0.5))
		}
	}
}
