// Command jdbc measures the JDBC sink's rows/s against a plain
// batched-insert loop with database/sql on the same MariaDB server, which
// it starts itself (Debian's mariadb-server, as the tests do).
//
//	go run ./bench/jdbc [--rows 500000] [--batch 1000] [--runs 3] [--json]
//
// Every run writes --rows rows (id BIGINT, word VARCHAR(32), n BIGINT)
// into a fresh table: the loop with multi-row INSERTs of --batch rows
// (client-side parameter interpolation, as the sink uses); the sink
// appending at least once; the sink upserting by id; and the sink
// exactly once, preparing and committing an XA transaction every
// --checkpoint rows, as a job checkpointing would. The median of --runs
// runs is reported.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/weirproject/weir/connector"
	"github.com/weirproject/weir/connector/jdbc"
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
	runs := flag.Int("runs", 3, "timed runs of each variant; the median is reported")
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
		Variant    string  `json:"variant"`
		Rows       int     `json:"rows"`
		Seconds    float64 `json:"seconds"`
		RowsPerSec float64 `json:"rows_per_sec"`
		Ratio      float64 `json:"ratio_to_loop"`
	}
	var results []result
	for _, v := range variants {
		var secs []float64
		for range *runs {
			t := fresh()
			start := time.Now()
			if err := v.run(t); err != nil {
				fail(fmt.Errorf("%s: %w", v.name, err))
			}
			secs = append(secs, time.Since(start).Seconds())
			var n int
			if err := admin.QueryRow("SELECT COUNT(*) FROM bench." + t).Scan(&n); err != nil || n != len(data) {
				fail(fmt.Errorf("%s: %d rows in the table, want %d (%v)", v.name, n, len(data), err))
			}
			admin.Exec("DROP TABLE bench." + t)
		}
		slices.Sort(secs)
		med := secs[len(secs)/2]
		results = append(results, result{Variant: v.name, Rows: len(data), Seconds: med, RowsPerSec: float64(len(data)) / med})
	}
	for i := range results {
		results[i].Ratio = results[i].RowsPerSec / results[0].RowsPerSec
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(results)
		return
	}
	var version string
	admin.QueryRow("SELECT VERSION()").Scan(&version)
	fmt.Printf("MariaDB %s, %d rows a run, batches of %d, median of %d runs\n", version, len(data), *batch, *runs)
	fmt.Printf("%-32s %10s %12s %8s\n", "variant", "seconds", "rows/s", "ratio")
	for _, r := range results {
		fmt.Printf("%-32s %10.3f %12.0f %8.2f\n", r.Variant, r.Seconds, r.RowsPerSec, r.Ratio)
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
