package jdbc_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/weirproject/weir/internal/sql/connectors/jdbc"
	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/internal/testmysql"
	"github.com/weirproject/weir/table"
)

var server *testmysql.Server

func TestMain(m *testing.M) { os.Exit(testmysql.Run(m, &server)) }

func exec(t *testing.T, tenv *table.Environment, stmts ...string) *table.Result {
	t.Helper()
	var res *table.Result
	for _, s := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		var err error
		res, err = tenv.ExecuteSQL(ctx, s)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return res
}

func newEnv(t *testing.T, p int) *table.Environment {
	tenv := table.NewEnvironment()
	exec(t, tenv, fmt.Sprintf("SET 'parallelism.default' = '%d'", p), "SET 'table.dml-sync' = 'true'", "SET 'table.local-time-zone' = 'UTC'")
	return tenv
}

// database creates a database for the test with the given tables and
// returns its DSN and a connection.
func database(t *testing.T, ddl ...string) (string, *sql.DB) {
	t.Helper()
	testmysql.Need(t, server)
	dsn := server.NewDatabase(t)
	db := testmysql.Open(t, dsn)
	for _, s := range ddl {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return dsn, db
}

func sortedRows(rows []types.Record, ts []types.DataType) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		b.WriteString(r.Kind.String())
		for j, v := range r.Row {
			b.WriteString("|")
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(types.FormatIn(v, ts[j], time.UTC))
			}
		}
		out[i] = b.String()
	}
	slices.Sort(out)
	return out
}

