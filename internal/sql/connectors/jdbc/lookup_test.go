package jdbc_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/parser"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// customers in the database: ids 0..19 but 7 and 13, in regions 'n' and
// 's', with a tier 0..3. Orders ask for customers 0..24 in both regions,
// so that some keys have no row.
func customerRows() map[int64][2]any {
	out := map[int64][2]any{}
	for id := int64(0); id < 20; id++ {
		if id == 7 || id == 13 {
			continue
		}
		out[id] = [2]any{[]string{"n", "s"}[id%2], id * 5 % 4}
	}
	return out
}

func customersDB(t *testing.T) (string, func(q string, args ...any)) {
	dsn, db := database(t, "CREATE TABLE customers (id INT PRIMARY KEY, region VARCHAR(4), tier INT, name VARCHAR(40))")
	for id, c := range customerRows() {
		if _, err := db.Exec("INSERT INTO customers VALUES (?, ?, ?, ?)", id, c[0], c[1], fmt.Sprintf("cust-%d", id)); err != nil {
			t.Fatal(err)
		}
	}
	return dsn, func(q string, args ...any) {
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestLookupJoinMatchesBruteForce: orders joined with the customers of
// their id (and region) looked up in MariaDB, INNER and LEFT, with a
// filter on the customer's columns, at p = 1, 2, 4, with and without the
// cache, equal the brute-force join.
func TestLookupJoinMatchesBruteForce(t *testing.T) {
	dsn, _ := customersDB(t)
	const n = 600
	customers := customerRows()
	for _, cache := range []string{"", ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '5'"} {
		for _, join := range []string{"JOIN", "LEFT JOIN"} {
			for _, multi := range []bool{false, true} {
				want := map[string]int{}
				for id := int64(0); id < n; id++ {
					cid, region := id*7%25, []string{"n", "s"}[id%3%2]
					c, ok := customers[cid]
					ok = ok && c[1].(int64) > 0 && (!multi || c[0] == region)
					switch {
					case ok:
						want[fmt.Sprint(id, cid, cid, c[0], c[1], fmt.Sprintf("cust-%d", cid))]++
					case join == "LEFT JOIN":
						want[fmt.Sprint(id, cid, nil, nil, nil, nil)]++
					}
				}
				cond := "o.cid = c.id"
				if multi {
					cond = "o.region = c.region AND o.cid = c.id"
				}
				for _, p := range []int{1, 2, 4} {
					tenv := newEnv(t, p)
					exec(t, tenv,
						fmt.Sprintf(`CREATE TABLE orders (id BIGINT, cid AS CAST(MOD(id * 7, 25) AS INT),
							region AS CASE MOD(MOD(id, 3), 2) WHEN 0 THEN 'n' ELSE 's' END, proc AS PROCTIME())
							WITH ('connector' = 'datagen', 'rows-per-second' = '20000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d')`, n-1),
						fmt.Sprintf(`CREATE TABLE customers (id INT, region STRING, tier INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
							WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'customers'%s)`, dsn, cache))
					q := fmt.Sprintf(`SELECT o.id, o.cid, c.id, c.region, c.tier, c.name FROM orders AS o
						%s customers FOR SYSTEM_TIME AS OF o.proc AS c ON %s AND c.tier > 0`, join, cond)
					plan := exec(t, tenv, "EXPLAIN "+q).Text
					if !strings.Contains(plan, "LookupJoin(table=[`default_catalog`.`default_database`.`customers`]") {
						t.Fatalf("no LookupJoin in\n%s", plan)
					}
					res := exec(t, tenv, q)
					got := map[string]int{}
					for _, r := range res.Rows {
						if r.Kind != types.Insert {
							t.Fatalf("a lookup join emitted %s", r)
						}
						row := make([]any, len(r.Row))
						for i, v := range r.Row {
							if x, ok := v.(int32); ok {
								row[i] = int64(x)
							} else {
								row[i] = v
							}
						}
						got[fmt.Sprint(row...)]++
					}
					if !maps.Equal(got, want) {
						t.Errorf("%s multi=%v p=%d cache=%q: %d rows, want %d", join, multi, p, cache, len(res.Rows), len(want))
					}
				}
			}
		}
	}
}

// TestLookupJoinSeesUpdates: without a cache, rows updated in the database
// are seen by later lookups; with a cache, not until the entry expires.
func TestLookupJoinSeesUpdates(t *testing.T) {
	const rate = 400 // left rows a second
	for _, tc := range []struct {
		name, cache string
		// after: how long after the update every lookup must see it
		// (0: never, within the test).
		after time.Duration
	}{
		{"no cache", "", 0},
		{"cache", ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100'", -1},
		{"expiring cache", ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100', 'lookup.partial-cache.expire-after-write' = '1 s'", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, dbExec := customersDB(t)
			tenv := newEnv(t, 1)
			exec(t, tenv,
				fmt.Sprintf(`CREATE TABLE orders (id BIGINT, cid AS CAST(MOD(id, 20) AS INT), proc AS PROCTIME())
					WITH ('connector' = 'datagen', 'rows-per-second' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '1000000')`, rate),
				fmt.Sprintf(`CREATE TABLE customers (id INT, region STRING, tier INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
					WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'customers'%s)`, dsn, tc.cache))
			st, err := parser.ParseStatement("SELECT o.id, c.name FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.proc AS c ON o.cid = c.id")
			if err != nil {
				t.Fatal(err)
			}
			res, err := tenv.Query(context.Background(), st.(*parser.QueryStatement))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				res.Job.Cancel()
				for range res.Stream {
				}
				_ = res.Job.Wait()
			}()
			next := func() (int64, string) {
				select {
				case r, ok := <-res.Stream:
					if !ok {
						t.Fatalf("the query ended: %v", res.Job.Wait())
					}
					return r.Row[0].(int64), r.Row[1].(string)
				case <-time.After(20 * time.Second):
					t.Fatal("no row in 20 s")
				}
				panic("unreachable")
			}
			// Let every key be looked up (and cached) first.
			for {
				id, name := next()
				if name != fmt.Sprintf("cust-%d", id%20) {
					t.Fatalf("row %d joined %s before any update", id, name)
				}
				if id >= 200 {
					break
				}
			}
			dbExec("UPDATE customers SET name = CONCAT('new-', id)")
			updated := time.Now()
			// Rows arrive in order (p = 1); those generated more than a
			// second after the update were surely looked up after it.
			var seenNew, seenOld int
			for time.Since(updated) < 3*time.Second {
				id, name := next()
				isNew := name == fmt.Sprintf("new-%d", id%20)
				if !isNew && name != fmt.Sprintf("cust-%d", id%20) {
					t.Fatalf("row %d joined %s", id, name)
				}
				if isNew {
					seenNew++
				} else {
					seenOld++
				}
				late := time.Since(updated) > tc.after+time.Second
				switch {
				case tc.after >= 0 && late && !isNew:
					t.Fatalf("row %d, %v after the update, joined the old %s", id, time.Since(updated), name)
				case tc.after < 0 && isNew:
					t.Fatalf("row %d joined the updated %s through a cache that does not expire", id, name)
				}
			}
			if tc.after >= 0 && seenNew == 0 || tc.after < 0 && seenOld == 0 {
				t.Fatalf("%d rows saw the update, %d did not", seenNew, seenOld)
			}
		})
	}
}

// TestLookupJoinMissingDatabase: lookups in a database that cannot be
// reached fail the query with an error that names the table.
func TestLookupJoinMissingDatabase(t *testing.T) {
	tenv := table.NewEnvironment()
	exec(t, tenv, "SET 'parallelism.default' = '1'",
		`CREATE TABLE orders (id BIGINT, cid AS CAST(MOD(id, 20) AS INT), proc AS PROCTIME())
			WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '9')`,
		`CREATE TABLE gone (id INT, name STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://127.0.0.1:1/nowhere',
			'table-name' = 'customers', 'lookup.max-retries' = '1')`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := tenv.ExecuteSQL(ctx, "SELECT o.id, g.name FROM orders AS o LEFT JOIN gone FOR SYSTEM_TIME AS OF o.proc AS g ON o.cid = g.id")
	if err == nil || !strings.Contains(err.Error(), "table `default_catalog`.`default_database`.`gone`") || !strings.Contains(err.Error(), "lookup") {
		t.Fatalf("error %v, want one naming the table gone and the lookup", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
}
