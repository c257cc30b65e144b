package table_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// The generated data of the event-time temporal join tests. Orders: key
// CHR(97 + id*7 % 6) ('a'..'f'), amount, and a time that runs 300 ms an
// order with up to 4.8 s of jitter in steps of 100 ms (below the 5 s
// watermark bound, so no order is late). Rates: key CHR(97 + id*3 % 5)
// ('a'..'e': 'f' never has a rate), a time that starts 2 s later and runs
// 600 ms a rate with up to 4.8 s of jitter (jitterRates) in steps of 100
// ms, so that times of orders and rates often coincide, a key's versions
// arrive out of order and now and then two share a time; the rate is a
// function of key and time, so that versions at the same time are the
// same version.
const (
	ordersN      = 3000
	ratesN       = 1500
	jitterRates  = 49 // rate jitter in 100 ms steps: 0..4.8 s
	jitterSorted = 23 // 0..2.2 s, less than the 2.4 s between a key's rates in rates_log
)

type tjOrder struct {
	id, amount int64
	k          string
	ts         int64
}

type tjRate struct {
	k        string
	rate, ts int64
}

func genOrders() []tjOrder {
	out := make([]tjOrder, ordersN)
	for i := range int64(ordersN) {
		out[i] = tjOrder{id: i, k: string(rune(97 + i*7%6)), amount: i*13%50 + 1, ts: evBase + i*300 + i*7919%49*100}
	}
	return out
}

// genRates generates the rates of the rates table (sorted false) or of
// rates_log (sorted true: key CHR(97 + id % 4), so that a key's rates all
// come from one source subtask at p = 1, 2, 4, and jitter below the 2.4 s
// between a key's rates: each key's versions arrive in order).
func genRates(sorted bool) []tjRate {
	out := make([]tjRate, ratesN)
	for i := range int64(ratesN) {
		k, jitter := i*3%5, int64(jitterRates)
		if sorted {
			k, jitter = i%4, jitterSorted
		}
		off := 2000 + i*600 + (i*i*13+i*7)%jitter*100
		out[i] = tjRate{k: string(rune(97 + k)), rate: (off*31 + k*1000) % 100003, ts: evBase + off}
	}
	return out
}

// ratesDDL declares a rates table over datagen, with the primary key or
// without, as genRates generates it.
func ratesDDL(name string, sorted, pk bool) string {
	key, jitter := "MOD(id * 3, 5)", jitterRates
	if sorted {
		key, jitter = "MOD(id, 4)", jitterSorted
	}
	off := fmt.Sprintf("(2000 + id * 600 + MOD(id * id * 13 + id * 7, %d) * 100)", jitter)
	extra := ""
	if pk {
		extra = ", PRIMARY KEY (rk) NOT ENFORCED"
	}
	return fmt.Sprintf(`CREATE TABLE %s (
			id BIGINT,
			rk AS CHR(CAST(97 + %s AS INT)),
			rate AS CAST(MOD(%s * 31 + %s * 1000, 100003) AS BIGINT),
			rt AS TO_TIMESTAMP_LTZ(%d + %s, 3),
			WATERMARK FOR rt AS rt - INTERVAL '5' SECOND%s)
		WITH ('connector' = 'datagen', 'rows-per-second' = '10000', 'fields.id.kind' = 'sequence',
			'fields.id.start' = '0', 'fields.id.end' = '%d')`, name, key, off, key, evBase, off, extra, ratesN-1)
}

