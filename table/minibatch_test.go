package table_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/table"
)

// aggModes are the settings compared: one row at a time (Flink's
// default), mini-batch in one phase, and mini-batch with the two-phase
// split where the aggregates allow it.
var aggModes = []struct {
	name     string
	settings []string
}{
	{"default", nil},
	{"mini-batch one phase", []string{
		"SET 'table.exec.mini-batch.enabled' = 'true'", "SET 'table.exec.mini-batch.allow-latency' = '50 ms'",
		"SET 'table.exec.mini-batch.size' = '200'", "SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE'"}},
	{"mini-batch two phase", []string{
		"SET 'table.exec.mini-batch.enabled' = 'true'", "SET 'table.exec.mini-batch.allow-latency' = '50 ms'",
		"SET 'table.exec.mini-batch.size' = '200'", "SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE'"}},
}

// miniBatchQueries are updating aggregations over ev with their
// brute-force final tables: over the append-only stream, over an
// updating aggregation (retractions), without keys, and with DISTINCT
// (which stays one phase).
func miniBatchQueries(n int) []struct {
	name, q string
	want    map[string]int
} {
	events := genEvents(n)
	type kAgg struct{ n, sum, max, min int64 }
	byK := map[string]*kAgg{}
	distinct := map[string]map[int64]bool{}
	type gAgg struct{ c, s, mx int64 }
	byG := map[int64]*gAgg{}
	var total, count int64
	for i, e := range events {
		a := byK[e.k]
		if a == nil {
			a = &kAgg{max: e.v, min: e.v}
			byK[e.k] = a
			distinct[e.k] = map[int64]bool{}
		}
		a.n++
		a.sum += e.v
		a.max, a.min = max(a.max, e.v), min(a.min, e.v)
		distinct[e.k][e.v%7] = true
		g := byG[int64(i%37)]
		if g == nil {
			g = &gAgg{}
			byG[int64(i%37)] = g
		}
		g.c++
		g.s += e.v
		total += e.v
		count++
	}
	perK, perKDistinct, rollup := map[string]int{}, map[string]int{}, map[string]int{}
	rollup[fmt.Sprint(types.Row{nil, count, total})]++
	for k, a := range byK {
		rollup[fmt.Sprint(types.Row{k, a.n, a.sum})]++
		perK[fmt.Sprint(types.Row{k, a.n, a.sum, a.max, a.min, a.sum / a.n})]++
		perKDistinct[fmt.Sprint(types.Row{k, int64(len(distinct[k])), a.n})]++
	}
	type cAgg struct{ n, s, mx int64 }
	byC := map[int64]*cAgg{}
	for _, g := range byG {
		c := byC[g.c]
		if c == nil {
			c = &cAgg{mx: g.s}
			byC[g.c] = c
		}
		c.n++
		c.s += g.s
		c.mx = max(c.mx, g.s)
	}
	overAgg, overAggMax := map[string]int{}, map[string]int{}
	for cnt, c := range byC {
		overAgg[fmt.Sprint(types.Row{cnt, c.n, c.s})]++
		overAggMax[fmt.Sprint(types.Row{cnt, c.n, c.mx})]++
	}
	const inner = "(SELECT MOD(id, 37) AS g, COUNT(*) AS c, SUM(v) AS s FROM ev GROUP BY MOD(id, 37))"
	return []struct {
		name, q string
		want    map[string]int
	}{
		{"per key", "SELECT k, COUNT(*), SUM(v), MAX(v), MIN(v), AVG(v) FROM ev GROUP BY k", perK},
		{"over an aggregate", "SELECT c, COUNT(*), SUM(s) FROM " + inner + " GROUP BY c", overAgg},
		{"over an aggregate with MAX", "SELECT c, COUNT(*), MAX(s) FROM " + inner + " GROUP BY c", overAggMax},
		{"no keys", "SELECT COUNT(*), SUM(v) FROM ev", map[string]int{fmt.Sprint(types.Row{count, total}): 1}},
		{"rollup", "SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY ROLLUP(k)", rollup},
		{"distinct", "SELECT k, COUNT(DISTINCT MOD(v, 7)), COUNT(*) FROM ev GROUP BY k", perKDistinct},
	}
}

// TestMiniBatchAggregationMatchesBruteForce: with mini-batch, in one and
// two phases, every query's changelog ends as the brute-force table and
// as the default's, at parallelism 1, 2 and 4, with fewer changes.
func TestMiniBatchAggregationMatchesBruteForce(t *testing.T) {
	const n = 4000
	ctx := context.Background()
	for _, q := range miniBatchQueries(n) {
		for _, p := range []int{1, 2, 4} {
			changes := map[string]int{}
			for _, mode := range aggModes {
				tenv := newStreamingEnv(t, n, p)
				for _, s := range mode.settings {
					if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
						t.Fatal(err)
					}
				}
				res, err := tenv.ExecuteSQL(ctx, q.q)
				if err != nil {
					t.Fatalf("%s, %s, p=%d: %v", q.name, mode.name, p, err)
				}
				got := applyChangelog(t, res.Rows)
				if !maps.Equal(got, q.want) {
					t.Errorf("%s, %s, p=%d: table\n%v\nwant\n%v", q.name, mode.name, p, got, q.want)
				}
				changes[mode.name] = len(res.Rows)
			}
			base := changes["default"]
			for _, mode := range aggModes[1:] {
				if changes[mode.name] >= base {
					t.Errorf("%s, p=%d: %s emitted %d changes, the default %d", q.name, p, mode.name, changes[mode.name], base)
				}
			}
			t.Logf("%s, p=%d: changes %v", q.name, p, changes)
		}
	}
}

