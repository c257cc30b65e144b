// Command sqlnexmark measures the reference suite's Nexmark SQL on weir
// against the DataStream queries of the nexmark package: for each query,
// the SQL (nexmark-flink's DDL, views and query file, into the blackhole
// connector) and the DataStream query (into a Blackhole sink) run on the
// same events, from the same generator in the source, alternately, and
// the command prints events/s by wall clock and per core (CPU time) with
// the ratio SQL/DataStream, taken run by run.
//
//	go run ./bench/sqlnexmark [--events N] [--parallelism P] [--runs R] [--rate TPS]
//	    [--queries q0,q1,...] [--events-for q4=20000,...] [--timeout D]
//
// Queries the planner cannot run yet are listed with its error. The
// results are not compared here: table/nexmark_test.go checks that each
// query's final table equals the DataStream query's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/benchstat"
	sqlnexmark "github.com/weirproject/weir/internal/sql/connectors/nexmark"
	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/nexmark"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/table"
)

type run struct {
	wall, cpu time.Duration
}

func measure(f func() error) (run, error) {
	goruntime.GC()
	cpu0, _ := nexmark.ProcessUsage()
	start := time.Now()
	err := f()
	r := run{wall: time.Since(start)}
	cpu1, _ := nexmark.ProcessUsage()
	r.cpu = cpu1 - cpu0
	return r, err
}

// runSQL runs a query's script; side is q13's side input file.
func runSQL(ctx context.Context, q string, src sqlnexmark.Source, p int, side string) error {
	tenv := table.NewEnvironment()
	if err := sqlnexmark.RegisterFunctions(tenv.Functions()); err != nil {
		return err
	}
	script, err := sqlnexmark.Script(q, sqlnexmark.ScriptOptions{Source: src, SideInput: side})
	if err != nil {
		return err
	}
	stmts, err := parser.ParseScript(script)
	if err != nil {
		return err
	}
	for _, s := range []string{"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'", "SET 'table.local-time-zone' = 'UTC'"} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			return err
		}
	}
	for _, st := range stmts {
		res, err := tenv.Execute(ctx, st)
		if err != nil {
			return err
		}
		if res.Job != nil {
			if err := res.Job.Wait(); err != nil {
				return err
			}
		}
	}
	return nil
}

func runDataStream(ctx context.Context, q string, src sqlnexmark.Source, p int) error {
	cfg := config.New()
	config.Parallelism.Set(cfg, p)
	env := stream.NewEnvironmentWithConfig(cfg)
	nexmark.Queries[q].Attach(nexmark.Events(env, src.Config, src.Events))
	return env.Execute(ctx, "nexmark-"+q)
}

func main() {
	events := flag.Int64("events", 1_000_000, "events per run")
	p := flag.Int("parallelism", 1, "parallelism of both forms")
	runs := flag.Int("runs", 5, "runs of each form, alternating")
	rate := flag.Int64("rate", nexmark.DefaultConfig().FirstEventRate, "events per second of event time (first-event.rate)")
	queries := flag.String("queries", strings.Join(sqlnexmark.QueryNames(), ","), "queries to run")
	eventsFor := flag.String("events-for", "", "events per run for some queries, `q4=20000,...` (those the planner runs in quadratic time)")
	timeout := flag.Duration("timeout", 5*time.Minute, "limit of one run")
	flag.Parse()
	if err := mainErr(*events, *p, *runs, *rate, *queries, *eventsFor, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "sqlnexmark:", err)
		os.Exit(1)
	}
}

func mainErr(events int64, p, runs int, rate int64, queries, eventsFor string, timeout time.Duration) error {
	if events < 1 || p < 1 || runs < 1 || rate < 1 {
		return errors.New("--events, --parallelism, --runs and --rate must be positive")
	}
	counts := map[string]int64{}
	for _, kv := range strings.Split(eventsFor, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 1 {
			return fmt.Errorf("--events-for: %q is not QUERY=EVENTS", kv)
		}
		counts[k] = n
	}
	side, err := os.CreateTemp("", "side-input-*.csv")
	if err != nil {
		return err
	}
	side.Close()
	defer os.Remove(side.Name())
	if err := sqlnexmark.WriteSideInput(side.Name()); err != nil {
		return err
	}
	fmt.Printf("# Nexmark in SQL against DataStream: parallelism %d, %d runs each (alternating), first-event.rate %d, GOMAXPROCS %d\n",
		p, runs, rate, goruntime.GOMAXPROCS(0))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "query\tevents\tSQL events/s\tDataStream events/s\tSQL events/s per core\tDataStream events/s per core\tSQL/DataStream per core\tSQL/DataStream wall")
	var failed []string
	for _, q := range strings.Split(queries, ",") {
		if _, ok := sqlnexmark.DataStreams[q]; !ok {
			return fmt.Errorf("unknown query %q", q)
		}
		src := sqlnexmark.Source{Config: nexmark.DefaultConfig(), Events: events}
		src.Config.FirstEventRate = rate
		if n, ok := counts[q]; ok {
			src.Events = n
		}
		var sqlRuns, dsRuns []run
		var runErr error
		for range runs {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			r, err := measure(func() error { return runSQL(ctx, q, src, p, side.Name()) })
			cancel()
			if err != nil {
				runErr = err
				break
			}
			sqlRuns = append(sqlRuns, r)
			ctx, cancel = context.WithTimeout(context.Background(), timeout)
			r, err = measure(func() error { return runDataStream(ctx, q, src, p) })
			cancel()
			if err != nil {
				return fmt.Errorf("%s: DataStream: %w", q, err)
			}
			dsRuns = append(dsRuns, r)
		}
		if runErr != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", q, runErr))
			continue
		}
		n := float64(src.Events)
		rates := func(rs []run, cpu bool) []float64 {
			out := make([]float64, len(rs))
			for i, r := range rs {
				d := r.wall
				if cpu {
					d = r.cpu
				}
				out[i] = n / d.Seconds()
			}
			return out
		}
		sw, dw, sc, dc := rates(sqlRuns, false), rates(dsRuns, false), rates(sqlRuns, true), rates(dsRuns, true)
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", q, src.Events,
			benchstat.Of(sw).Format("%.0f"), benchstat.Of(dw).Format("%.0f"),
			benchstat.Of(sc).Format("%.0f"), benchstat.Of(dc).Format("%.0f"),
			benchstat.Of(benchstat.Ratios(sc, dc)).Format("%.3g"), benchstat.Of(benchstat.Ratios(sw, dw)).Format("%.3g"))
		fmt.Fprintf(os.Stderr, "%s done\n", q)
	}
	w.Flush()
	for _, f := range failed {
		fmt.Println("does not run:", f)
	}
	return nil
}
