package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/planner"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// The filesystem connector's round trips: rows written into a partitioned
// table (csv, json, parquet) and read back equal the rows of the query
// that wrote them, the reference; the directories are Hive's col=value
// with escaping and the default partition for NULL and ''.

// fsRegions are partition values: plain, non-ASCII, characters that
// need escaping, the empty string and NULL (both the default partition).
var fsRegions = []string{"'eu'", "'Zürich 東京'", "'a=b/c:d%e#'", "''", "NULL", "'us'"}

// fsValues returns n random rows as SQL literals for a VALUES clause of
// (id, name, amount, big, ts, ltz, d, tm, b, sm, ti, x, tags, pt, region,
// day); nested
// columns only with nested.
func fsValues(rng *rand.Rand, n int, nested bool) string {
	var rows []string
	maybe := func(s string) string {
		if rng.IntN(6) == 0 {
			return "NULL"
		}
		return s
	}
	for i := range n {
		sec := rng.Int64N(3 * 365 * 86400)
		ts := time.Unix(1600000000+sec, int64(rng.IntN(1000))*1e6).UTC()
		cols := []string{
			fmt.Sprint(i),
			maybe(fmt.Sprintf("'n%d ü,\"x\"'", rng.IntN(50))),
			maybe(fmt.Sprintf("%d.%02d", rng.IntN(200000)-100000, rng.IntN(100))),
			maybe(fmt.Sprintf("%d%012d.%04d", rng.IntN(1e9), rng.Int64N(1e12), rng.IntN(1e4))),
			maybe("TIMESTAMP '" + ts.Format("2006-01-02 15:04:05.000") + "'"),
			maybe("TIMESTAMP '" + ts.Add(time.Duration(rng.IntN(1000))*time.Microsecond).Format("2006-01-02 15:04:05.000000") + "'"),
			maybe("DATE '" + ts.Format("2006-01-02") + "'"),
			maybe("TIME '" + ts.Format("15:04:05") + "'"),
			maybe(fmt.Sprint(rng.IntN(2) == 0)),
			maybe(fmt.Sprint(rng.IntN(60000) - 30000)),
			maybe(fmt.Sprint(rng.IntN(200) - 100)),
			maybe(fmt.Sprintf("CAST(%d.%03d AS DOUBLE)", rng.IntN(2000)-1000, rng.IntN(1000))),
		}
		if nested {
			var tags []string
			for range rng.IntN(4) {
				tags = append(tags, maybe(fmt.Sprintf("'t%d'", rng.IntN(9))))
			}
			cols = append(cols, maybe("ARRAY["+strings.Join(append(tags, "'z'"), ", ")+"]"),
				maybe(fmt.Sprintf("ROW(%s, %s)", maybe(fmt.Sprint(rng.IntN(100))), maybe(fmt.Sprintf("'r%d'", rng.IntN(5))))))
		}
		cols = append(cols, fsRegions[rng.IntN(len(fsRegions))], maybe(fmt.Sprintf("DATE '2024-0%d-1%d'", 1+rng.IntN(3), rng.IntN(3))))
		rows = append(rows, "("+strings.Join(cols, ", ")+")")
	}
	return strings.Join(rows, ",\n")
}

func fsColumns(nested bool) (names, defs string) {
	n := []string{"id", "name", "amount", "big", "ts", "ltz", "d", "tm", "b", "sm", "ti", "x"}
	d := []string{"id BIGINT", "name STRING", "amount DECIMAL(12, 2)", "big DECIMAL(30, 4)", "ts TIMESTAMP(3)", "ltz TIMESTAMP(6)", "d DATE",
		"tm TIME", "b BOOLEAN", "sm SMALLINT", "ti TINYINT", "x DOUBLE"}
	if nested {
		n = append(n, "tags", "pt")
		d = append(d, "tags ARRAY<STRING>", "pt ROW<a INT, b STRING>")
	}
	n = append(n, "region", "day")
	d = append(d, "region STRING", "day DATE")
	return strings.Join(n, ", "), strings.Join(d, ", ")
}

