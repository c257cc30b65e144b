package table_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weirproject/weir/table"
)

// TestOperatorNames: the job's vertices are named as Flink's planner
// names them (issue 39): the table's name and the operator's number,
// "Source: src[1]" and "Sink: snk[3]" with no doubled prefix, and one
// Calc for the projections and filters between them, merged as Flink's
// calc merge merges them.
func TestOperatorNames(t *testing.T) {
	ctx := context.Background()
	tenv := table.NewEnvironment()
	for _, s := range []string{
		"SET 'parallelism.default' = '1'",
		"SET 'table.dml-sync' = 'true'",
		"CREATE TABLE src (id BIGINT, s STRING, ts AS TO_TIMESTAMP_LTZ(id, 3)) WITH ('connector' = 'datagen', 'number-of-rows' = '100', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '100')",
		"CREATE TABLE snk (id BIGINT, s STRING) WITH ('connector' = 'blackhole')",
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, c := range []struct{ sql, want string }{
		{"INSERT INTO snk SELECT id, s FROM src WHERE id % 2 = 0", "Source: src[1] -> Calc[2] -> Sink: snk[3]"},
		// A computed column, a filter, two projections and a filter over
		// them: still one Calc.
		{"INSERT INTO snk SELECT x, UPPER(y) FROM (SELECT id * 2 AS x, s || CAST(ts AS STRING) AS y FROM src WHERE id > 3) WHERE x < 150",
			"Source: src[1] -> Calc[2] -> Sink: snk[3]"},
	} {
		res, err := tenv.ExecuteSQL(ctx, c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		var names []string
		for _, v := range res.Job.ExecutionGraph().Job.Vertices {
			names = append(names, v.Name)
		}
		if got := strings.Join(names, " | "); got != c.want {
			t.Errorf("%s: vertices %q, want %q", c.sql, got, c.want)
		}
	}
	// EXPLAIN shows a projection over a filter as one Calc (here, above
	// the aggregation; the other projects the scan's column).
	res, err := tenv.ExecuteSQL(ctx, "EXPLAIN SELECT k, c + 1 FROM (SELECT s AS k, COUNT(*) AS c FROM src GROUP BY s) WHERE c > 2")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(res.Text, "Calc("); n != 2 || !strings.Contains(res.Text, "Calc(select=[$0:k AS k, +($1:c, 1) AS EXPR$1], where=[>($1:c, 2)])") {
		t.Errorf("EXPLAIN shows %d Calcs, want 2, one with select and where:\n%s", n, res.Text)
	}
}
