package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirproject/weir/table"
)

// Projection push-down: each scan reads only the columns the query uses,
// which EXPLAIN shows, and the CSV format does not even parse the others
// (so a malformed value in a column nobody reads does not fail the job,
// as with Flink's CSV format).
func TestProjectionPushDown(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte("1,a,10,2026-01-01 00:00:01\n2,b,oops,2026-01-01 00:00:02\n3,c,30,2026-01-01 00:00:03\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenv := table.NewEnvironment()
	for _, s := range []string{
		"SET 'execution.runtime-mode' = 'batch'",
		fmt.Sprintf("CREATE TABLE t (id INT, name STRING, n INT, ts TIMESTAMP(3), id2 AS id * 2, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')", filepath.Join(dir, "t.csv")),
		fmt.Sprintf("CREATE TABLE u (id INT, name STRING, n INT, ts TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')", filepath.Join(dir, "t.csv")),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, c := range []struct{ query, want string }{
		{"SELECT name FROM u WHERE id > 1", "project=[id, name]"},
		{"SELECT COUNT(*) FROM u", "project=[])"},
		{"SELECT id2 FROM t", "project=[id, ts, id2]"}, // the watermark reads ts
		{"SELECT a.name, b.ts FROM u a JOIN u b ON a.id = b.id", "fields=[id, name, n, ts], project=[id, name]"},
		{"SELECT a.name, b.ts FROM u a JOIN u b ON a.id = b.id", "fields=[id, name, n, ts], project=[id, ts]"},
		{"SELECT name FROM (SELECT name, n FROM u UNION ALL SELECT name, id FROM u)", "project=[name])"},
		{"SELECT name, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts) FROM u", "project=[id, name, ts]"},
		{"SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end", "project=[ts]"},
		{"SELECT * FROM u", "fields=[id, name, n, ts])"},
	} {
		res, err := tenv.ExecuteSQL(ctx, "EXPLAIN "+c.query)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", c.query, err)
		}
		if !strings.Contains(res.Text, c.want) {
			t.Errorf("EXPLAIN %s: want %q in\n%s", c.query, c.want, res.Text)
		}
	}
	res, err := tenv.ExecuteSQL(ctx, "SELECT id, name FROM u")
	if err != nil {
		t.Fatalf("reading the columns without the malformed value: %v", err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(res.Rows))
	}
	if _, err := tenv.ExecuteSQL(ctx, "SELECT SUM(n) FROM u"); err == nil || !strings.Contains(err.Error(), "column n") {
		t.Fatalf("reading the malformed column: %v, want an error naming column n", err)
	}
}
