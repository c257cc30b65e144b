package table_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// event is a row of the generated stream: key, value, event time (ms).
type event struct {
	k  string
	v  int64
	ts int64
}

// genEvents is the Go twin of the ev table's generator (see
// newStreamingEnv): event i has key CHR(97 + i*31 % 5), value i*17 % 100
// - 20 and a time that runs 300 ms an event with up to 4.9 s of jitter,
// less than the watermark's 5 s bound, so that no event is late and the
// brute force need not model lateness.
func genEvents(n int) []event {
	out := make([]event, n)
	for i := range int64(n) {
		out[i] = event{k: string(rune(97 + i*31%5)), v: i*17%100 - 20, ts: evBase + i*300 + i*7919%4900}
	}
	return out
}

const evBase = 1767225600000 // 2026-01-01 00:00:00 UTC

type winKey struct {
	start, end int64
	k          string
}

type winAgg struct{ n, sum, max int64 }

// windowsOf is the brute force: every window of a kind an event belongs to.
func windowsOf(kind string, ts int64) [][2]int64 {
	const size, slide, step = 10_000, 5_000, 2_500
	var out [][2]int64
	switch kind {
	case "TUMBLE":
		s := ts - ts%size
		out = append(out, [2]int64{s, s + size})
	case "HOP":
		for s := ts - ts%slide; s > ts-size; s -= slide {
			out = append(out, [2]int64{s, s + size})
		}
	case "CUMULATE":
		s := ts - ts%size
		for e := s + step; e <= s+size; e += step {
			if e > ts {
				out = append(out, [2]int64{s, e})
			}
		}
	}
	return out
}

