// Command jdbc measures the JDBC sink's rows/s against a plain
// batched-insert loop with database/sql on the same MariaDB server, which
// it starts itself (Debian's mariadb-server, as the tests do).
//
//	go run ./bench/jdbc [--rows 500000] [--batch 1000] [--runs 5] [--json]
//
// Every run writes --rows rows (id BIGINT, word VARCHAR(32), n BIGINT)
// into a fresh table: the loop with multi-row INSERTs of --batch rows
// (client-side parameter interpolation, as the sink uses); the sink
// appending at least once; the sink upserting by id; and the sink
// exactly once, preparing and committing an XA transaction every
// --checkpoint rows, as a job checkpointing would. The median and min–max
// of --runs runs are reported, the ratio to the loop by the clock and by
// the client's CPU time.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/jdbc"
	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/internal/testmysql"
)

type rec struct {
	ID   int64
	Word string
	N    int64
}

func main() {
	rows := flag.Int("rows", 500_000, "rows per run")
	batch := flag.Int("batch", 1000, "rows per INSERT, for the loop and the sink")
	checkpoint := flag.Int("checkpoint", 100_000, "rows per XA transaction in the exactly-once runs")
	runs := flag.Int("runs", 5, "timed runs of each variant; the median and min–max are reported")
	asJSON := flag.Bool("json", false, "print the results as JSON")
	flag.Parse()

	server, err := testmysql.Start()
	if err != nil {
		fail(err)
	}
	defer server.Stop()
	admin, err := sql.Open("mysql", server.DSN(""))
	if err != nil {
		fail(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE bench CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		fail(err)
	}
	dsn := server.DSN("bench")
	words := []string{"the", "straße", "café", "東京", "москва", "naïve", "x²", "and"}
	data := make([]rec, *rows)
	for i := range data {
		data[i] = rec{ID: int64(i), Word: words[i%len(words)], N: int64(i / len(words))}
	}
	row := func(r rec) []any { return []any{r.ID, r.Word, r.N} }

	table := 0
	fresh := func() string {
		table++
		name := fmt.Sprintf("t%d", table)
		if _, err := admin.Exec("CREATE TABLE bench." + name + " (id BIGINT PRIMARY KEY, word VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, n BIGINT NOT NULL) ENGINE=InnoDB"); err != nil {
			fail(err)
		}
		return name
	}
	variants := []struct {
		name string
		run  func(table string) error
	}{
		{"database/sql loop", func(table string) error { return loop(dsn, table, data, *batch) }},
		{"sink, append (at least once)", func(table string) error {
			return sink(jdbc.SinkOptions{DSN: dsn, Table: table, Columns: []string{"id", "word", "n"}, BatchSize: *batch}, row, data, 0)
		}},
		{"sink, upsert (at least once)", func(table string) error {
			return sink(jdbc.SinkOptions{DSN: dsn, Table: table, Columns: []string{"id", "word", "n"}, Key: []string{"id"}, BatchSize: *batch}, row, data, 0)
		}},
		{"sink, exactly once (XA)", func(table string) error {
			return sink(jdbc.SinkOptions{DSN: dsn, Table: table, Columns: []string{"id", "word", "n"}, BatchSize: *batch, ExactlyOnce: true, SinkID: "bench-" + table}, row, data, *checkpoint)
		}},
	}
	type result struct {
		Variant string            `json:"variant"`
		Rows    int               `json:"rows"`
		Wall    []float64         `json:"seconds"`
		CPU     []float64         `json:"cpu_seconds"`
		RowsSec benchstat.Summary `json:"rows_per_sec"`
		Ratio   benchstat.Summary `json:"ratio_to_loop"`
		PerCore benchstat.Summary `json:"ratio_to_loop_per_core"`
	}
	results := make([]result, len(variants))
	// Every run goes through the variants in turn, so that the loop and
	// the sink meet the same moment of a shared machine.
	for range *runs {
		for i, v := range variants {
			t := fresh()
			runtime.GC()
			start, cpu := time.Now(), benchstat.ProcessCPU()
			if err := v.run(t); err != nil {
				fail(fmt.Errorf("%s: %w", v.name, err))
			}
			results[i].Wall = append(results[i].Wall, time.Since(start).Seconds())
			results[i].CPU = append(results[i].CPU, (benchstat.ProcessCPU() - cpu).Seconds())
			var n int
			if err := admin.QueryRow("SELECT COUNT(*) FROM bench." + t).Scan(&n); err != nil || n != len(data) {
				fail(fmt.Errorf("%s: %d rows in the table, want %d (%v)", v.name, n, len(data), err))
			}
			admin.Exec("DROP TABLE bench." + t)
		}
	}
	for i, v := range variants {
		r := &results[i]
		r.Variant, r.Rows = v.name, len(data)
		r.RowsSec = benchstat.Of(benchstat.Scale(float64(len(data)), r.Wall))
		r.Ratio = benchstat.Of(benchstat.Ratios(results[0].Wall, r.Wall))
		r.PerCore = benchstat.Of(benchstat.Ratios(results[0].CPU, r.CPU))
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(results)
		return
	}
	var version string
	admin.QueryRow("SELECT VERSION()").Scan(&version)
	fmt.Printf("MariaDB %s, %d rows a run, batches of %d; median (min–max) of %d runs, variants alternating\n", version, len(data), *batch, *runs)
	fmt.Printf("CPU time is the client process's (the server's is not counted)\n")
	fmt.Printf("%-30s %-24s %-24s %-20s %-20s\n", "variant", "seconds", "k rows/s", "ratio", "ratio per core (client)")
	for _, r := range results {
		k := r.RowsSec
		k.Median, k.Min, k.Max = k.Median/1e3, k.Min/1e3, k.Max/1e3
		fmt.Printf("%-30s %-24s %-24s %-20s %-20s\n", r.Variant, benchstat.Of(r.Wall).Format("%.2f"), k.Format("%.1f"), r.Ratio, r.PerCore)
	}
}

// loop is the baseline: what a Go program writing the rows itself would
// do, one multi-row INSERT per batch.
func loop(dsn, table string, data []rec, batch int) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.InterpolateParams = true
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := context.Background()
	for start := 0; start < len(data); start += batch {
		part := data[start:min(start+batch, len(data))]
		q := "INSERT INTO " + table + " (id,word,n) VALUES " + strings.TrimSuffix(strings.Repeat("(?,?,?),", len(part)), ",")
		args := make([]any, 0, 3*len(part))
		for _, r := range part {
			args = append(args, r.ID, r.Word, r.N)
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// sink writes the rows through one sink writer as a sink subtask would,
// preparing and committing every checkpoint rows when exactly once.
func sink(opts jdbc.SinkOptions, row func(rec) []any, data []rec, checkpoint int) error {
	s, err := jdbc.NewSink(opts, row)
	if err != nil {
		return err
	}
	w, err := s.NewWriter(context.Background(), connector.SinkContext{Parallelism: 1})
	if err != nil {
		return err
	}
	defer w.Close()
	committer, _ := w.(connector.Committer)
	var id int64
	for i, r := range data {
		if err := w.Write(r, 0); err != nil {
			return err
		}
		if committer != nil && (i+1)%checkpoint == 0 {
			id++
			c, err := committer.PrepareCommit(id)
			if err != nil {
				return err
			}
			if err := committer.Commit([][]byte{c}); err != nil {
				return err
			}
		}
	}
	if committer == nil {
		return w.Flush()
	}
	c, err := committer.PrepareCommit(id + 1)
	if err != nil {
		return err
	}
	return committer.Commit([][]byte{c})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/jdbc:", err)
	os.Exit(1)
}
