// Command lateness runs a window TVF aggregation over an out-of-order
// file on the wall clock, read at full speed or at --rate rows a second,
// and compares the rows with the model of Flink's late-row rule
// (internal/sql/lateness) for a fast read (eager emissions only) and a
// slow one (the periodic timer between every two rows):
//
//	go run ./bench/lateness [--kind TUMBLE|HOP|CUMULATE|SESSION] [--rows 2000]
//	    [--interval 200ms] [--rate 0] [--parallelism 1]
//
// At interval 0 both models agree and the result must equal them at any
// rate. At 200 ms, a read at full speed finishes before the first timer
// and matches the fast model; a read slower than one row per interval
// lets the timer fire between rows and matches the slow model; a rate in
// between gives counts between the two. The test of the same rule with a
// manual clock is TestWindowTVFLateRowsFollowFlinksRule (table).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirproject/weir/connector/file"
	"github.com/weirproject/weir/internal/sql/lateness"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

const base = 1767225600000 // 2026-01-01 00:00:00 UTC

func main() {
	kind := flag.String("kind", "TUMBLE", "TUMBLE, HOP, CUMULATE or SESSION")
	rows := flag.Int("rows", 2000, "rows in the file")
	interval := flag.Duration("interval", 200*time.Millisecond, "pipeline.auto-watermark-interval")
	rate := flag.Float64("rate", 0, "rows a second (0: full speed)")
	p := flag.Int("parallelism", 1, "parallelism.default")
	flag.Parse()
	if err := run(*kind, *rows, *interval, *rate, *p); err != nil {
		fmt.Fprintln(os.Stderr, "lateness:", err)
		os.Exit(1)
	}
}

func run(kind string, n int, interval time.Duration, rate float64, p int) error {
	tvf, model, ok := query(kind)
	if !ok {
		return fmt.Errorf("unknown --kind %q: TUMBLE, HOP, CUMULATE or SESSION", kind)
	}
	// Event i about 100 ms after event i-1, jittered by up to ±4 s, four
	// keys: with a watermark 2 s behind, many rows are late.
	rng := rand.New(rand.NewPCG(32, 1))
	events := make([]lateness.Event, n)
	var b strings.Builder
	for i := range events {
		e := lateness.Event{K: string(rune('a' + rng.IntN(4))), V: int64(rng.IntN(100)), TS: base + int64(i)*100 + rng.Int64N(8001) - 4000}
		events[i] = e
		fmt.Fprintf(&b, "%s,%d,%s\n", e.K, e.V, time.UnixMilli(e.TS).UTC().Format("2006-01-02 15:04:05.000"))
	}
	dir, err := os.MkdirTemp("", "lateness")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(b.String()), 0o600); err != nil {
		return err
	}
	var opts []table.Option
	if rate > 0 {
		opts = append(opts, table.WithFilePacer(dir, file.RatePacer(rate)))
	}
	tenv := table.NewEnvironment(opts...)
	ctx := context.Background()
	for _, s := range []string{
		fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
		fmt.Sprintf("SET 'pipeline.auto-watermark-interval' = '%d ms'", interval.Milliseconds()),
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
			WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	start := time.Now()
	res, err := tenv.ExecuteSQL(ctx, fmt.Sprintf(`SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
		FROM TABLE(%s) GROUP BY window_start, window_end, k`, tvf))
	if err != nil {
		return err
	}
	took := time.Since(start)
	got := map[lateness.Window]lateness.Agg{}
	var counted int64
	for _, r := range res.Rows {
		if r.Kind != types.Insert {
			return fmt.Errorf("a window aggregation emitted %s", r)
		}
		w := lateness.Window{Start: millis(r.Row[0]), End: millis(r.Row[1]), K: r.Row[2].(string)}
		a := lateness.Agg{N: r.Row[3].(int64), Sum: r.Row[4].(int64), Max: r.Row[5].(int64)}
		got[w] = a
		counted += a.N
	}
	fmt.Printf("%s, %d rows, interval %v, rate %v/s, parallelism %d: %d windows counting %d rows in %v\n",
		kind, n, interval, rate, p, len(got), counted, took.Round(time.Millisecond))
	for _, slow := range []bool{false, true} {
		want, late := model(events, lateness.Watermarks(events, 2000, interval.Milliseconds(), slow))
		var wantN int64
		same := len(want) == len(got)
		for w, a := range want {
			wantN += a.N
			if got[w] != a {
				same = false
			}
		}
		name := "fast"
		if slow {
			name = "slow"
		}
		fmt.Printf("  model %s: %d windows counting %d rows (%d late); equal: %v\n", name, len(want), wantN, late, same)
	}
	return nil
}

func query(kind string) (string, func([]lateness.Event, []int64) (map[lateness.Window]lateness.Agg, int), bool) {
	sliced := func(w lateness.Windows) func([]lateness.Event, []int64) (map[lateness.Window]lateness.Agg, int) {
		return func(ev []lateness.Event, wms []int64) (map[lateness.Window]lateness.Agg, int) {
			return lateness.Sliced(ev, wms, w)
		}
	}
	switch strings.ToUpper(kind) {
	case "TUMBLE":
		return "TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)", sliced(lateness.Tumble(1000)), true
	case "HOP":
		return "HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '0.5' SECOND, INTERVAL '1.5' SECOND)", sliced(lateness.Hop(500, 1500)), true
	case "CUMULATE":
		return "CUMULATE(TABLE ev, DESCRIPTOR(ts), INTERVAL '0.5' SECOND, INTERVAL '2' SECOND)", sliced(lateness.Cumulate(500, 2000)), true
	case "SESSION":
		return "SESSION(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL '0.3' SECOND)",
			func(ev []lateness.Event, wms []int64) (map[lateness.Window]lateness.Agg, int) {
				return lateness.Session(ev, wms, 300)
			}, true
	}
	return "", nil, false
}

func millis(v any) int64 {
	switch v := v.(type) {
	case types.Timestamp:
		return v.Millis
	case types.TimestampLTZ:
		return v.Millis
	}
	return 0
}