// newStreamingEnv declares ev: n events from datagen at 20,000 a second,
// so that watermarks (every 20 ms) advance while the events arrive and
// windows fire mid-stream.
func newStreamingEnv(t *testing.T, n, p int) *table.Environment {
	ctx := context.Background()
	tenv := table.NewEnvironment()
	for _, s := range []string{
		fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
		"SET 'pipeline.auto-watermark-interval' = '20 ms'",
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE ev (
				id BIGINT,
				k AS CHR(CAST(97 + MOD(id * 31, 5) AS INT)),
				v AS CAST(MOD(id * 17, 100) - 20 AS BIGINT),
				ts AS TO_TIMESTAMP_LTZ(%d + id * 300 + MOD(id * 7919, 4900), 3),
				WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
			WITH ('connector' = 'datagen', 'rows-per-second' = '20000', 'fields.id.kind' = 'sequence',
				'fields.id.start' = '0', 'fields.id.end' = '%d')`, evBase, n-1),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return tenv
}

func millisOf(v any) int64 {
	switch v := v.(type) {
	case types.Timestamp:
		return v.Millis
	case types.TimestampLTZ:
		return v.Millis
	}
	panic(fmt.Sprintf("not a timestamp: %T", v))
}

// TestStreamingWindowAggregationsMatchBruteForce runs TUMBLE, HOP and
// CUMULATE aggregations in streaming mode over out-of-order events at
// parallelism 1, 2 and 4, and compares every window's row with a
// brute-force computation.
func TestStreamingWindowAggregationsMatchBruteForce(t *testing.T) {
	const n = 6000
	events := genEvents(n)
	for _, kind := range []string{"TUMBLE", "HOP", "CUMULATE", "legacy TUMBLE"} {
		want := map[winKey]winAgg{}
		for _, e := range events {
			for _, w := range windowsOf(strings.TrimPrefix(kind, "legacy "), e.ts) {
				a, ok := want[winKey{w[0], w[1], e.k}]
				if !ok {
					a.max = e.v
				}
				a.n++
				a.sum += e.v
				a.max = max(a.max, e.v)
				want[winKey{w[0], w[1], e.k}] = a
			}
		}
		args := map[string]string{
			"TUMBLE":   "INTERVAL '10' SECOND",
			"HOP":      "INTERVAL '5' SECOND, INTERVAL '10' SECOND",
			"CUMULATE": "INTERVAL '2.5' SECOND, INTERVAL '10' SECOND",
		}[kind]
		q := fmt.Sprintf(`SELECT window_start, window_end, k, COUNT(*), SUM(v), MAX(v)
			FROM TABLE(%s(TABLE ev, DESCRIPTOR(ts), %s)) GROUP BY window_start, window_end, k`, kind, args)
		if kind == "legacy TUMBLE" {
			q = `SELECT TUMBLE_START(ts, INTERVAL '10' SECOND), TUMBLE_END(ts, INTERVAL '10' SECOND), k, COUNT(*), SUM(v), MAX(v)
				FROM ev GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k`
		}
		for _, p := range []int{1, 2, 4} {
			tenv := newStreamingEnv(t, n, p)
			res, err := tenv.ExecuteSQL(context.Background(), q)
			if err != nil {
				t.Fatalf("%s p=%d: %v", kind, p, err)
			}
			got := map[winKey]winAgg{}
			for _, r := range res.Rows {
				if r.Kind != types.Insert {
					t.Fatalf("%s p=%d: a window aggregation emitted %s", kind, p, r)
				}
				k := winKey{millisOf(r.Row[0]), millisOf(r.Row[1]), r.Row[2].(string)}
				if _, dup := got[k]; dup {
					t.Fatalf("%s p=%d: window %v emitted twice", kind, p, k)
				}
				got[k] = winAgg{r.Row[3].(int64), r.Row[4].(int64), r.Row[5].(int64)}
			}
			if len(got) != len(want) {
				t.Errorf("%s p=%d: %d window rows, want %d", kind, p, len(got), len(want))
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("%s p=%d: window %v: got %+v (present %v), want %+v", kind, p, k, g, ok, w)
					break
				}
			}
		}
	}
}

// TestStreamingGroupByChangelog: an updating GROUP BY over the stream
// emits a changelog (+I, -U, +U) whose final table equals a brute-force
// aggregation, at parallelism 1, 2 and 4.
func TestStreamingGroupByChangelog(t *testing.T) {
	const n = 3000
	events := genEvents(n)
	want := map[string][2]int64{}
	for _, e := range events {
		w := want[e.k]
		want[e.k] = [2]int64{w[0] + 1, w[1] + e.v}
	}
	for _, p := range []int{1, 2, 4} {
		tenv := newStreamingEnv(t, n, p)
		res, err := tenv.ExecuteSQL(context.Background(), "SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k")
		if err != nil {
			t.Fatal(err)
		}
		final := map[string][2]int64{}
		kinds := map[types.RowKind]int{}
		for _, r := range res.Rows {
			kinds[r.Kind]++
			k := r.Row[0].(string)
			v := [2]int64{r.Row[1].(int64), r.Row[2].(int64)}
			switch r.Kind {
			case types.Insert, types.UpdateAfter:
				if _, ok := final[k]; ok {
					t.Fatalf("p=%d: %s for key %s, which is in the table", p, r.Kind, k)
				}
				final[k] = v
			case types.UpdateBefore, types.Delete:
				if final[k] != v {
					t.Fatalf("p=%d: %s %v for key %s, the table holds %v", p, r.Kind, v, k, final[k])
				}
				delete(final, k)
			}
		}
		if len(final) != len(want) {
			t.Fatalf("p=%d: final table has %d keys, want %d", p, len(final), len(want))
		}
		for k, w := range want {
			if final[k] != w {
				t.Errorf("p=%d: key %s: %v, want %v", p, k, final[k], w)
			}
		}
		if kinds[types.UpdateBefore] == 0 || kinds[types.UpdateBefore] != kinds[types.UpdateAfter] {
			t.Errorf("p=%d: changelog kinds %v: want as many -U as +U, and some", p, kinds)
		}
	}
}

// applyChangelog folds a changelog into the table it describes, failing
// on a retraction of a row the table does not hold.
func applyChangelog(t *testing.T, rows []types.Record) map[string]int {
	t.Helper()
	table := map[string]int{}
	for _, r := range rows {
		key := fmt.Sprint(r.Row)
		switch r.Kind {
		case types.Insert, types.UpdateAfter:
			table[key]++
		default:
			if table[key] == 0 {
				t.Fatalf("%s of a row the table does not hold", r)
			}
			table[key]--
			if table[key] == 0 {
				delete(table, key)
			}
		}
	}
	return table
}

// TestStreamingTopNMatchesBruteForce: ROW_NUMBER Top-N per key over the
// stream, whose changelog ends as the brute-force top 3, at p = 1, 2, 4.
func TestStreamingTopNMatchesBruteForce(t *testing.T) {
	const n = 3000
	events := genEvents(n)
	type ranked struct{ v, id int64 }
	byKey := map[string][]ranked{}
	for i, e := range events {
		byKey[e.k] = append(byKey[e.k], ranked{e.v, int64(i)})
	}
	want := map[string]int{}
	for k, rs := range byKey {
		slices.SortFunc(rs, func(a, b ranked) int {
			if a.v != b.v {
				return cmp.Compare(b.v, a.v)
			}
			return cmp.Compare(a.id, b.id)
		})
		for i := range min(3, len(rs)) {
			want[fmt.Sprint(types.Row{k, rs[i].v, rs[i].id, int64(i + 1)})]++
		}
	}
	for _, p := range []int{1, 2, 4} {
		tenv := newStreamingEnv(t, n, p)
		res, err := tenv.ExecuteSQL(context.Background(),
			"SELECT * FROM (SELECT k, v, id, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM ev) WHERE rn <= 3")
		if err != nil {
			t.Fatal(err)
		}
		if got := applyChangelog(t, res.Rows); !maps.Equal(got, want) {
			t.Errorf("p=%d: final top 3\n got %v\nwant %v", p, got, want)
		}
	}
}

// TestStreamingOverMatchesBruteForce: OVER windows ordered by event time
// (ROWS and RANGE frames) give every row the aggregate of its frame.
func TestStreamingOverMatchesBruteForce(t *testing.T) {
	const n = 3000
	events := genEvents(n)
	seen := map[int64]bool{}
	for _, e := range events {
		if seen[e.ts] {
			t.Fatalf("the generator repeats time %d: ROWS frames would depend on arrival order", e.ts)
		}
		seen[e.ts] = true
	}
	want := map[int64][2]int64{}
	for i, e := range events {
		var sum, cnt int64
		var prior []event
		for _, x := range events {
			if x.k == e.k && x.ts < e.ts {
				prior = append(prior, x)
			}
		}
		slices.SortFunc(prior, func(a, b event) int { return cmp.Compare(a.ts, b.ts) })
		for _, x := range prior[max(0, len(prior)-3):] {
			sum += x.v
		}
		sum += e.v
		for _, x := range events {
			if x.k == e.k && x.ts <= e.ts && x.ts >= e.ts-2000 {
				cnt++
			}
		}
		want[int64(i)] = [2]int64{sum, cnt}
	}
	// The rows waiting for the watermark are a time map: on Pebble with a
	// cache far smaller than them they are written back, read ahead and
	// dropped by range.
	for _, run := range []struct {
		p       int
		backend []string
	}{{1, nil}, {2, nil}, {4, nil}, {2, []string{"SET 'state.backend.type' = 'pebble'", "SET 'state.backend.pebble.cache-size' = '2 kb'"}}} {
		p := run.p
		tenv := newStreamingEnv(t, n, p)
		for _, s := range run.backend {
			if _, err := tenv.ExecuteSQL(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		res, err := tenv.ExecuteSQL(context.Background(), `SELECT id,
			SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW),
			COUNT(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)
			FROM ev`)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != n {
			t.Fatalf("p=%d: %d rows, want %d", p, len(res.Rows), n)
		}
		for _, r := range res.Rows {
			id := r.Row[0].(int64)
			if got := [2]int64{r.Row[1].(int64), r.Row[2].(int64)}; got != want[id] {
				t.Fatalf("p=%d: row %d: %v, want %v", p, id, got, want[id])
			}
		}
	}
}

// TestStreamingSubqueriesMatchBruteForce: IN and NOT EXISTS subqueries
// (semi and anti joins) over the stream end with the brute-force rows.
func TestStreamingSubqueriesMatchBruteForce(t *testing.T) {
	const n = 2000
	events := genEvents(n)
	want := map[string]int{}
	for i, e := range events {
		// id IN (ids divisible by 7) AND NOT EXISTS an event of the same
		// key with a larger value among ids divisible by 5.
		if i%7 != 0 {
			continue
		}
		bigger := false
		for j, x := range events {
			if j%5 == 0 && x.k == e.k && x.v > e.v {
				bigger = true
			}
		}
		if !bigger {
			want[fmt.Sprint(types.Row{int64(i), e.k, e.v})]++
		}
	}
	if len(want) == 0 {
		t.Fatal("the brute force selects nothing: the test would prove nothing")
	}
	for _, p := range []int{1, 2} {
		tenv := newStreamingEnv(t, n, p)
		res, err := tenv.ExecuteSQL(context.Background(), `SELECT id, k, v FROM ev a
			WHERE id IN (SELECT id FROM ev WHERE MOD(id, 7) = 0)
			AND NOT EXISTS (SELECT 1 FROM ev b WHERE b.k = a.k AND MOD(b.id, 5) = 0 AND b.v > a.v)`)
		if err != nil {
			t.Fatal(err)
		}
		if got := applyChangelog(t, res.Rows); !maps.Equal(got, want) {
			t.Errorf("p=%d: got %d rows, want %d", p, len(got), len(want))
		}
	}
}

// TestProcessingTimeWindows: a TUMBLE window over PROCTIME() fires by the
// clock on an unbounded source; each second's window counts the rows that
// arrived in it.
func TestProcessingTimeWindows(t *testing.T) {
	ctx := context.Background()
	tenv := table.NewEnvironment()
	for _, s := range []string{
		// One subtask, so that ids reach the window in order.
		"SET 'parallelism.default' = '1'",
		"CREATE TABLE src (id BIGINT, p AS PROCTIME()) WITH ('connector' = 'datagen', 'rows-per-second' = '2000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000')",
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	st, err := parser.ParseStatement("SELECT window_start, window_end, COUNT(*), MIN(id), MAX(id) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(p), INTERVAL '1' SECOND)) GROUP BY window_start, window_end")
	if err != nil {
		t.Fatal(err)
	}
	res, err := tenv.Query(ctx, st.(*parser.QueryStatement))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		res.Job.Cancel()
		for range res.Stream {
		}
		_ = res.Job.Wait()
	}()
	deadline := time.After(20 * time.Second)
	var windows []types.Row
	for len(windows) < 3 {
		select {
		case r, ok := <-res.Stream:
			if !ok {
				t.Fatalf("the query ended after %d windows", len(windows))
			}
			if r.Kind != types.Insert {
				t.Fatalf("a window emitted %s", r)
			}
			windows = append(windows, r.Row)
		case <-deadline:
			t.Fatalf("%d windows in 20 s", len(windows))
		}
	}
	// Windows are one second long and follow each other; the ids they
	// counted are contiguous and the counts add up.
	slices.SortFunc(windows, func(a, b types.Row) int { return cmp.Compare(millisOf(a[0]), millisOf(b[0])) })
	for i, w := range windows {
		start, end := millisOf(w[0]), millisOf(w[1])
		n, lo, hi := w[2].(int64), w[3].(int64), w[4].(int64)
		if end-start != 1000 || n != hi-lo+1 || n <= 0 {
			t.Errorf("window %d: [%d, %d) counted %d rows, ids %d..%d", i, start, end, n, lo, hi)
		}
		if i > 0 && windows[i-1][4].(int64)+1 != lo {
			t.Errorf("window %d starts at id %d, the one before ended at %d", i, lo, windows[i-1][4])
		}
	}
}

// TestStreamingSessionWindowsMatchBruteForce: session windows, as a TVF
// and in the legacy GROUP BY SESSION(...) form, at p = 1, 2, 4.
func TestStreamingSessionWindowsMatchBruteForce(t *testing.T) {
	const n = 4000
	const gap = 1500
	events := genEvents(n)
	// A session is a key's run of events less than the gap apart:
	// [first, last + gap).
	byKey := map[string][]event{}
	for _, e := range events {
		byKey[e.k] = append(byKey[e.k], e)
	}
	want := map[string]int{}
	for k, evs := range byKey {
		slices.SortFunc(evs, func(a, b event) int { return cmp.Compare(a.ts, b.ts) })
		start, last, cnt, sum := evs[0].ts, evs[0].ts, int64(0), int64(0)
		for i, e := range evs {
			if i > 0 && e.ts >= last+gap {
				want[fmt.Sprint(k, start, last+gap, cnt, sum)]++
				start, cnt, sum = e.ts, 0, 0
			}
			last = e.ts
			cnt++
			sum += e.v
		}
		want[fmt.Sprint(k, start, last+gap, cnt, sum)]++
	}
	if len(want) < 20 {
		t.Fatalf("only %d sessions: the data do not exercise sessions", len(want))
	}
	queries := map[string]string{
		"tvf": `SELECT k, window_start, window_end, COUNT(*), SUM(v)
			FROM TABLE(SESSION(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1.5' SECOND))
			GROUP BY k, window_start, window_end`,
		"legacy": `SELECT k, SESSION_START(ts, INTERVAL '1.5' SECOND), SESSION_END(ts, INTERVAL '1.5' SECOND), COUNT(*), SUM(v)
			FROM ev GROUP BY k, SESSION(ts, INTERVAL '1.5' SECOND)`,
	}
	for name, q := range queries {
		for _, p := range []int{1, 2, 4} {
			tenv := newStreamingEnv(t, n, p)
			res, err := tenv.ExecuteSQL(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got := map[string]int{}
			for _, r := range res.Rows {
				if r.Kind != types.Insert {
					t.Fatalf("%s p=%d: a session window emitted %s", name, p, r)
				}
				got[fmt.Sprint(r.Row[0], millisOf(r.Row[1]), millisOf(r.Row[2]), r.Row[3], r.Row[4])]++
			}
			if !maps.Equal(got, want) {
				var diff []string
				for k, n := range got {
					if want[k] != n {
						diff = append(diff, fmt.Sprintf("got %s x%d", k, n))
					}
				}
				for k, n := range want {
					if got[k] != n {
						diff = append(diff, fmt.Sprintf("want %s x%d", k, n))
					}
				}
				slices.Sort(diff)
				t.Errorf("%s p=%d: %d sessions, want %d; differences: %v", name, p, len(got), len(want), diff)
			}
		}
	}
}

// TestProcessingTimeTemporalJoin: each row joins the dimension table as it
// is when the row arrives (FOR SYSTEM_TIME AS OF a processing-time
// attribute), as Nexmark q13 does; rows of keys the table lacks are
// dropped (INNER) or padded (LEFT).
func TestProcessingTimeTemporalJoin(t *testing.T) {
	dir := t.TempDir()
	var dim strings.Builder
	for k := range 10 {
		if k == 3 {
			continue // no row for key 3
		}
		fmt.Fprintf(&dim, "%d,name-%d\n", k, k)
	}
	if err := os.WriteFile(filepath.Join(dir, "dim.csv"), []byte(dim.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 6000
	tenv := table.NewEnvironment()
	for _, s := range []string{
		"SET 'parallelism.default' = '2'",
		fmt.Sprintf("CREATE TABLE dim (k BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')", dir),
		fmt.Sprintf("CREATE TABLE src (id BIGINT, p AS PROCTIME()) WITH ('connector' = 'datagen', 'rows-per-second' = '5000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d')", n-1),
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, join := range []string{"JOIN", "LEFT JOIN"} {
		res, err := tenv.ExecuteSQL(ctx, "SELECT s.id, d.k, d.name FROM src AS s "+join+" dim FOR SYSTEM_TIME AS OF s.p AS d ON MOD(s.id, 10) = d.k")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for _, r := range res.Rows {
			if r.Kind != types.Insert {
				t.Fatalf("%s: a temporal join emitted %s", join, r)
			}
			id := r.Row[0].(int64)
			if seen[id] {
				t.Fatalf("%s: id %d joined twice", join, id)
			}
			seen[id] = true
			switch {
			case r.Row[1] == nil:
				if join == "JOIN" || id%10 != 3 && id >= 2500 {
					t.Fatalf("%s: id %d unmatched", join, id)
				}
			case r.Row[1].(int64) != id%10 || r.Row[2].(string) != fmt.Sprintf("name-%d", id%10):
				t.Fatalf("%s: id %d joined %v", join, id, r.Row)
			}
		}
		// The dimension loads within the first half second (2,500 rows
		// at 5,000 a second); every later row of a known key must join.
		for id := int64(2500); id < n; id++ {
			if id%10 != 3 && !seen[id] {
				t.Fatalf("%s: id %d missing", join, id)
			}
			if join == "LEFT JOIN" && !seen[id] {
				t.Fatalf("%s: id %d missing", join, id)
			}
		}
	}
}

// TestStreamingIntervalJoinMatchesBruteForce: a join of two streams whose
// times must lie within an interval of each other (an interval join),
// against brute force, at p = 1, 2, 4.
func TestStreamingIntervalJoinMatchesBruteForce(t *testing.T) {
	const n = 1500
	events := genEvents(n)
	want := map[string]int{}
	for i, a := range events {
		if i%3 != 0 {
			continue
		}
		for j, b := range events {
			if j%3 != 1 || a.k != b.k {
				continue
			}
			if b.ts >= a.ts-2000 && b.ts <= a.ts+4000 {
				want[fmt.Sprint(types.Row{int64(i), int64(j)})]++
			}
		}
	}
	if len(want) < 100 {
		t.Fatalf("only %d pairs: the data do not exercise the join", len(want))
	}
	for _, p := range []int{1, 2, 4} {
		tenv := newStreamingEnv(t, n, p)
		res, err := tenv.ExecuteSQL(context.Background(), `SELECT a.id, b.id
			FROM ev a JOIN ev b ON a.k = b.k
			WHERE MOD(a.id, 3) = 0 AND MOD(b.id, 3) = 1
			AND b.ts BETWEEN a.ts - INTERVAL '2' SECOND AND a.ts + INTERVAL '4' SECOND`)
		if err != nil {
			t.Fatal(err)
		}
		if got := applyChangelog(t, res.Rows); !maps.Equal(got, want) {
			t.Errorf("p=%d: %d pairs, want %d", p, len(got), len(want))
		}
	}
}
