// Command iterations measures the iteration examples against hand-written
// single-goroutine Go loops over the same in-memory graph: PageRank (bulk
// iteration) against pagerank.Reference, connected components (delta
// iteration) against components.Reference (a union-find).
//
//	go run ./bench/iterations [--vertices N] [--edges M] [--iterations K]
//	    [--parallelism 1,2] [--runs R] [--cpuprofile FILE] [-D key=value]...
//
// Loop and engine runs alternate; the table shows the median and min–max
// of the runs by wall clock and by CPU time (the ratio per core). The
// first engine run of each job is checked against the loop's result.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/examples/components/components"
	"github.com/weirproject/weir/examples/graphs"
	"github.com/weirproject/weir/examples/pagerank/pagerank"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/stream"
)

func main() {
	vertices := flag.Int("vertices", 200_000, "vertices of the generated graph")
	edges := flag.Int("edges", 1_000_000, "edges of the generated graph (plus about 10% duplicates and self-loops)")
	iterations := flag.Int("iterations", 10, "PageRank iterations")
	par := flag.String("parallelism", "1,2", "comma-separated parallelisms of the engine runs")
	runs := flag.Int("runs", 5, "timed runs per configuration")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the engine runs to `file`")
	jobs := flag.String("jobs", "pagerank,components", "comma-separated jobs to measure")
	var defs []string
	flag.Func("D", "set an engine configuration option, `key=value` (repeatable)", func(s string) error {
		defs = append(defs, s)
		return nil
	})
	flag.Parse()
	var ps []int
	for _, f := range strings.Split(*par, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			fatalf("bad --parallelism %q", *par)
		}
		ps = append(ps, p)
	}
	start := time.Now()
	g := graphs.Generate(1, *vertices, *edges)
	fmt.Fprintf(os.Stderr, "generated %d edges in %.1fs; %s, GOMAXPROCS %d\n", len(g), time.Since(start).Seconds(), goruntime.Version(), goruntime.GOMAXPROCS(0))
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fatalf("%v", err)
		}
		defer pprof.StopCPUProfile()
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "job\tp\tloop s\tengine s\tratio to loop\tratio per core\t")
	for _, job := range strings.Split(*jobs, ",") {
		var loop func() int
		var engine func(p int) (int, error)
		switch job {
		case "pagerank":
			want := pagerank.Reference(g, *iterations)
			loop = func() int { return len(pagerank.Reference(g, *iterations)) }
			engine = func(p int) (int, error) {
				env, err := newEnv(p, defs)
				if err != nil {
					return 0, err
				}
				got := stream.Collect(pagerank.Build(env, stream.FromSlice(env, g), *iterations))
				if err := env.Execute(context.Background(), "pagerank"); err != nil {
					return 0, err
				}
				for _, r := range got.Values() {
					if w := want[r.Vertex]; math.Abs(r.Rank-w) > 1e-9*w {
						return 0, fmt.Errorf("pagerank: vertex %d rank %g, loop %g", r.Vertex, r.Rank, w)
					}
				}
				return len(got.Values()), nil
			}
		case "components":
			want := components.Reference(g)
			loop = func() int { return len(components.Reference(g)) }
			engine = func(p int) (int, error) {
				env, err := newEnv(p, defs)
				if err != nil {
					return 0, err
				}
				got := stream.Collect(components.Build(env, stream.FromSlice(env, g), 1<<20))
				if err := env.Execute(context.Background(), "components"); err != nil {
					return 0, err
				}
				for _, c := range got.Values() {
					if want[c.Vertex] != c.Component {
						return 0, fmt.Errorf("components: vertex %d in %d, loop %d", c.Vertex, c.Component, want[c.Vertex])
					}
				}
				return len(got.Values()), nil
			}
		default:
			fatalf("unknown job %q", job)
		}
		for _, p := range ps {
			var lw, lc, ew, ec []float64
			for range *runs {
				w, c := measure(func() error { loop(); return nil })
				lw, lc = append(lw, w), append(lc, c)
				w, c = measure(func() error { _, err := engine(p); return err })
				ew, ec = append(ew, w), append(ec, c)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", job, p, benchstat.Of(lw).Format("%.3f"), benchstat.Of(ew).Format("%.3f"),
				benchstat.Of(benchstat.Ratios(lw, ew)), benchstat.Of(benchstat.Ratios(lc, ec)))
		}
	}
	tw.Flush()
}

func newEnv(p int, defs []string) (*stream.Environment, error) {
	cfg := config.New()
	for _, d := range defs {
		k, v, err := config.ParseDefinition(d)
		if err != nil {
			return nil, err
		}
		if err := cfg.Set(k, v); err != nil {
			return nil, err
		}
	}
	return stream.NewEnvironmentWithConfig(cfg).SetParallelism(p).SetRuntimeMode(stream.Batch), nil
}

// measure runs f after a garbage collection and returns its wall-clock
// and CPU seconds.
func measure(f func() error) (wall, cpu float64) {
	goruntime.GC()
	c0, t0 := benchstat.ProcessCPU(), time.Now()
	if err := f(); err != nil {
		fatalf("%v", err)
	}
	return time.Since(t0).Seconds(), (benchstat.ProcessCPU() - c0).Seconds()
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "iterations bench: "+format+"\n", args...)
	os.Exit(1)
}
