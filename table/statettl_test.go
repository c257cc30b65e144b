package table_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weirproject/weir/config"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/stream"
	"github.com/weirproject/weir/table"
)

type ttlRow struct {
	K    string `sql:"k"`
	V    int64  `sql:"v"`
	Skip bool
}

// ttlRun runs an updating GROUP BY over a paced stream: 1000 keys once,
// a pause of 800 ms, the first 10 keys again, then 500 ms of nothing
// (checkpoints every 50 ms go on meanwhile). It returns the last row
// emitted per key, the changelog's kinds and the sizes of the
// checkpoints.
func ttlRun(t *testing.T, ttl string, query string) (map[string]types.Row, map[types.RowKind]int, []int64) {
	t.Helper()
	const rate = 2000
	gen := &stream.Generator[ttlRow]{Count: 3610, Rate: rate, Fn: func(i int64) ttlRow {
		switch {
		case i < 1000:
			return ttlRow{K: fmt.Sprintf("k%04d", i), V: i}
		case i >= 2600 && i < 2610:
			return ttlRow{K: fmt.Sprintf("k%04d", i-2600), V: 1}
		}
		return ttlRow{Skip: true}
	}}
	cfg := config.New()
	if err := cfg.Set("execution.checkpointing.interval", "50 ms"); err != nil {
		t.Fatal(err)
	}
	env := stream.NewEnvironmentWithConfig(cfg).SetParallelism(2)
	tenv := table.NewStreamEnvironment(env)
	if ttl != "" {
		if _, err := tenv.ExecuteSQL(context.Background(), "SET 'table.exec.state.ttl' = '"+ttl+"'"); err != nil {
			t.Fatal(err)
		}
	}
	src := stream.FromSource[ttlRow](env, gen, "paced").SetParallelism(1).Filter(func(r ttlRow) bool { return !r.Skip })
	if err := table.FromDataStream(tenv, "t", src); err != nil {
		t.Fatal(err)
	}
	q, err := tenv.SQLQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := table.ToChangelogStream(q)
	if err != nil {
		t.Fatal(err)
	}
	got := stream.Collect(changes)
	job, err := env.ExecuteAsync(context.Background(), "ttl")
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	last := map[string]types.Row{}
	kinds := map[types.RowKind]int{}
	for _, r := range got.Values() {
		kinds[r.Kind]++
		k := r.Row[0].(string)
		switch r.Kind {
		case types.Insert, types.UpdateAfter:
			last[k] = r.Row
		case types.Delete:
			delete(last, k)
		}
	}
	var sizes []int64
	for _, c := range job.CheckpointHistory() {
		sizes = append(sizes, c.FullSize)
	}
	return last, kinds, sizes
}

// TestStateTTLExpiresIdleGroups: with table.exec.state.ttl, a group not
// written for longer than the TTL is gone: its next row starts a new
// aggregate (a second +I, no -U), as in Flink, and the state shrinks;
// without TTL the aggregate goes on and the state stays.
func TestStateTTLExpiresIdleGroups(t *testing.T) {
	const q = "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY k"
	for _, ttl := range []string{"", "300 ms"} {
		last, kinds, sizes := ttlRun(t, ttl, q)
		if len(last) != 1000 {
			t.Fatalf("ttl %q: %d keys, want 1000", ttl, len(last))
		}
		for i := range 1000 {
			k := fmt.Sprintf("k%04d", i)
			want := types.Row{k, int64(1), int64(i)}
			if i < 10 {
				want = types.Row{k, int64(2), int64(i) + 1}
				if ttl != "" {
					want = types.Row{k, int64(1), int64(1)} // restarted
				}
			}
			if fmt.Sprint(last[k]) != fmt.Sprint(want) {
				t.Errorf("ttl %q: key %s ends as %v, want %v", ttl, k, last[k], want)
			}
		}
		wantUpdates := 10
		if ttl != "" {
			wantUpdates = 0
		}
		if kinds[types.UpdateBefore] != wantUpdates || kinds[types.Insert] != 1000+10-wantUpdates {
			t.Errorf("ttl %q: changelog kinds %v, want %d updates", ttl, kinds, wantUpdates)
		}
		if len(sizes) < 4 {
			t.Fatalf("ttl %q: only %d checkpoints", ttl, len(sizes))
		}
		peak := int64(0)
		for _, s := range sizes {
			peak = max(peak, s)
		}
		final := sizes[len(sizes)-1]
		t.Logf("ttl %q: %d checkpoints, peak state %d bytes, last %d bytes", ttl, len(sizes), peak, final)
		if ttl == "" && final < peak {
			t.Errorf("without TTL the state shrank from %d to %d bytes", peak, final)
		}
		if ttl != "" && final*10 > peak {
			t.Errorf("with TTL the state went from %d to %d bytes, want a tenth or less", peak, final)
		}
	}
}

// TestStateTTLJoinAndTopN: the rows a regular join keeps and the rows of
// a Top-N partition expire too: after the pause the first 10 keys' new
// rows join only each other (without TTL they also join the old rows),
// and their Top-N partitions start again with an insert (without TTL one
// of them updates).
func TestStateTTLJoinAndTopN(t *testing.T) {
	const join = "SELECT a.k, a.v, b.v FROM t a JOIN t b ON a.k = b.k"
	const topN = "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) WHERE rn <= 1"
	for _, c := range []struct {
		q, ttl        string
		inserts, upds int
	}{
		{join, "", 1000 + 10*3, 0},
		{join, "300 ms", 1000 + 10, 0},
		{topN, "", 1000, 1},
		{topN, "300 ms", 1000 + 10, 0},
	} {
		_, kinds, _ := ttlRun(t, c.ttl, c.q)
		if kinds[types.Insert] != c.inserts || kinds[types.UpdateAfter] != c.upds || kinds[types.Delete] != 0 {
			t.Errorf("%s with ttl %q: changelog kinds %v, want %d inserts and %d updates", c.q, c.ttl, kinds, c.inserts, c.upds)
		}
	}
}