// fsRows runs a query and returns its rows formatted, sorted.
func fsRows(t *testing.T, tenv *table.Environment, sql string) []string {
	t.Helper()
	res, err := tenv.ExecuteSQL(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for _, r := range res.Rows {
		var b strings.Builder
		for i, v := range r.Row {
			if i > 0 {
				b.WriteString(" | ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(types.FormatIn(v, res.Columns[i].Type, time.UTC))
			}
		}
		out = append(out, b.String())
	}
	slices.Sort(out)
	return out
}

func fsEnv(t *testing.T, p int) *table.Environment {
	t.Helper()
	tenv := table.NewEnvironment()
	for _, s := range []string{"SET 'execution.runtime-mode' = 'batch'", fmt.Sprintf("SET 'parallelism.default' = '%d'", p), "SET 'table.dml-sync' = 'true'"} {
		if _, err := tenv.ExecuteSQL(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return tenv
}

func fsExec(t *testing.T, tenv *table.Environment, sql string) {
	t.Helper()
	if _, err := tenv.ExecuteSQL(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestFilesystemPartitionedRoundTrip(t *testing.T) {
	for _, format := range []string{"csv", "json", "parquet"} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p%d", format, p), func(t *testing.T) {
				nested := format != "csv"
				rng := rand.New(rand.NewPCG(uint64(p), 7))
				tenv := fsEnv(t, p)
				dir := t.TempDir()
				names, defs := fsColumns(nested)
				fsExec(t, tenv, "CREATE TEMPORARY VIEW src AS SELECT * FROM (VALUES "+fsValues(rng, 400, nested)+") AS v("+names+")")
				// CSV writes NULL as an empty field, which reads back as ''
				// for strings, unless a null literal is set (as in Flink).
				extra := ""
				if format == "csv" {
					extra = ", 'csv.null-literal' = '\\N'"
				}
				fsExec(t, tenv, fmt.Sprintf("CREATE TABLE t (%s) PARTITIONED BY (region, day) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = '%s', 'sink.partition-commit.policy.kind' = 'success-file'%s)", defs, dir, format, extra))
				fsExec(t, tenv, "INSERT INTO t SELECT * FROM src")
				// The reference: the written rows, with '' in the default
				// partition, which reads back as NULL.
				cols := strings.Replace(names, "region", "NULLIF(region, '') AS region", 1)
				want := fsRows(t, tenv, "SELECT "+cols+" FROM src")
				got := fsRows(t, tenv, "SELECT * FROM t")
				if !slices.Equal(got, want) {
					t.Fatalf("read back %d rows, wrote %d; first difference:\n%s", len(got), len(want), firstDiff(got, want))
				}
				checkLayout(t, dir, format)
			})
		}
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got  %s\nwant %s", got[i], want[i])
		}
	}
	return "(one is a prefix of the other)"
}

// checkLayout checks the Hive directories, the success files and that the
// files leave the partition columns out.
func checkLayout(t *testing.T, dir, format string) {
	t.Helper()
	regions := map[string]bool{}
	files := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 || !strings.HasPrefix(parts[0], "region=") || !strings.HasPrefix(parts[1], "day=") {
			t.Fatalf("file %s is not in region=.../day=.../", rel)
		}
		regions[parts[0]] = true
		if parts[2] == "_SUCCESS" {
			return nil
		}
		if strings.HasPrefix(parts[2], ".") {
			t.Fatalf("unfinished file %s", rel)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "_SUCCESS")); err != nil {
			t.Fatalf("no _SUCCESS beside %s", rel)
		}
		files++
		if format != "parquet" {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), "region") || strings.Contains(string(data), "Zürich 東京") {
				t.Fatalf("%s holds a partition column:\n%s", rel, data)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"region=__DEFAULT_PARTITION__", "region=Zürich 東京", "region=a%3Db%2Fc%3Ad%25e%23", "region=eu"} {
		if !regions[want] {
			t.Fatalf("no directory %s among %v", want, regions)
		}
	}
	if files == 0 {
		t.Fatal("no files")
	}
}

