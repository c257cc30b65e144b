package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// Issue 32: a UNION ALL under a projection (every INSERT puts one there,
// to cast to the sink's columns) panicked while planning, because the
// planner asked the union's stream for its parallelism and a union has no
// operator of its own. These run such shapes, in batch and in streaming
// mode, at parallelism 1 and 2, and compare the rows with SQLite's.

// unionQueries: shapes with a UNION ALL under a projection, a filter or an
// aggregation; lite is SQLite's spelling when it differs.
var unionQueries = []batchQuery{
	// The query: the first branch matches no row.
	{sql: "SELECT customer FROM orders WHERE qty = 1 AND price < 0 UNION ALL SELECT name FROM customers WHERE tier = 3"},
	{sql: "SELECT customer FROM orders WHERE qty = 1 AND price < 5 UNION ALL SELECT name FROM customers WHERE tier = 3"},
	{sql: "SELECT customer FROM orders WHERE 1 = 0 UNION ALL SELECT name FROM customers"},
	{sql: "SELECT customer FROM orders UNION ALL SELECT name FROM customers WHERE 1 = 0"},
	{sql: "SELECT customer FROM orders WHERE price < 0 UNION ALL SELECT name FROM customers WHERE tier > 99"},
	// Three branches, one of them empty.
	{sql: "SELECT name FROM emp WHERE age = 30 AND salary < 0 UNION ALL SELECT city FROM dept WHERE budget = 4000 UNION ALL SELECT pname FROM proj WHERE hours > 30"},
	{sql: "SELECT dept FROM emp WHERE age > 60 UNION ALL SELECT dept FROM dept UNION ALL SELECT pname FROM proj WHERE hours > 100"},
	// The union inside a subquery, under a projection and a filter.
	{sql: "SELECT COALESCE(x, 'none'), x || '!' FROM (SELECT name AS x FROM emp WHERE age < 25 UNION ALL SELECT city AS x FROM dept) AS u"},
	{sql: "SELECT x FROM (SELECT name AS x, age AS a FROM emp UNION ALL SELECT city, CAST(budget AS INT) FROM dept) AS u WHERE a > 50"},
	{sql: "SELECT y FROM (SELECT x AS y FROM (SELECT dept AS x FROM emp UNION ALL SELECT dept FROM dept) AS u WHERE x <> 'eng' UNION ALL SELECT pname FROM proj) AS v"},
	// An aggregate on top, and aggregates under the union.
	{sql: "SELECT x, COUNT(*) FROM (SELECT dept AS x FROM emp UNION ALL SELECT dept FROM dept WHERE budget < 0 UNION ALL SELECT customer FROM orders) AS u GROUP BY x"},
	{sql: "SELECT COUNT(*), SUM(a) FROM (SELECT age AS a FROM emp WHERE 1 = 0 UNION ALL SELECT hours FROM proj) AS u"},
	{sql: "SELECT c + 1 FROM (SELECT COUNT(*) AS c FROM emp UNION ALL SELECT COUNT(*) AS c FROM dept UNION ALL SELECT SUM(hours) FROM proj) AS u"},
	{sql: "SELECT d, c * 2 FROM (SELECT dept AS d, COUNT(*) AS c FROM emp GROUP BY dept UNION ALL SELECT 'total', COUNT(*) FROM emp) AS u"},
}

