package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// Watermarks of a table's WATERMARK FOR as Flink's table runtime emits
// them (issue 32): with pipeline.auto-watermark-interval 0, after every
// record that advances the watermark, so that which records are late
// does not depend on timing; before, no watermark came at all until the
// input ended, and nothing was ever late.

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

// flinkTumbleRule is the model of what Flink's runtime gives at
// parallelism 1 with the watermark emitted at every advance: a record
// reaches the window operator before the watermark it advances; it is
// late, and dropped, when its window's end - 1 is at or below the
// watermark the operator has seen; the watermark starts at 0 and is the
// largest ts - delay so far.
func flinkTumbleRule(events []lateEvent, size, delay int64) (map[winKey]winAgg, int) {
	out := map[winKey]winAgg{}
	var wm int64
	late := 0
	for _, e := range events {
		start := e.ts - e.ts%size
		if start+size-1 <= wm {
			late++
		} else {
			k := winKey{start, start + size, e.k}
			a, ok := out[k]
			if !ok {
				a.max = e.v
			}
			a.n++
			a.sum += e.v
			a.max = max(a.max, e.v)
			out[k] = a
		}
		wm = max(wm, e.ts-delay)
	}
	return out, late
}

func TestWindowTVFDropsLateRowsAsFlink(t *testing.T) {
	const n, size, delay = 3000, 1000, 2000
	events := outOfOrderEvents(n)
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%s,%d,%s\n", e.k, e.v, time.UnixMilli(e.ts).UTC().Format("2006-01-02 15:04:05.000"))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	want, late := flinkTumbleRule(events, size, delay)
	if late < n/10 {
		t.Fatalf("the input has only %d late records of %d: not a test of lateness", late, n)
	}
	for _, q := range []struct{ name, sql string }{
		{"TUMBLE", `SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
			FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k`},
		{"legacy TUMBLE", `SELECT TUMBLE_START(ts, INTERVAL '1' SECOND), TUMBLE_END(ts, INTERVAL '1' SECOND), k, COUNT(*), SUM(v), MAX(v)
			FROM ev GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k`},
	} {
		t.Run(q.name, func(t *testing.T) {
			ctx := context.Background()
			tenv := table.NewEnvironment()
			for _, s := range []string{
				"SET 'parallelism.default' = '1'",
				"SET 'pipeline.auto-watermark-interval' = '0'",
				"SET 'table.local-time-zone' = 'UTC'",
				fmt.Sprintf(`CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3),
					WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
					WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir),
			} {
				if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			res, err := tenv.ExecuteSQL(ctx, q.sql)
			if err != nil {
				t.Fatal(err)
			}
			got := map[winKey]winAgg{}
			for _, r := range res.Rows {
				if r.Kind != types.Insert {
					t.Fatalf("a window aggregation emitted %s", r)
				}
				k := winKey{millisOf(r.Row[0]), millisOf(r.Row[1]), r.Row[2].(string)}
				got[k] = winAgg{r.Row[3].(int64), r.Row[4].(int64), r.Row[5].(int64)}
			}
			var gotN, wantN int64
			for _, a := range got {
				gotN += a.n
			}
			for _, a := range want {
				wantN += a.n
			}
			if gotN != wantN || len(got) != len(want) {
				t.Errorf("%d rows counting %d records, want %d rows counting %d (%d of %d records late by Flink's rule)",
					len(got), gotN, len(want), wantN, late, n)
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("window %v: got %+v (present %v), want %+v", k, g, ok, w)
					break
				}
			}
		})
	}
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