// TestFilesystemPartitionPruning: a scan that filters on partition columns
// opens only the files of the partitions the filter admits, and returns
// the rows a filter over all of them returns.
func TestFilesystemPartitionPruning(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tenv := fsEnv(t, 2)
	dir := t.TempDir()
	names, defs := fsColumns(false)
	fsExec(t, tenv, "CREATE TEMPORARY VIEW src AS SELECT * FROM (VALUES "+fsValues(rng, 300, false)+") AS v("+names+")")
	fsExec(t, tenv, fmt.Sprintf("CREATE TABLE t (%s) PARTITIONED BY (region, day) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = '\\N')", defs, dir))
	fsExec(t, tenv, "INSERT INTO t SELECT * FROM src")
	var mu sync.Mutex
	var opened []string
	planner.SetFileOpenedHook(func(p string) {
		mu.Lock()
		opened = append(opened, p)
		mu.Unlock()
	})
	defer planner.SetFileOpenedHook(nil)
	for _, c := range []struct {
		where, ref string
		dirs       []string // every file opened is under one of these
	}{
		{"region = 'eu'", "region = 'eu'", []string{"region=eu/"}},
		{"region = 'Zürich 東京' AND id > 10", "region = 'Zürich 東京' AND id > 10", []string{"region=Zürich 東京/"}},
		{"region IS NULL AND day >= DATE '2024-02-10'", "NULLIF(region, '') IS NULL AND day >= DATE '2024-02-10'", []string{"region=__DEFAULT_PARTITION__/day=2024-02-", "region=__DEFAULT_PARTITION__/day=2024-03-"}},
		{"day = DATE '2024-01-11' OR region = 'us'", "day = DATE '2024-01-11' OR region = 'us'", []string{"day=2024-01-11/", "region=us/"}},
	} {
		opened = nil
		got := fsRows(t, tenv, "SELECT id, name FROM t WHERE "+c.where)
		want := fsRows(t, tenv, "SELECT id, name FROM src WHERE "+c.ref)
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("WHERE %s: %d rows, want %d", c.where, len(got), len(want))
		}
		if len(opened) == 0 {
			t.Fatalf("WHERE %s: no file opened", c.where)
		}
		all := 0
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), "_") {
				all++
			}
			return nil
		})
		for _, p := range opened {
			rel, _ := filepath.Rel(dir, p)
			if !slices.ContainsFunc(c.dirs, func(d string) bool { return strings.Contains(filepath.ToSlash(rel), d) }) {
				t.Fatalf("WHERE %s opened %s", c.where, rel)
			}
		}
		if len(opened) >= all {
			t.Fatalf("WHERE %s opened all %d files", c.where, all)
		}
	}
	// A filter on a data column prunes nothing.
	opened = nil
	fsRows(t, tenv, "SELECT id FROM t WHERE id > 5")
	all := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), "_") {
			all++
		}
		return nil
	})
	if len(opened) != all {
		t.Fatalf("WHERE id > 5 opened %d of %d files", len(opened), all)
	}
}

// TestFilesystemParquetSchema: Parquet files are read by column name, a
// column the files lack reads as NULL, a wider integer type reads a
// narrower one, and types the format cannot write are refused naming the
// column.
func TestFilesystemParquetSchema(t *testing.T) {
	tenv := fsEnv(t, 1)
	dir := t.TempDir()
	fsExec(t, tenv, fmt.Sprintf("CREATE TABLE w (a INT, b STRING) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet')", dir))
	fsExec(t, tenv, "INSERT INTO w VALUES (1, 'x'), (2, CAST(NULL AS STRING)), (CAST(NULL AS INT), 'z')")
	fsExec(t, tenv, fmt.Sprintf("CREATE TABLE r (b STRING, c INT, a BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet')", dir))
	got := fsRows(t, tenv, "SELECT * FROM r")
	want := []string{"NULL | NULL | 2", "x | NULL | 1", "z | NULL | NULL"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	fsExec(t, tenv, fmt.Sprintf("CREATE TABLE m (k INT, attrs MAP<STRING, INT>) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet')", t.TempDir()))
	_, err := tenv.ExecuteSQL(context.Background(), "INSERT INTO m SELECT 1, MAP['a', 1]")
	if err == nil || !strings.Contains(err.Error(), "column attrs") || !strings.Contains(err.Error(), "not supported by the parquet format") {
		t.Fatalf("MAP column: %v", err)
	}
}