// TestMiniBatchExplain: EXPLAIN shows the mini-batch and two-phase
// operators as Flink's does, and DISTINCT or retracting MAX stay one
// phase.
func TestMiniBatchExplain(t *testing.T) {
	ctx := context.Background()
	tenv := newStreamingEnv(t, 10, 1)
	explain := func(q string) string {
		res, err := tenv.ExecuteSQL(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Text
	}
	q := "SELECT k, COUNT(*) FROM ev GROUP BY k"
	if s := explain(q); strings.Contains(s, "MiniBatch") || strings.Contains(s, "Local") {
		t.Errorf("without mini-batch:\n%s", s)
	}
	for _, s := range aggModes[2].settings {
		if _, err := tenv.ExecuteSQL(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	want := "GlobalGroupAggregate(groupBy=[k], select=[COUNT() AS EXPR$1])\n" +
		"      +- LocalGroupAggregate(groupBy=[k], select=[COUNT() AS EXPR$1])\n" +
		"         +- MiniBatchAssigner(interval=[50ms], mode=[ProcTime])\n"
	if s := explain(q); !strings.Contains(s, want) {
		t.Errorf("two phase:\n%s\nwant it to contain\n%s", s, want)
	}
	s := explain("SELECT k, COUNT(DISTINCT v) FROM ev GROUP BY k")
	if !strings.Contains(s, "MiniBatchAssigner") || strings.Contains(s, "Local") {
		t.Errorf("DISTINCT:\n%s", s)
	}
	s = explain("SELECT c, MAX(k) FROM (SELECT k, COUNT(*) AS c FROM ev GROUP BY k) GROUP BY c")
	if strings.Count(s, "MiniBatchAssigner") != 2 || strings.Count(s, "LocalGroupAggregate") != 1 {
		t.Errorf("MAX over an updating input:\n%s", s)
	}
	if _, err := tenv.ExecuteSQL(ctx, "SET 'table.exec.mini-batch.size' = '-1'"); err != nil {
		t.Fatal(err)
	}
	if _, err := tenv.ExecuteSQL(ctx, q); err == nil || !strings.Contains(err.Error(), "table.exec.mini-batch.size") {
		t.Errorf("mini-batch without a size: %v", err)
	}
}

type mbRow struct {
	ID int64 `sql:"id"`
}

// TestMiniBatchAggregationRestartsExactlyOnce: a two-phase mini-batch
// aggregation over an aggregation whose job fails once after checkpoints
// completed and resumes from the latest one ends with the brute-force
// table: bundles are flushed before each barrier, so none is lost or
// applied twice.
func TestMiniBatchAggregationRestartsExactlyOnce(t *testing.T) {
	const n = 6000
	for _, mode := range aggModes {
		cfg := config.New()
		for _, kv := range [][2]string{
			{"execution.checkpointing.interval", "20 ms"},
			{"restart-strategy.type", "fixed-delay"},
			{"restart-strategy.fixed-delay.attempts", "3"},
			{"restart-strategy.fixed-delay.delay", "10 ms"},
		} {
			if err := cfg.Set(kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		env := stream.NewEnvironmentWithConfig(cfg).SetParallelism(2)
		tenv := table.NewStreamEnvironment(env)
		for _, s := range mode.settings {
			if _, err := tenv.ExecuteSQL(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
		var job atomic.Pointer[stream.JobClient]
		var seen atomic.Int64
		src := stream.FromSource[mbRow](env, &stream.Generator[mbRow]{Count: n, Rate: 15000, Fn: func(i int64) mbRow { return mbRow{ID: i} }}, "ids").UID("ids")
		failing := stream.Process(src, stream.ProcessFunc[mbRow, mbRow](func(r mbRow, ctx *stream.Context, out stream.Collector[mbRow]) error {
			if ctx.Attempt() == 0 && seen.Add(1) > n/2 {
				if j := job.Load(); j != nil && j.CompletedCheckpoints() > 2 {
					return errors.New("injected failure")
				}
			}
			out.Collect(r)
			return nil
		})).UID("fail")
		if err := table.FromDataStream(tenv, "ids", failing); err != nil {
			t.Fatal(err)
		}
		q, err := tenv.SQLQuery(`SELECT c, COUNT(*) AS groups, SUM(s) AS total FROM
			(SELECT MOD(id, 41) AS g, COUNT(*) AS c, SUM(id) AS s FROM ids GROUP BY MOD(id, 41)) GROUP BY c`)
		if err != nil {
			t.Fatal(err)
		}
		changes, err := table.ToChangelogStream(q)
		if err != nil {
			t.Fatal(err)
		}
		got := stream.Collect(changes)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		jc, err := env.ExecuteAsync(ctx, "restart")
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		job.Store(jc)
		err = jc.Wait()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		if jc.Restarts() != 1 {
			t.Errorf("%s: %d restarts, want 1", mode.name, jc.Restarts())
		}
		type cAgg struct{ n, s int64 }
		byG := map[int64][2]int64{}
		for i := range int64(n) {
			g := byG[i%41]
			byG[i%41] = [2]int64{g[0] + 1, g[1] + i}
		}
		byC := map[int64]cAgg{}
		for _, g := range byG {
			c := byC[g[0]]
			byC[g[0]] = cAgg{c.n + 1, c.s + g[1]}
		}
		want := map[string]int{}
		for cnt, c := range byC {
			want[fmt.Sprint(types.Row{cnt, c.n, c.s})]++
		}
		if table := applyChangelog(t, got.Values()); !maps.Equal(table, want) {
			t.Errorf("%s: after a restart the table is\n%v\nwant\n%v", mode.name, table, want)
		}
	}
}