func query(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if v.Valid {
				parts = append(parts, v.String)
			} else {
				parts = append(parts, "NULL")
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

const typesValues = `VALUES
	(1, TRUE, CAST(-128 AS TINYINT), CAST(32767 AS SMALLINT), CAST(-9223372036854775807 AS BIGINT), CAST(1.5 AS FLOAT), 2.25E-7,
	 CAST('12345678901234.123456' AS DECIMAL(20, 6)), 'héllo, "wörld" ✓', x'00ff10', DATE '2024-02-29', TIME '23:59:58',
	 TIMESTAMP '2024-03-01 12:34:56.789', TO_TIMESTAMP_LTZ(1709296496789, 3)),
	(2, FALSE, CAST(0 AS TINYINT), CAST(-1 AS SMALLINT), CAST(0 AS BIGINT), CAST(-0.25 AS FLOAT), -1.0E300,
	 CAST('-0.000001' AS DECIMAL(20, 6)), '', x'', DATE '1000-01-01', TIME '00:00:00',
	 TIMESTAMP '1969-12-31 23:59:59.999', TO_TIMESTAMP_LTZ(86400000, 3)),
	(3, CAST(NULL AS BOOLEAN), CAST(NULL AS TINYINT), CAST(NULL AS SMALLINT), CAST(NULL AS BIGINT), CAST(NULL AS FLOAT), CAST(NULL AS DOUBLE),
	 CAST(NULL AS DECIMAL(20, 6)), CAST(NULL AS STRING), CAST(NULL AS BYTES), CAST(NULL AS DATE), CAST(NULL AS TIME(0)),
	 CAST(NULL AS TIMESTAMP(3)), CAST(NULL AS TIMESTAMP_LTZ(3)))`

// TestJDBCAllTypesRoundTrip appends rows of every type (NULLs included)
// through the jdbc sink, checks what MariaDB holds with MariaDB's own
// functions, and reads the rows back through a partitioned jdbc scan:
// they must equal the rows of the same VALUES query run without MariaDB.
func TestJDBCAllTypesRoundTrip(t *testing.T) {
	dsn, db := database(t, `CREATE TABLE typed (id INT, b BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, f FLOAT, d DOUBLE,
		dc DECIMAL(20, 6), s VARCHAR(100), bs VARBINARY(100), dt DATE, tm TIME, ts DATETIME(3), ltz TIMESTAMP(3) NULL DEFAULT NULL)`)
	tenv := newEnv(t, 2)
	exec(t, tenv, fmt.Sprintf(`CREATE TABLE typed (id INT, b BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, f FLOAT, d DOUBLE,
			dc DECIMAL(20, 6), s STRING, bs BYTES, dt DATE, tm TIME(0), ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3))
		WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'typed', 'scan.partition.column' = 'id', 'scan.partition.num' = '2')`, dsn),
		"INSERT INTO typed "+typesValues)
	got := query(t, db, `SELECT id, b, ti, si, bi, f, d, CAST(dc AS CHAR), s, HEX(bs), dt, tm, ts, CONVERT_TZ(ltz, @@session.time_zone, '+00:00') FROM typed`)
	want := []string{
		"1|1|-128|32767|-9223372036854775807|1.5|2.25e-07|12345678901234.123456|héllo, \"wörld\" ✓|00FF10|2024-02-29|23:59:58|2024-03-01 12:34:56.789|2024-03-01 12:34:56.789",
		"2|0|0|-1|0|-0.25|-1e+300|-0.000001|||1000-01-01|00:00:00|1969-12-31 23:59:59.999|1970-01-02 00:00:00.000",
		"3|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MariaDB holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ref := exec(t, tenv, "SELECT * FROM ("+typesValues+") AS v(id, b, ti, si, bi, f, d, dc, s, bs, dt, tm, ts, ltz)")
	back := exec(t, tenv, "SELECT * FROM typed")
	ts := make([]types.DataType, len(back.Columns))
	for i, c := range back.Columns {
		ts[i] = c.Type
	}
	if w, g := sortedRows(ref.Rows, ts), sortedRows(back.Rows, ts); !slices.Equal(w, g) {
		t.Fatalf("read back\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

type event struct {
	k string
	v int64
}

func genEvents(n int) []event {
	out := make([]event, n)
	for i := range int64(n) {
		out[i] = event{k: fmt.Sprintf("k%d", i*31%11), v: i*17%100 - 20}
	}
	return out
}

const evDDL = `CREATE TABLE ev (
		id BIGINT,
		k AS 'k' || CAST(MOD(id * 31, 11) AS STRING),
		v AS CAST(MOD(id * 17, 100) - 20 AS BIGINT))
	WITH ('connector' = 'datagen', 'rows-per-second' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d')`

// bruteForce is the final result of SELECT k, COUNT(*), SUM(v) FROM ev
// GROUP BY k HAVING MOD(COUNT(*), 3) <> 0 over n events, as table rows.
func bruteForce(n int) []string {
	groups := map[string][2]int64{}
	for _, e := range genEvents(n) {
		g := groups[e.k]
		groups[e.k] = [2]int64{g[0] + 1, g[1] + e.v}
	}
	var out []string
	for k, g := range groups {
		if g[0]%3 != 0 {
			out = append(out, fmt.Sprintf("%s|%d|%d", k, g[0], g[1]))
		}
	}
	slices.Sort(out)
	return out
}

// TestJDBCUpsertWithDeletes writes an updating GROUP BY whose HAVING
// makes groups appear and disappear into a table with a primary key, in
// small batches at parallelism 2: the table must end as the brute-force
// result. Without a primary key the same query is refused.
func TestJDBCUpsertWithDeletes(t *testing.T) {
	const n = 3000
	dsn, db := database(t, "CREATE TABLE agg (k VARCHAR(10) PRIMARY KEY, cnt BIGINT NOT NULL, total BIGINT NOT NULL)",
		"CREATE TABLE plain (k VARCHAR(10), cnt BIGINT, total BIGINT)")
	tenv := newEnv(t, 2)
	exec(t, tenv, fmt.Sprintf(evDDL, 50000, n-1),
		fmt.Sprintf(`CREATE TABLE agg (k STRING, cnt BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)
			WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'agg', 'sink.buffer-flush.max-rows' = '7', 'sink.buffer-flush.interval' = '50 ms')`, dsn),
		"INSERT INTO agg SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k HAVING MOD(COUNT(*), 3) <> 0")
	if got, want := query(t, db, "SELECT k, cnt, total FROM agg"), bruteForce(n); !slices.Equal(got, want) {
		t.Fatalf("table agg holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	exec(t, tenv, fmt.Sprintf(`CREATE TABLE plain (k STRING, cnt BIGINT, total BIGINT) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'plain')`, dsn))
	_, err := tenv.ExecuteSQL(context.Background(), "INSERT INTO plain SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k")
	if err == nil || !strings.Contains(err.Error(), "Table sink '`default_catalog`.`default_database`.`plain`' doesn't support consuming update changes") {
		t.Fatalf("an updating query into a table without a key: %v", err)
	}
}

// TestJDBCPartitionedScan reads a table of 1000 rows written by MariaDB
// itself through a JDBC URL with credentials, split into 4 ranges read by
// 2 subtasks, and without partitioning; both must give exactly the rows
// MariaDB has within the bounds.
func TestJDBCPartitionedScan(t *testing.T) {
	dsn, db := database(t, "CREATE TABLE nums (id BIGINT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(12, 2))")
	for i := 0; i < 1000; i += 100 {
		var vals []string
		for j := i; j < i+100; j++ {
			name := fmt.Sprintf("'n%d'", j)
			if j%7 == 0 {
				name = "NULL"
			}
			vals = append(vals, fmt.Sprintf("(%d, %s, %d.%02d)", j-10, name, j*37%1000-500, j%100))
		}
		if _, err := db.Exec("INSERT INTO nums VALUES " + strings.Join(vals, ",")); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testmysql.Config(dsn)
	url := fmt.Sprintf("jdbc:mysql://%s/%s?useSSL=false&serverTimezone=UTC", cfg.Addr, cfg.DBName)
	tenv := newEnv(t, 2)
	exec(t, tenv,
		fmt.Sprintf(`CREATE TABLE parts (id BIGINT, name STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'jdbc', 'url' = '%s',
			'username' = 'weir', 'password' = 'secret', 'table-name' = 'nums', 'scan.partition.column' = 'id', 'scan.partition.num' = '4',
			'scan.partition.lower-bound' = '0', 'scan.partition.upper-bound' = '899', 'scan.fetch-size' = '50')`, url),
		fmt.Sprintf(`CREATE TABLE whole (id BIGINT, name STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'nums')`, dsn))
	for _, c := range []struct{ table, where string }{{"parts", "WHERE id BETWEEN 0 AND 899"}, {"whole", ""}} {
		res := exec(t, tenv, "SELECT id, name, amount FROM "+c.table)
		var got []string
		for _, r := range res.Rows {
			name := "NULL"
			if r.Row[1] != nil {
				name = r.Row[1].(string)
			}
			got = append(got, fmt.Sprintf("%d|%s|%s", r.Row[0], name, r.Row[2].(types.Decimal)))
		}
		slices.Sort(got)
		want := query(t, db, "SELECT id, name, amount FROM nums "+c.where)
		if !slices.Equal(got, want) {
			t.Errorf("%s: read %d rows, MariaDB has %d", c.table, len(got), len(want))
		}
	}
	for _, bad := range []struct{ with, msg string }{
		{`'table-name' = 'nums'`, "option 'url': missing"},
		{`'url' = 'jdbc:postgresql://h/db', 'table-name' = 'nums'`, "is not jdbc:mysql://"},
		{`'url' = '` + dsn + `'`, "option 'table-name': missing"},
		{`'url' = '` + dsn + `', 'table-name' = 'nums', 'scan.partition.column' = 'name', 'scan.partition.num' = '2'`, `"name" is not an integer column`},
		{`'url' = '` + dsn + `', 'table-name' = 'nums', 'scan.partition.num' = '2'`, "needs 'scan.partition.column'"},
	} {
		exec(t, tenv, "CREATE TEMPORARY TABLE bad (id BIGINT, name STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'jdbc', "+bad.with+")")
		_, err := tenv.ExecuteSQL(context.Background(), "SELECT * FROM bad")
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("WITH (%s): got %v, want %q", bad.with, err, bad.msg)
		}
		exec(t, tenv, "DROP TEMPORARY TABLE bad")
	}
}

// Projection push-down: the scan selects only the columns the query
// reads. The SQL table declares a column the MariaDB table lacks, so a
// SELECT that listed every column would fail.
func TestJDBCScanSelectsOnlyReadColumns(t *testing.T) {
	dsn, db := database(t, "CREATE TABLE items (id BIGINT PRIMARY KEY, price INT)")
	if _, err := db.Exec("INSERT INTO items VALUES (1, 10), (2, 25), (3, 40)"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 2} {
		tenv := newEnv(t, p)
		exec(t, tenv, "SET 'execution.runtime-mode' = 'batch'")
		exec(t, tenv, fmt.Sprintf(`CREATE TABLE items (id BIGINT, price INT, missing STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'items')`, dsn))
		plan := exec(t, tenv, "EXPLAIN SELECT id FROM items WHERE price > 20").Text
		if !strings.Contains(plan, "project=[id, price]") {
			t.Fatalf("the scan does not say what it reads:\n%s", plan)
		}
		res := exec(t, tenv, "SELECT id FROM items WHERE price > 20")
		var got []int64
		for _, r := range res.Rows {
			got = append(got, r.Row[0].(int64))
		}
		slices.Sort(got)
		if !slices.Equal(got, []int64{2, 3}) {
			t.Fatalf("p=%d: got ids %v, want [2 3]", p, got)
		}
		if res := exec(t, tenv, "SELECT COUNT(*) FROM items"); len(res.Rows) != 1 || res.Rows[0].Row[0] != int64(3) {
			t.Fatalf("p=%d: COUNT(*) gave %v, want 3", p, res.Rows)
		}
		if _, err := tenv.ExecuteSQL(context.Background(), "SELECT missing FROM items"); err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("p=%d: reading a column MariaDB lacks: %v, want an error naming it", p, err)
		}
	}
}
