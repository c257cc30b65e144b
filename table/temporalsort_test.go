package table_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/types"
)

// TestStreamingOrderByTimeMatchesBruteForce: a streaming ORDER BY whose
// first key is the rowtime emits every row once, in global time order
// (ties by the other keys), at parallelism 1, 2 and 4; with LIMIT and
// OFFSET it emits that slice of the order. Both are append-only.
func TestStreamingOrderByTimeMatchesBruteForce(t *testing.T) {
	const n = 3000
	events := genEvents(n)
	type ev struct {
		id int64
		event
	}
	var all []ev
	for i, e := range events {
		// evs's time is ev's, truncated to the second: rows tie.
		e.ts -= (e.ts - evBase) % 1000
		all = append(all, ev{int64(i), e})
	}
	slices.SortFunc(all, func(a, b ev) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.k, b.k), -cmp.Compare(a.v, b.v), cmp.Compare(a.id, b.id))
	})
	const q = `SELECT id, k, v, ts FROM evs WHERE MOD(id, 7) <> 3 ORDER BY ts, k, v DESC, id`
	var want []string
	for _, e := range all {
		if e.id%7 != 3 {
			want = append(want, fmt.Sprintf("%d %s %d %d", e.id, e.k, e.v, e.ts))
		}
	}
	for _, c := range []struct {
		q    string
		want []string
	}{
		{q, want},
		{q + " LIMIT 100 OFFSET 20", want[20:120]},
		// The time column sorted by is not selected as such: it is carried
		// hidden to the sort and dropped after it.
		{strings.Replace(q, "v, ts FROM", "v, CAST(ts AS TIMESTAMP_LTZ(3)) AS t2 FROM", 1), want},
	} {
		for _, p := range []int{1, 2, 4} {
			tenv := newStreamingEnv(t, n, p)
			ddl := fmt.Sprintf(`CREATE TABLE evs (
				id BIGINT,
				k AS CHR(CAST(97 + MOD(id * 31, 5) AS INT)),
				v AS CAST(MOD(id * 17, 100) - 20 AS BIGINT),
				ts AS TO_TIMESTAMP_LTZ(%d + id * 300 + MOD(id * 7919, 4900) - MOD(id * 300 + MOD(id * 7919, 4900), 1000), 3),
				WATERMARK FOR ts AS ts - INTERVAL '10' SECOND)
			WITH ('connector' = 'datagen', 'rows-per-second' = '20000', 'fields.id.kind' = 'sequence',
				'fields.id.start' = '0', 'fields.id.end' = '%d')`, evBase, n-1)
			if _, err := tenv.ExecuteSQL(context.Background(), ddl); err != nil {
				t.Fatal(err)
			}
			res, err := tenv.ExecuteSQL(context.Background(), c.q)
			if err != nil {
				t.Fatalf("p=%d %s: %v", p, c.q, err)
			}
			if res.Updating {
				t.Errorf("p=%d: a temporal sort is declared updating", p)
			}
			var got []string
			for _, r := range res.Rows {
				if r.Kind != types.Insert {
					t.Fatalf("p=%d: a temporal sort emitted %s", p, r)
				}
				got = append(got, fmt.Sprintf("%v %v %v %d", r.Row[0], r.Row[1], r.Row[2], millisOf(r.Row[3])))
			}
			ties := 0
			for i := 1; i < len(got); i++ {
				if strings.Fields(got[i])[3] == strings.Fields(got[i-1])[3] {
					ties++
				}
			}
			if ties < len(got)/3 {
				t.Errorf("p=%d: only %d rows tie in time: the data do not exercise the tie order", p, ties)
			}
			if !slices.Equal(got, c.want) {
				i := 0
				for i < min(len(got), len(c.want)) && got[i] == c.want[i] {
					i++
				}
				t.Errorf("p=%d %s: %d rows, want %d; first difference at row %d", p, c.q, len(got), len(c.want), i)
			}
		}
	}
}

// TestStreamingOrderByNonTimeRefused: ORDER BY on anything but an
// ascending time attribute first is refused in streaming, with Flink's
// message.
func TestStreamingOrderByNonTimeRefused(t *testing.T) {
	tenv := newStreamingEnv(t, 10, 1)
	for _, q := range []string{
		"SELECT id, v FROM ev ORDER BY v",
		"SELECT id, ts FROM ev ORDER BY ts DESC",
		"SELECT id, ts FROM ev ORDER BY id, ts",
	} {
		_, err := tenv.ExecuteSQL(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), "Sort on a non-time-attribute field is not supported.") {
			t.Errorf("%s: got %v, want Flink's refusal", q, err)
		}
	}
}
