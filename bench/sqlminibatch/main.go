// Command sqlminibatch measures an updating SQL GROUP BY with few keys
// over many rows, as Flink's mini-batch options are meant for, with and
// without them: one row at a time (the default), mini-batch in one phase,
// mini-batch in two phases (local and global aggregation), and, for the
// cost of state TTL, the default with table.exec.state.ttl set. The modes
// run alternately, each --runs times; it prints rows/s (wall clock) and
// rows/s per core (CPU time), median and min–max, and the number of
// changes the aggregation emitted in the last run.
//
//	go run ./bench/sqlminibatch [--rows N] [--keys K] [--parallelism P] [--runs R]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

var modes = []struct {
	name     string
	settings []string
}{
	{"default (one row at a time)", nil},
	{"mini-batch, ONE_PHASE", []string{"SET 'table.exec.mini-batch.enabled' = 'true'", "SET 'table.exec.mini-batch.allow-latency' = '2 s'",
		"SET 'table.exec.mini-batch.size' = '50000'", "SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE'"}},
	{"mini-batch, TWO_PHASE", []string{"SET 'table.exec.mini-batch.enabled' = 'true'", "SET 'table.exec.mini-batch.allow-latency' = '2 s'",
		"SET 'table.exec.mini-batch.size' = '50000'", "SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE'"}},
	{"default, state TTL 1 h", []string{"SET 'table.exec.state.ttl' = '1 h'"}},
}

func main() {
	rows := flag.Int64("rows", 2_000_000, "rows generated")
	keys := flag.Int("keys", 10, "distinct group keys")
	p := flag.Int("parallelism", 1, "parallelism")
	runs := flag.Int("runs", 5, "runs of each mode")
	flag.Parse()
	ctx := context.Background()
	wall := make([][]float64, len(modes))
	cpu := make([][]float64, len(modes))
	changes := make([]int, len(modes))
	for r := 0; r < *runs; r++ {
		for i, m := range modes {
			goruntime.GC()
			cpu0 := benchstat.ProcessCPU()
			start := time.Now()
			err := run(ctx, m.settings, *rows, *keys, *p, false)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", m.name, err)
				os.Exit(1)
			}
			d := time.Since(start)
			c := benchstat.ProcessCPU() - cpu0
			wall[i] = append(wall[i], float64(*rows)/d.Seconds())
			cpu[i] = append(cpu[i], float64(*rows)/c.Seconds())
		}
	}
	// Count the changes in one more, untimed run per mode, collected
	// instead of dropped.
	for i, m := range modes {
		n, err := countChanges(ctx, m.settings, *rows, *keys, *p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", m.name, err)
			os.Exit(1)
		}
		changes[i] = n
	}
	fmt.Printf("SELECT k, COUNT(*), SUM(v), MAX(v) FROM src GROUP BY k: %d rows, %d keys, parallelism %d, %d runs\n\n", *rows, *keys, *p, *runs)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "mode\trows/s\trows/s per core\tchanges emitted (+I, +U)\tvs default (rows/s, run by run)")
	for i, m := range modes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", m.name, benchstat.Of(wall[i]).Format("%.0f"), benchstat.Of(cpu[i]).Format("%.0f"),
			changes[i], benchstat.Of(benchstat.Ratios(wall[i], wall[0])).Format("%.2f"))
	}
	w.Flush()
}

func setup(ctx context.Context, settings []string, rows int64, keys, p int) (*table.Environment, error) {
	tenv := table.NewEnvironment()
	stmts := append([]string{
		"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'",
		"SET 'table.dml-sync' = 'true'",
		fmt.Sprintf(`CREATE TABLE src (id BIGINT, k AS MOD(id, %d), v AS MOD(id * 17, 1000))
			WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000', 'fields.id.kind' = 'sequence',
			'fields.id.start' = '0', 'fields.id.end' = '%d')`, keys, rows-1),
		"CREATE TABLE sink (k BIGINT, c BIGINT, s BIGINT, m BIGINT) WITH ('connector' = 'blackhole')",
	}, settings...)
	for _, s := range stmts {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	return tenv, nil
}

const query = "SELECT k, COUNT(*), SUM(v), MAX(v) FROM src GROUP BY k"

// run executes the query once into the blackhole sink.
func run(ctx context.Context, settings []string, rows int64, keys, p int, _ bool) error {
	tenv, err := setup(ctx, settings, rows, keys, p)
	if err != nil {
		return err
	}
	_, err = tenv.ExecuteSQL(ctx, "INSERT INTO sink "+query)
	return err
}

// countChanges runs the query and counts the changes (+I, +U, -D) it
// emitted.
func countChanges(ctx context.Context, settings []string, rows int64, keys, p int) (int, error) {
	tenv, err := setup(ctx, settings, rows, keys, p)
	if err != nil {
		return 0, err
	}
	res, err := tenv.ExecuteSQL(ctx, query)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range res.Rows {
		if r.Kind != types.UpdateBefore {
			n++
		}
	}
	return n, nil
}