func newTemporalEnv(t *testing.T, p int) *table.Environment {
	ctx := context.Background()
	tenv := table.NewEnvironment()
	for _, s := range []string{
		fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
		"SET 'pipeline.auto-watermark-interval' = '20 ms'",
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE orders (
				id BIGINT,
				k AS CHR(CAST(97 + MOD(id * 7, 6) AS INT)),
				amount AS CAST(MOD(id * 13, 50) + 1 AS BIGINT),
				ot AS TO_TIMESTAMP_LTZ(%d + id * 300 + MOD(id * 7919, 49) * 100, 3),
				WATERMARK FOR ot AS ot - INTERVAL '5' SECOND)
			WITH ('connector' = 'datagen', 'rows-per-second' = '20000', 'fields.id.kind' = 'sequence',
				'fields.id.start' = '0', 'fields.id.end' = '%d')`, evBase, ordersN-1),
		ratesDDL("rates", false, true),
		// A versioned view deduplicates an append-only table to the
		// latest row per key. Deduplication drops a version that arrives
		// after a later one (as Flink's does), so this table's versions
		// come in order per key.
		ratesDDL("rates_log", true, false),
		`CREATE VIEW versioned_rates AS SELECT rk, rate, rt FROM (
			SELECT *, ROW_NUMBER() OVER (PARTITION BY rk ORDER BY rt DESC) AS rn FROM rates_log) WHERE rn = 1`,
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return tenv
}

// bruteTemporal joins each order with the latest rate of its key at or
// before its time.
func bruteTemporal(orders []tjOrder, rates []tjRate, left bool) map[string]int {
	want := map[string]int{}
	for _, o := range orders {
		var best *tjRate
		for i, r := range rates {
			if r.k == o.k && r.ts <= o.ts && (best == nil || r.ts > best.ts) {
				best = &rates[i]
			}
		}
		switch {
		case best != nil:
			want[fmt.Sprint(o.id, o.k, o.amount, o.ts, best.k, best.rate, best.ts)]++
		case left:
			want[fmt.Sprint(o.id, o.k, o.amount, o.ts, nil, nil, nil)]++
		}
	}
	return want
}

func rowKey(r types.Row) string {
	parts := make([]any, len(r))
	for i, v := range r {
		switch v.(type) {
		case types.Timestamp, types.TimestampLTZ:
			parts[i] = millisOf(v)
		default:
			parts[i] = v
		}
	}
	return fmt.Sprint(parts...)
}

// TestEventTimeTemporalJoinMatchesBruteForce: orders joined with the rate
// of their currency valid at the order's time (FOR SYSTEM_TIME AS OF the
// order's rowtime), INNER and LEFT, against a versioned table (primary
// key and watermark) and a versioned view (deduplication), at p = 1, 2, 4.
func TestEventTimeTemporalJoinMatchesBruteForce(t *testing.T) {
	orders := genOrders()
	checkData(t, orders)
	for _, right := range []string{"rates", "versioned_rates"} {
		rates := genRates(right == "versioned_rates")
		for _, join := range []string{"JOIN", "LEFT JOIN"} {
			want := bruteTemporal(orders, rates, join == "LEFT JOIN")
			q := fmt.Sprintf(`SELECT o.id, o.k, o.amount, o.ot, r.rk, r.rate, r.rt
				FROM orders AS o %s %s FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk`, join, right)
			for _, p := range []int{1, 2, 4} {
				res, err := newTemporalEnv(t, p).ExecuteSQL(context.Background(), q)
				if err != nil {
					t.Fatalf("%s %s p=%d: %v", join, right, p, err)
				}
				got := map[string]int{}
				for _, r := range res.Rows {
					if r.Kind != types.Insert {
						t.Fatalf("%s %s p=%d: the join emitted %s", join, right, p, r)
					}
					got[rowKey(r.Row)]++
				}
				if !maps.Equal(got, want) {
					t.Errorf("%s %s p=%d: %d rows, want %s; %s", join, right, p, len(res.Rows), ordersOf(want), diff(got, want))
				}
			}
		}
	}
}

// checkData makes sure the data exercise what the test is about.
func checkData(t *testing.T, orders []tjOrder) {
	t.Helper()
	rates := genRates(false)
	times := map[int64]bool{}
	versions := map[string]bool{}
	sameKeySameTime, outOfOrder := 0, 0
	last := map[string]int64{}
	for _, r := range rates {
		v := fmt.Sprint(r.k, r.ts)
		if versions[v] {
			sameKeySameTime++
		}
		versions[v] = true
		times[r.ts] = true
		if r.ts < last[r.k] {
			outOfOrder++
		}
		last[r.k] = max(last[r.k], r.ts)
	}
	equalToOrder, before := 0, 0
	first := map[string]int64{}
	for _, r := range rates {
		if f, ok := first[r.k]; !ok || r.ts < f {
			first[r.k] = r.ts
		}
	}
	for _, o := range orders {
		if times[o.ts] {
			equalToOrder++
		}
		if f, ok := first[o.k]; !ok || o.ts < f {
			before++
		}
	}
	if sameKeySameTime == 0 || outOfOrder < 50 || equalToOrder < 50 || before < 50 {
		t.Fatalf("the data do not exercise the join: %d rates at the time of another of their key, %d out of order, %d orders at a rate's time, %d orders before any rate of their key",
			sameKeySameTime, outOfOrder, equalToOrder, before)
	}
}

func ordersOf(m map[string]int) string {
	n := 0
	for _, c := range m {
		n += c
	}
	return fmt.Sprintf("%d distinct", n)
}

func diff(got, want map[string]int) string {
	var d []string
	for k, n := range got {
		if want[k] != n {
			d = append(d, fmt.Sprintf("got %s x%d (want %d)", k, n, want[k]))
		}
	}
	for k, n := range want {
		if _, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("missing %s x%d", k, n))
		}
	}
	slices.Sort(d)
	if len(d) > 10 {
		d = append(d[:10], fmt.Sprintf("... %d more", len(d)-10))
	}
	return strings.Join(d, "; ")
}

// TestEventTimeTemporalJoinErrors: the right side must be a versioned
// table and the condition must cover its primary key, as Flink requires.
func TestEventTimeTemporalJoinErrors(t *testing.T) {
	tenv := newTemporalEnv(t, 1)
	ctx := context.Background()
	for _, s := range []string{
		`CREATE TABLE no_time (rk STRING, rate BIGINT, PRIMARY KEY (rk) NOT ENFORCED) WITH ('connector' = 'datagen', 'number-of-rows' = '1')`,
	} {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{
		"SELECT * FROM orders AS o JOIN rates_log FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk":    "Temporal Table Join requires primary key in versioned table, but no primary key can be found",
		"SELECT * FROM orders AS o JOIN no_time FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk":      "Event-Time Temporal Table Join requires both primary key and row time attribute in versioned table, but no row time attribute can be found.",
		"SELECT * FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.amount = r.rate": "Temporal table's primary key [rk] must be included in the equivalence condition of temporal join, but current temporal join condition is [amount=rate].",
		"SELECT * FROM orders AS o FULL JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk":   "a temporal join is INNER or LEFT",
	} {
		_, err := tenv.ExecuteSQL(ctx, q)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", q, err, want)
		}
	}
	res, err := tenv.ExecuteSQL(ctx, "EXPLAIN SELECT * FROM orders AS o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk AND r.rate > 10")
	if err != nil {
		t.Fatal(err)
	}
	if plan := res.Text; !strings.Contains(plan, "TemporalJoin(joinType=[LeftOuterJoin], where=[k = rk AND __TEMPORAL_JOIN_CONDITION(ot, rt)") {
		t.Errorf("EXPLAIN shows no TemporalJoin:\n%s", plan)
	}
}

// TestEventTimeTemporalJoinKeepsTime: the left rowtime stays a time
// attribute after an event-time temporal join, so that a window over the
// join's output aggregates every joined row.
func TestEventTimeTemporalJoinKeepsTime(t *testing.T) {
	orders := genOrders()
	rates := genRates(false)
	want := map[string]int{}
	sums := map[[2]int64]int64{}
	for _, o := range orders {
		var best *tjRate
		for i, r := range rates {
			if r.k == o.k && r.ts <= o.ts && (best == nil || r.ts > best.ts) {
				best = &rates[i]
			}
		}
		if best != nil {
			w := o.ts - o.ts%10_000
			sums[[2]int64{w, int64(o.k[0])}] += o.amount * best.rate
		}
	}
	for k, s := range sums {
		want[fmt.Sprint(k[0], string(rune(k[1])), s)]++
	}
	for _, p := range []int{1, 4} {
		tenv := newTemporalEnv(t, p)
		ctx := context.Background()
		if _, err := tenv.ExecuteSQL(ctx, `CREATE VIEW joined AS SELECT o.ot, o.k, o.amount * r.rate AS cost
			FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk`); err != nil {
			t.Fatal(err)
		}
		res, err := tenv.ExecuteSQL(ctx, `SELECT window_start, k, SUM(cost)
			FROM TABLE(TUMBLE(TABLE joined, DESCRIPTOR(ot), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, k`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range res.Rows {
			if r.Kind != types.Insert {
				t.Fatalf("p=%d: a window emitted %s", p, r)
			}
			got[fmt.Sprint(millisOf(r.Row[0]), r.Row[1], r.Row[2])]++
		}
		if !maps.Equal(got, want) {
			t.Errorf("p=%d: %d windows, want %d; %s", p, len(got), len(want), diff(got, want))
		}
	}
}

// TestEventTimeTemporalJoinBatch: the same join in batch mode, where the
// inputs end and every left row joins once they have.
func TestEventTimeTemporalJoinBatch(t *testing.T) {
	orders := genOrders()
	for _, join := range []string{"JOIN", "LEFT JOIN"} {
		want := bruteTemporal(orders, genRates(false), join == "LEFT JOIN")
		tenv := newTemporalEnv(t, 2)
		if _, err := tenv.ExecuteSQL(context.Background(), "SET 'execution.runtime-mode' = 'batch'"); err != nil {
			t.Fatal(err)
		}
		res, err := tenv.ExecuteSQL(context.Background(), fmt.Sprintf(`SELECT o.id, o.k, o.amount, o.ot, r.rk, r.rate, r.rt
			FROM orders AS o %s rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.k = r.rk`, join))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range res.Rows {
			got[rowKey(r.Row)]++
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: %d rows, want %s; %s", join, len(res.Rows), ordersOf(want), diff(got, want))
		}
	}
}
