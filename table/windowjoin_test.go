package table_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
)

// windowJoinCase is a window join over two filtered windowed views of ev:
// left rows have id % 3 = 0, right rows id % 3 = 1 and (for the outer
// joins, so that some left rows find no partner) v > 0.
type windowJoinCase struct {
	name, kind, join string
	rightPositive    bool
}

// bruteWindowJoin pairs events of the same key in the same window, and
// pads the left (right) rows without a partner for LEFT and FULL (RIGHT
// and FULL) joins. A result row is "lid rid window_start" with NULL for a
// missing side.
func bruteWindowJoin(events []event, c windowJoinCase) map[string]int {
	type side struct {
		id  int
		win [2]int64
		k   string
	}
	var ls, rs []side
	for i, e := range events {
		for _, w := range windowsOf(c.kind, e.ts) {
			switch {
			case i%3 == 0:
				ls = append(ls, side{i, w, e.k})
			case i%3 == 1 && (!c.rightPositive || e.v > 0):
				rs = append(rs, side{i, w, e.k})
			}
		}
	}
	want := map[string]int{}
	rMatched := make([]bool, len(rs))
	for _, l := range ls {
		matched := false
		for ri, r := range rs {
			if l.win == r.win && l.k == r.k {
				matched = true
				rMatched[ri] = true
				if c.join != "SEMI" && c.join != "ANTI" {
					want[fmt.Sprintf("%d %d %d", l.id, r.id, l.win[0])]++
				}
			}
		}
		switch {
		case c.join == "SEMI" && matched, c.join == "ANTI" && !matched:
			want[fmt.Sprintf("%d %d", l.id, l.win[0])]++
		case !matched && (c.join == "LEFT" || c.join == "FULL"):
			want[fmt.Sprintf("%d NULL %d", l.id, l.win[0])]++
		}
	}
	if c.join == "RIGHT" || c.join == "FULL" {
		for ri, r := range rs {
			if !rMatched[ri] {
				want[fmt.Sprintf("NULL %d %d", r.id, r.win[0])]++
			}
		}
	}
	return want
}

func windowArgs(kind string) string {
	return map[string]string{
		"TUMBLE":   "INTERVAL '10' SECOND",
		"HOP":      "INTERVAL '5' SECOND, INTERVAL '10' SECOND",
		"CUMULATE": "INTERVAL '2.5' SECOND, INTERVAL '10' SECOND",
	}[kind]
}

func windowJoinQuery(c windowJoinCase) string {
	win := fmt.Sprintf("TABLE(%s(TABLE ev, DESCRIPTOR(ts), %s))", c.kind, windowArgs(c.kind))
	rightCond := "MOD(id, 3) = 1"
	if c.rightPositive {
		rightCond += " AND v > 0"
	}
	if c.join == "SEMI" {
		return fmt.Sprintf(`SELECT L.id, L.window_start FROM (SELECT * FROM %s WHERE MOD(id, 3) = 0) L
			WHERE L.k IN (SELECT R.k FROM (SELECT * FROM %s WHERE %s) R
				WHERE L.window_start = R.window_start AND L.window_end = R.window_end)`, win, win, rightCond)
	}
	if c.join == "ANTI" {
		return fmt.Sprintf(`SELECT L.id, L.window_start FROM (SELECT * FROM %s WHERE MOD(id, 3) = 0) L
			WHERE NOT EXISTS (SELECT * FROM (SELECT * FROM %s WHERE %s) R
				WHERE L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k)`, win, win, rightCond)
	}
	if c.join == "WHERE" {
		return fmt.Sprintf(`SELECT L.id, R.id, L.window_start FROM
			(SELECT * FROM %s WHERE MOD(id, 3) = 0) L, (SELECT * FROM %s WHERE %s) R
			WHERE L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k`, win, win, rightCond)
	}
	start := "L.window_start"
	if c.join == "RIGHT" || c.join == "FULL" {
		start = "COALESCE(L.window_start, R.window_start)"
	}
	return fmt.Sprintf(`SELECT L.id, R.id, %s FROM
		(SELECT * FROM %s WHERE MOD(id, 3) = 0) L
		%s JOIN (SELECT * FROM %s WHERE %s) R
		ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k`, start, win, c.join, win, rightCond)
}