// unionTables adds the two tables to the batch suite's.
func unionTables(t *testing.T, dir string) []string {
	ddl := batchTables(t, dir)
	orders := "alice,1,-3\nbob,1,4\ncarl,2,-1\n\\N,1,-7\nalice,3,9\n"
	customers := "alice,3\nbob,1\ndora,3\n\\N,3\nerik,2\n"
	lite := "CREATE TABLE orders (customer TEXT, qty INTEGER, price INTEGER); CREATE TABLE customers (name TEXT, tier INTEGER);"
	for _, tb := range []struct{ name, rows string }{{"orders", orders}, {"customers", customers}} {
		if err := os.MkdirAll(filepath.Join(dir, tb.name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, tb.name, "data.csv"), []byte(tb.rows), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Fields(tb.rows) {
			f := strings.Split(line, ",")
			for i := range f {
				if f[i] == `\N` {
					f[i] = "NULL"
				} else if i == 0 {
					f[i] = "'" + f[i] + "'"
				}
			}
			lite += fmt.Sprintf(" INSERT INTO %s VALUES (%s);", tb.name, strings.Join(f, ", "))
		}
	}
	runLite(t, filepath.Join(dir, "lite.db"), lite)
	opts := func(name string) string {
		return fmt.Sprintf("WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = '\\N')", filepath.Join(dir, name))
	}
	return append(ddl,
		"CREATE TABLE orders (customer STRING, qty INT, price INT) "+opts("orders"),
		"CREATE TABLE customers (name STRING, tier INT) "+opts("customers"))
}

// resultRows renders a result as SQLite would, folding a changelog into
// the table it ends as.
func resultRows(t *testing.T, res *table.Result) [][]string {
	t.Helper()
	var out [][]string
	for _, r := range res.Rows {
		row := make([]string, len(r.Row))
		for j, v := range r.Row {
			row[j] = weirCell(v, res.Columns[j].Type)
		}
		if r.Kind.IsAccumulate() {
			out = append(out, row)
			continue
		}
		i := len(out) - 1
		for i >= 0 && !rowsEqual(out[i], row) {
			i--
		}
		if i < 0 {
			t.Fatalf("%s of a row the result does not hold", r)
		}
		out = append(out[:i], out[i+1:]...)
	}
	return out
}

func compareRows(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if d := diffRows(got, want, false); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

// diffRows says how weir's rows differ from SQLite's, "" if they do not:
// as multisets, or in order when ordered.
func diffRows(got, want [][]string, ordered bool) string {
	if !ordered {
		sortRows(got)
		sortRows(want)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, SQLite %d\nweir:   %.2000v\nsqlite: %.2000v", len(got), len(want), got, want)
	}
	for k := range got {
		if !rowsEqual(got[k], want[k]) {
			return fmt.Sprintf("row %d differs\nweir:   %q\nsqlite: %q", k, got[k], want[k])
		}
	}
	return ""
}

func TestUnionAllAgainstSQLite(t *testing.T) {
	requireSQLite(t)
	dir := t.TempDir()
	ddl := unionTables(t, dir)
	db := filepath.Join(dir, "lite.db")
	for _, mode := range []string{"batch", "streaming"} {
		for _, p := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p=%d", mode, p), func(t *testing.T) {
				ctx := context.Background()
				tenv := table.NewEnvironment()
				for _, s := range append([]string{"SET 'execution.runtime-mode' = '" + mode + "'", fmt.Sprintf("SET 'parallelism.default' = '%d'", p), "SET 'table.dml-sync' = 'true'"}, ddl...) {
					if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
						t.Fatalf("%s: %v", s, err)
					}
				}
				for i, q := range unionQueries {
					res, err := tenv.ExecuteSQL(ctx, q.sql)
					if err != nil {
						t.Errorf("query %d %q: %v", i+1, q.sql, err)
						continue
					}
					lq := q.lite
					if lq == "" {
						lq = q.sql
					}
					want := runLite(t, db, lq)
					compareRows(t, fmt.Sprintf("query %d %q", i+1, q.sql), resultRows(t, res), want)
					// The last two unite a global aggregation's updates,
					// which come from one subtask: what runs above the
					// union runs in one subtask too, so that a -U and its
					// +U cannot pass each other.
					if mode == "streaming" && i >= len(unionQueries)-2 {
						for _, v := range res.Job.ExecutionGraph().Job.Vertices {
							if strings.HasPrefix(v.Name, "Calc") && v.Parallelism != 1 {
								t.Errorf("query %d: %s runs at parallelism %d above a union of updates from one subtask", i+1, v.Name, v.Parallelism)
							}
						}
					}
				}
			})
		}
	}
}

// TestUnionAllInsertIntoFilesystem is the statement as it was
// reported: an INSERT of the union into a filesystem CSV sink, then the
// sink's files read back. The sink is append-only, so only the shapes
// without updates run here.
func TestUnionAllInsertIntoFilesystem(t *testing.T) {
	requireSQLite(t)
	dir := t.TempDir()
	ddl := unionTables(t, dir)
	db := filepath.Join(dir, "lite.db")
	n := 0
	for _, mode := range []string{"batch", "streaming"} {
		for _, p := range []int{1, 2} {
			for i, q := range unionQueries[:10] {
				n++
				out := filepath.Join(dir, fmt.Sprintf("sink%d", n))
				ctx := context.Background()
				tenv := table.NewEnvironment()
				cols := "x STRING"
				if strings.HasPrefix(q.sql, "SELECT COALESCE") {
					cols = "x STRING, y STRING"
				}
				for _, s := range append(ddl,
					"SET 'execution.runtime-mode' = '"+mode+"'", fmt.Sprintf("SET 'parallelism.default' = '%d'", p), "SET 'table.dml-sync' = 'true'",
					fmt.Sprintf("CREATE TABLE sink (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = '\\N')", cols, out),
					"INSERT INTO sink "+q.sql,
					"SET 'execution.runtime-mode' = 'batch'") {
					if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
						t.Fatalf("%s p=%d: %s: %v", mode, p, s, err)
					}
				}
				res, err := tenv.ExecuteSQL(ctx, "SELECT * FROM sink")
				if err != nil {
					t.Fatal(err)
				}
				var got [][]string
				for _, r := range res.Rows {
					if r.Kind != types.Insert {
						t.Fatalf("a batch read of the sink has a %s row", r.Kind)
					}
					row := make([]string, len(r.Row))
					for j, v := range r.Row {
						row[j] = weirCell(v, res.Columns[j].Type)
					}
					got = append(got, row)
				}
				compareRows(t, fmt.Sprintf("%s p=%d INSERT of query %d %q", mode, p, i+1, q.sql), got, runLite(t, db, q.sql))
			}
		}
	}
}
