package table_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/weirproject/weir/internal/sql/functions"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// explodeCount is how many rows the test table function makes of a row:
// v mod 4 (so a quarter of the rows make none).
func explodeCount(v int64) int64 { return ((v % 4) + 4) % 4 }

// registerExplode registers explode(k, v): rows (i, k || i) for i in
// [0, v mod 4).
func registerExplode(t *testing.T, tenv *table.Environment) {
	err := tenv.Functions().RegisterTableFunc("explode", functions.TableFunc{
		Args:    []types.DataType{types.String(), types.BigInt()},
		Columns: []functions.TableColumn{{Name: "i", Type: types.Int()}, {Name: "tag", Type: types.String()}},
		Eval: func(_ *functions.Context, args []any, emit func([]any)) error {
			if args[0] == nil || args[1] == nil {
				return nil
			}
			k, v := args[0].(string), args[1].(int64)
			for i := range int32(explodeCount(v)) {
				emit([]any{i, fmt.Sprintf("%s%d", k, i)})
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStreamingTableFunctionsMatchBruteForce: LATERAL TABLE of a Go table
// function (inner, LEFT ... ON TRUE, with an ON condition) and UNNEST of
// arrays (WITH ORDINALITY too), maps and multisets, against brute force at
// parallelism 1 and 2.
func TestStreamingTableFunctionsMatchBruteForce(t *testing.T) {
	const n = 2000
	events := genEvents(n)
	row := func(vs ...any) string { return fmt.Sprint(types.Row(vs)) }
	cases := []struct {
		name, q string
		want    func() map[string]int
	}{
		{"lateral", `SELECT id, i, tag FROM ev, LATERAL TABLE(explode(k, v)) AS T(i, tag)`, func() map[string]int {
			w := map[string]int{}
			for id, e := range events {
				for i := range int32(explodeCount(e.v)) {
					w[row(int64(id), i, fmt.Sprintf("%s%d", e.k, i))]++
				}
			}
			return w
		}},
		{"left lateral", `SELECT id, i, tag FROM ev LEFT JOIN LATERAL TABLE(explode(k, v)) AS T(i, tag) ON TRUE`, func() map[string]int {
			w := map[string]int{}
			for id, e := range events {
				c := explodeCount(e.v)
				if c == 0 {
					w[row(int64(id), nil, nil)]++
				}
				for i := range int32(c) {
					w[row(int64(id), i, fmt.Sprintf("%s%d", e.k, i))]++
				}
			}
			return w
		}},
		{"join lateral on", `SELECT T.tag, ev.id FROM ev JOIN LATERAL TABLE(explode(ev.k, ev.v)) AS T(i, tag) ON T.i > 0`, func() map[string]int {
			w := map[string]int{}
			for id, e := range events {
				for i := range int32(explodeCount(e.v)) {
					if i > 0 {
						w[row(fmt.Sprintf("%s%d", e.k, i), int64(id))]++
					}
				}
			}
			return w
		}},
		{"unnest array", `SELECT id, x, o FROM ev CROSS JOIN UNNEST(ARRAY[v, v + 1, id]) WITH ORDINALITY AS T(x, o)`, func() map[string]int {
			w := map[string]int{}
			for id, e := range events {
				for o, x := range []int64{e.v, e.v + 1, int64(id)} {
					w[row(int64(id), x, int32(o+1))]++
				}
			}
			return w
		}},
		{"unnest map", `SELECT id, mk, mv FROM ev, UNNEST(MAP[k, v, 'z', id]) AS T(mk, mv)`, func() map[string]int {
			w := map[string]int{}
			for id, e := range events {
				w[row(int64(id), e.k, e.v)]++
				w[row(int64(id), "z", int64(id))]++
			}
			return w
		}},
		{"unnest multiset", `SELECT k, x FROM (SELECT k, COLLECT(MOD(v, 3)) AS ms FROM ev GROUP BY k) g CROSS JOIN UNNEST(g.ms) AS T(x)`, func() map[string]int {
			w := map[string]int{}
			for _, e := range events {
				w[row(e.k, e.v%3)]++
			}
			return w
		}},
	}
	for _, c := range cases {
		want := c.want()
		for _, p := range []int{1, 2} {
			tenv := newStreamingEnv(t, n, p)
			registerExplode(t, tenv)
			res, err := tenv.ExecuteSQL(context.Background(), c.q)
			if err != nil {
				t.Fatalf("%s p=%d: %v", c.name, p, err)
			}
			if got := applyChangelog(t, res.Rows); !maps.Equal(got, want) {
				var example string
				for k, v := range want {
					if got[k] != v {
						example = fmt.Sprintf("%s: got %d, want %d", k, got[k], v)
						break
					}
				}
				for k, v := range got {
					if want[k] != v && example == "" {
						example = fmt.Sprintf("%s: got %d, want %d", k, v, want[k])
					}
				}
				t.Errorf("%s p=%d: %d distinct rows, want %d; e.g. %s", c.name, p, len(got), len(want), example)
			}
		}
	}
}

// TestTableFunctionErrors: unsupported uses of table functions are refused
// with a message naming the problem.
func TestTableFunctionErrors(t *testing.T) {
	tenv := newStreamingEnv(t, 10, 1)
	registerExplode(t, tenv)
	for q, msg := range map[string]string{
		`SELECT * FROM ev LEFT JOIN LATERAL TABLE(explode(k, v)) AS T(i, tag) ON T.i > 0`: "needs ON TRUE",
		`SELECT * FROM ev, LATERAL TABLE(nosuch(k)) AS T(x)`:                              "No table function nosuch",
		`SELECT * FROM ev, LATERAL TABLE(explode(k)) AS T(i, tag)`:                        "takes 2 arguments",
		`SELECT * FROM ev, LATERAL TABLE(explode(k, v)) AS T(i)`:                          "1 column names",
		`SELECT * FROM ev CROSS JOIN UNNEST(v) AS T(x)`:                                   "UNNEST needs an ARRAY",
	} {
		_, err := tenv.ExecuteSQL(context.Background(), q)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want an error with %q", q, err, msg)
		}
	}
	res, err := tenv.ExecuteSQL(context.Background(), "EXPLAIN SELECT * FROM ev, LATERAL TABLE(explode(k, v)) AS T(i, tag)")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "Correlate(invocation=[EXPLODE(") {
		t.Errorf("EXPLAIN shows no Correlate:\n%s", res.Text)
	}
}

// TestBatchUnnestAlone: UNNEST alone in FROM, in batch mode.
func TestBatchUnnestAlone(t *testing.T) {
	tenv := table.NewEnvironment()
	ctx := context.Background()
	if _, err := tenv.ExecuteSQL(ctx, "SET 'execution.runtime-mode' = 'batch'"); err != nil {
		t.Fatal(err)
	}
	res, err := tenv.ExecuteSQL(ctx, "SELECT x * 10 FROM UNNEST(ARRAY[1, 2, 3]) AS T(x)")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, fmt.Sprint(r.Row[0]))
	}
	if strings.Join(got, ",") != "10,20,30" {
		t.Errorf("got %v, want 10,20,30", got)
	}
}
