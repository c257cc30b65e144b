package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirproject/weir/table"
)

// Watermarks of a table's WATERMARK FOR as Flink's table runtime emits
// them (issue 32); TestWindowTVFLateRowsFollowFlinksRule
// (watermark_rules_test.go) checks the rows against a model of Flink's
// rule.

// lateEvent is a row of the out-of-order file.
type lateEvent struct {
	k  string
	v  int64
	ts int64
}

// outOfOrderEvents: event i at about 100 ms after event i-1, jittered by
// up to ±4 s, so that with a watermark 2 s behind the largest time many
// arrive after their window closed.
func outOfOrderEvents(n int) []lateEvent {
	rng := rand.New(rand.NewPCG(32, 1))
	out := make([]lateEvent, n)
	for i := range n {
		out[i] = lateEvent{
			k:  string(rune('a' + rng.IntN(4))),
			v:  int64(rng.IntN(100)),
			ts: evBase + int64(i)*100 + rng.Int64N(8001) - 4000,
		}
	}
	return out
}

// TestFilteredRowsAdvanceTheWatermark: a table's watermark is computed on
// every row its source reads, before the query's WHERE (in Flink the
// filter stays above the WatermarkAssigner), so a row the WHERE drops
// still makes later rows late. Here the dropped row at 10 s makes the row
// at 1.5 s late: Flink's window [1 s, 2 s) counts one row, not two.
func TestFilteredRowsAdvanceTheWatermark(t *testing.T) {
	dir := t.TempDir()
	ts := func(ms int64) string { return time.UnixMilli(evBase + ms).UTC().Format("2006-01-02 15:04:05.000") }
	csv := fmt.Sprintf("a,1,%s\nb,2,%s\na,3,%s\n", ts(1000), ts(10000), ts(1500))
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tenv := table.NewEnvironment()
	for _, s := range []string{
		"SET 'parallelism.default' = '1'",
		"SET 'pipeline.auto-watermark-interval' = '0'",
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3),
			WATERMARK FOR ts AS ts)
			WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir),
		// The view's WHERE is pushed into the scan.
		"CREATE VIEW notb AS SELECT * FROM ev WHERE k <> 'b'",
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	res, err := tenv.ExecuteSQL(ctx, `SELECT window_start, COUNT(*), SUM(v)
		FROM TABLE(TUMBLE(TABLE notb, DESCRIPTOR(ts), INTERVAL '1' SECOND))
		GROUP BY window_start, window_end`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("got %d rows (%v), want the one window [1 s, 2 s)", len(res.Rows), res.Rows)
	}
	r := res.Rows[0].Row
	if millisOf(r[0]) != evBase+1000 || r[1].(int64) != 1 || r[2].(int64) != 1 {
		t.Errorf("got %v, want [1 s, 2 s) with 1 row summing 1: the row at 1.5 s is late behind the filtered row at 10 s", r)
	}
}