func windowJoinRow(r types.Row) string {
	s := make([]string, len(r))
	for i, v := range r {
		switch v := v.(type) {
		case nil:
			s[i] = "NULL"
		case types.Timestamp, types.TimestampLTZ:
			s[i] = fmt.Sprint(millisOf(v))
		default:
			s[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(s, " ")
}

// TestStreamingWindowJoinMatchesBruteForce runs window joins (TUMBLE,
// HOP, CUMULATE; INNER, LEFT, RIGHT, FULL and a semi join through IN) over
// out-of-order events at parallelism 1, 2 and 4 and compares them with a
// brute force. A window join emits each window's result once, when the
// watermark passes its end: its output has inserts only.
func TestStreamingWindowJoinMatchesBruteForce(t *testing.T) {
	const n = 3000
	events := genEvents(n)
	cases := []windowJoinCase{
		{"tumble inner", "TUMBLE", "INNER", false},
		{"tumble left", "TUMBLE", "LEFT", true},
		{"hop full", "HOP", "FULL", true},
		{"cumulate right", "CUMULATE", "RIGHT", true},
		{"tumble semi", "TUMBLE", "SEMI", true},
		{"hop anti", "HOP", "ANTI", true},
		{"cumulate comma where", "CUMULATE", "WHERE", false},
	}
	for _, c := range cases {
		want := bruteWindowJoin(events, c)
		if len(want) < 50 {
			t.Fatalf("%s: only %d rows: the data do not exercise the join", c.name, len(want))
		}
		q := windowJoinQuery(c)
		for _, p := range []int{1, 2, 4} {
			if testing.Short() && p != 2 {
				continue
			}
			tenv := newStreamingEnv(t, n, p)
			plan, err := tenv.ExecuteSQL(context.Background(), "EXPLAIN "+q)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !strings.Contains(plan.Text, "WindowJoin(") {
				t.Fatalf("%s: not planned as a window join:\n%s", c.name, plan.Text)
			}
			res, err := tenv.ExecuteSQL(context.Background(), q)
			if err != nil {
				t.Fatalf("%s p=%d: %v", c.name, p, err)
			}
			if res.Updating {
				t.Errorf("%s p=%d: the result is declared updating", c.name, p)
			}
			got := map[string]int{}
			for _, r := range res.Rows {
				if r.Kind != types.Insert {
					t.Fatalf("%s p=%d: a window join emitted %s", c.name, p, r)
				}
				got[windowJoinRow(r.Row)]++
			}
			if !maps.Equal(got, want) {
				missing, extra := 0, 0
				var example string
				for k, v := range want {
					if got[k] != v {
						missing++
						example = fmt.Sprintf("%q: got %d, want %d", k, got[k], v)
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok {
						extra++
						example = fmt.Sprintf("%q: got %d, want 0", k, got[k])
					}
				}
				t.Errorf("%s p=%d: %d rows differ, %d unexpected (of %d); e.g. %s", c.name, p, missing, extra, len(want), example)
			}
		}
	}
}

// TestWindowJoinIntoAppendOnlySink: a window join can be written to a sink
// that takes appends only (filesystem), which refuses a regular join of
// the same inputs as updating.
func TestWindowJoinIntoAppendOnlySink(t *testing.T) {
	const n = 1500
	ctx := context.Background()
	c := windowJoinCase{"tumble left", "TUMBLE", "LEFT", true}
	want := bruteWindowJoin(genEvents(n), c)
	tenv := newStreamingEnv(t, n, 2)
	dir := t.TempDir()
	for _, s := range []string{
		"SET 'table.dml-sync' = 'true'",
		fmt.Sprintf(`CREATE TABLE out (lid BIGINT, rid BIGINT, ws TIMESTAMP_LTZ(3))
			WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := tenv.ExecuteSQL(ctx, "INSERT INTO out "+windowJoinQuery(c)); err != nil {
		t.Fatalf("window join into an append-only sink: %v", err)
	}
	lines := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines += strings.Count(string(b), "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, v := range want {
		total += v
	}
	if lines != total {
		t.Errorf("the sink has %d rows, want %d", lines, total)
	}
	// The same join without the window condition is a regular outer join,
	// whose updates the sink refuses.
	regular := strings.Replace(windowJoinQuery(c), "L.window_start = R.window_start AND L.window_end = R.window_end AND ", "", 1)
	if _, err := tenv.ExecuteSQL(ctx, "INSERT INTO out "+regular); err == nil || !strings.Contains(err.Error(), "update changes") {
		t.Errorf("a regular outer join into an append-only sink: got %v, want a refusal", err)
	}
}

// TestStreamingWindowJoinOfWindowAggregates: two window aggregations
// joined on their windows and key are a window join too.
func TestStreamingWindowJoinOfWindowAggregates(t *testing.T) {
	const n = 3000
	events := genEvents(n)
	type wk struct {
		start int64
		k     string
	}
	lc, rc := map[wk]int64{}, map[wk]int64{}
	for i, e := range events {
		w := windowsOf("TUMBLE", e.ts)[0]
		switch i % 3 {
		case 0:
			lc[wk{w[0], e.k}]++
		case 1:
			rc[wk{w[0], e.k}] += e.v
		}
	}
	want := map[string]int{}
	for k, c := range lc {
		if s, ok := rc[k]; ok {
			want[fmt.Sprintf("%d %s %d %d", k.start, k.k, c, s)]++
		}
	}
	q := `SELECT L.window_start, L.k, L.c, R.s FROM
		(SELECT window_start, window_end, k, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND))
			WHERE MOD(id, 3) = 0 GROUP BY window_start, window_end, k) L
		JOIN (SELECT window_start, window_end, k, SUM(v) AS s FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND))
			WHERE MOD(id, 3) = 1 GROUP BY window_start, window_end, k) R
		ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k`
	for _, p := range []int{1, 2, 4} {
		tenv := newStreamingEnv(t, n, p)
		plan, err := tenv.ExecuteSQL(context.Background(), "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.Text, "WindowJoin(") {
			t.Fatalf("not planned as a window join:\n%s", plan.Text)
		}
		res, err := tenv.ExecuteSQL(context.Background(), q)
		if err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		got := map[string]int{}
		for _, r := range res.Rows {
			if r.Kind != types.Insert {
				t.Fatalf("p=%d: a window join emitted %s", p, r)
			}
			got[windowJoinRow(r.Row)]++
		}
		if !maps.Equal(got, want) {
			t.Errorf("p=%d: %d rows, want %d", p, len(got), len(want))
		}
	}
}

// TestStreamingJoinNullKeysNeverMatch: in a self-join, a row whose key is
// NULL must not meet its own copy from the other side (both sides' NULL
// keys once shared a state key).
func TestStreamingJoinNullKeysNeverMatch(t *testing.T) {
	tenv := newStreamingEnv(t, 10, 1)
	res, err := tenv.ExecuteSQL(context.Background(), `WITH t AS (SELECT * FROM (VALUES (1, CAST(NULL AS INT)), (2, 5)) AS v(id, x))
		SELECT a.id, b.id FROM t a JOIN t b ON a.x = b.x`)
	if err != nil {
		t.Fatal(err)
	}
	got := applyChangelog(t, res.Rows)
	if want := map[string]int{"[2 2]": 1}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestStreamingWindowJoinDropsLateRows: rows whose window was joined long
// before they arrive (their time is in the first window, they come well
// after the watermark passed it) are dropped, as in Flink, and do not
// make the window's result a second time.
func TestStreamingWindowJoinDropsLateRows(t *testing.T) {
	const n = 3000
	late := func(id int) bool { return id >= 1500 && id%10 == 9 }
	events := genEvents(n)
	var onTime []event
	lateIDs := map[int]bool{}
	for i, e := range events {
		if late(i) {
			lateIDs[i] = true
			e.ts = evBase + int64(i%50)*100
		}
		onTime = append(onTime, e)
	}
	c := windowJoinCase{"tumble inner", "TUMBLE", "INNER", false}
	all := bruteWindowJoin(onTime, c)
	want := map[string]int{}
	dropped := 0
	for k, v := range all {
		var l, r, ws int
		fmt.Sscanf(k, "%d %d %d", &l, &r, &ws)
		if lateIDs[l] || lateIDs[r] {
			dropped++
			continue
		}
		want[k] = v
	}
	if dropped < 10 {
		t.Fatalf("only %d pairs with a late row: the data do not exercise lateness", dropped)
	}
	tenv := newStreamingEnv(t, n, 2)
	ddl := fmt.Sprintf(`CREATE TABLE evl (
			id BIGINT,
			k AS CHR(CAST(97 + MOD(id * 31, 5) AS INT)),
			v AS CAST(MOD(id * 17, 100) - 20 AS BIGINT),
			ts AS TO_TIMESTAMP_LTZ(CASE WHEN id >= 1500 AND MOD(id, 10) = 9 THEN %d + MOD(id, 50) * 100
				ELSE %d + id * 300 + MOD(id * 7919, 4900) END, 3),
			WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
		WITH ('connector' = 'datagen', 'rows-per-second' = '5000', 'fields.id.kind' = 'sequence',
			'fields.id.start' = '0', 'fields.id.end' = '%d')`, evBase, evBase, n-1)
	if _, err := tenv.ExecuteSQL(context.Background(), ddl); err != nil {
		t.Fatal(err)
	}
	q := strings.ReplaceAll(windowJoinQuery(c), "TABLE ev,", "TABLE evl,")
	res, err := tenv.ExecuteSQL(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range res.Rows {
		if r.Kind != types.Insert {
			t.Fatalf("a window join emitted %s", r)
		}
		got[windowJoinRow(r.Row)]++
	}
	if !maps.Equal(got, want) {
		extra := 0
		for k, v := range got {
			if want[k] != v {
				extra++
			}
		}
		t.Errorf("%d rows, want %d (%d rows differ)", len(got), len(want), extra)
	}
}
