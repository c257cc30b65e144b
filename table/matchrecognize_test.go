package table_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/sql/types"
	"github.com/weirproject/weir/table"
)

// mrEnv is a streaming environment with a Ticker table (symbol, price,
// tax, rowtime) over a CSV file of the given rows, its watermark 1 second
// behind.
func mrEnv(t *testing.T, p int, rows string) *table.Environment {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ticker.csv"), []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	tenv := table.NewEnvironment()
	for _, s := range []string{
		fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
		"SET 'table.local-time-zone' = 'UTC'",
		fmt.Sprintf(`CREATE TABLE Ticker (symbol STRING, price BIGINT, tax BIGINT, rowtime TIMESTAMP(3),
			WATERMARK FOR rowtime AS rowtime - INTERVAL '1' SECOND)
			WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')`, dir),
	} {
		if _, err := tenv.ExecuteSQL(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return tenv
}

// ticker writes (symbol, price, tax, second) rows, times on 2011-04-01
// 10:00:00 + second.
func ticker(rows ...[4]any) string {
	return tickerAt(time.Date(2011, 4, 1, 10, 0, 0, 0, time.UTC), rows...)
}

func tickerAt(base time.Time, rows ...[4]any) string {
	var b strings.Builder
	for _, r := range rows {
		ts := base.Add(time.Duration(r[3].(int)) * time.Second)
		fmt.Fprintf(&b, "%s,%d,%d,%s\n", r[0], r[1], r[2], ts.Format("2006-01-02 15:04:05.000"))
	}
	return b.String()
}

// mrRun runs a query to its end, bounded by a minute, and returns its
// rows formatted and sorted.
func mrRun(t *testing.T, tenv *table.Environment, sql string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := tenv.ExecuteSQL(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for _, r := range res.Rows {
		if r.Kind != types.Insert {
			t.Fatalf("MATCH_RECOGNIZE emitted %s: its output is append-only", r)
		}
		parts := make([]string, len(r.Row))
		for i, v := range r.Row {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = types.FormatIn(v, res.Columns[i].Type, time.UTC)
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	slices.Sort(out)
	return out
}

// The examples of Flink's MATCH_RECOGNIZE documentation: input rows and
// the output the documentation gives.
func TestMatchRecognizeFlinkDocs(t *testing.T) {
	decreasing := ticker(
		[4]any{"ACME", 12, 1, 0}, [4]any{"ACME", 17, 2, 1}, [4]any{"ACME", 19, 1, 2}, [4]any{"ACME", 21, 3, 3},
		[4]any{"ACME", 25, 2, 4}, [4]any{"ACME", 18, 1, 5}, [4]any{"ACME", 15, 1, 6}, [4]any{"ACME", 14, 2, 7},
		[4]any{"ACME", 24, 2, 8}, [4]any{"ACME", 25, 2, 9}, [4]any{"ACME", 19, 1, 10})
	avg := ticker(
		[4]any{"ACME", 12, 1, 0}, [4]any{"ACME", 17, 2, 1}, [4]any{"ACME", 13, 1, 2}, [4]any{"ACME", 16, 3, 3},
		[4]any{"ACME", 25, 2, 4}, [4]any{"ACME", 2, 1, 5}, [4]any{"ACME", 4, 1, 6}, [4]any{"ACME", 10, 2, 7},
		[4]any{"ACME", 15, 2, 8}, [4]any{"ACME", 25, 2, 9}, [4]any{"ACME", 25, 1, 10}, [4]any{"ACME", 30, 1, 11})
	greedy := ticker(
		[4]any{"XYZ", 10, 1, 2}, [4]any{"XYZ", 11, 2, 3}, [4]any{"XYZ", 12, 1, 4},
		[4]any{"XYZ", 13, 2, 5}, [4]any{"XYZ", 14, 1, 6}, [4]any{"XYZ", 16, 2, 7})
	var within [][4]any
	for i, pr := range []int{20, 17, 18, 11, 14, 9, 15, 14, 24, 1, 19} {
		within = append(within, [4]any{"ACME", pr, 1, i * 20 * 60})
	}
	xyz := time.Date(2018, 9, 17, 10, 0, 0, 0, time.UTC)
	output := tickerAt(xyz, [4]any{"XYZ", 10, 1, 2}, [4]any{"XYZ", 12, 2, 3}, [4]any{"XYZ", 13, 1, 4}, [4]any{"XYZ", 11, 2, 5})
	skips := tickerAt(xyz, [4]any{"XYZ", 7, 1, 1}, [4]any{"XYZ", 9, 2, 2}, [4]any{"XYZ", 10, 1, 3}, [4]any{"XYZ", 5, 2, 4},
		[4]any{"XYZ", 10, 2, 5}, [4]any{"XYZ", 7, 2, 6}, [4]any{"XYZ", 14, 2, 7})
	skipQuery := func(skip string) string {
		return `SELECT * FROM Ticker MATCH_RECOGNIZE(PARTITION BY symbol ORDER BY rowtime
			MEASURES SUM(A.price) AS sumPrice, FIRST(rowtime) AS startTime, LAST(rowtime) AS endTime
			ONE ROW PER MATCH ` + skip + ` PATTERN (A+ C) DEFINE A AS SUM(A.price) < 30)`
	}
	cases := []struct {
		name, rows, sql string
		want            []string
	}{
		// The documentation's DEFINE lacks the comma between B and C. It
		// gives the drop 15 -> 1 (12:00 to 13:00, dropDiff 14), but
		// Flink's NFA times a partial match out when an event comes
		// window or more after its start (timestamp - start >= window),
		// so the match from 12:00 is out at 13:00 and the one from 12:20
		// (14 -> 1) is the row Flink's runtime gives.
		{"within", ticker(within...), `SELECT * FROM Ticker MATCH_RECOGNIZE(
			PARTITION BY symbol ORDER BY rowtime
			MEASURES C.rowtime AS dropTime, A.price - C.price AS dropDiff
			ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
			PATTERN (A B* C) WITHIN INTERVAL '1' HOUR
			DEFINE B AS B.price > A.price - 10, C AS C.price < A.price - 10)`,
			[]string{"ACME | 2011-04-01 13:00:00.000 | 13"}},
		// The documentation shows the first row only; without AFTER MATCH
		// Flink skips TO NEXT ROW (its PatternTranslatorTest), and the
		// matches starting at 12 and at 13 are matches too.
		{"output mode", output, `SELECT * FROM Ticker MATCH_RECOGNIZE(
			PARTITION BY symbol ORDER BY rowtime
			MEASURES FIRST(A.price) AS startPrice, LAST(A.price) AS topPrice, B.price AS lastPrice
			ONE ROW PER MATCH PATTERN (A+ B)
			DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price))`,
			[]string{"XYZ | 10 | 13 | 11", "XYZ | 12 | 13 | 11", "XYZ | 13 | 13 | 11"}},
		{"skip past last row", skips, skipQuery("AFTER MATCH SKIP PAST LAST ROW"), []string{
			"XYZ | 26 | 2018-09-17 10:00:01.000 | 2018-09-17 10:00:04.000",
			"XYZ | 17 | 2018-09-17 10:00:05.000 | 2018-09-17 10:00:07.000"}},
		{"skip to next row", skips, skipQuery("AFTER MATCH SKIP TO NEXT ROW"), []string{
			"XYZ | 26 | 2018-09-17 10:00:01.000 | 2018-09-17 10:00:04.000",
			"XYZ | 24 | 2018-09-17 10:00:02.000 | 2018-09-17 10:00:05.000",
			"XYZ | 25 | 2018-09-17 10:00:03.000 | 2018-09-17 10:00:06.000",
			"XYZ | 22 | 2018-09-17 10:00:04.000 | 2018-09-17 10:00:07.000",
			"XYZ | 17 | 2018-09-17 10:00:05.000 | 2018-09-17 10:00:07.000"}},
		{"skip to last A", skips, skipQuery("AFTER MATCH SKIP TO LAST A"), []string{
			"XYZ | 26 | 2018-09-17 10:00:01.000 | 2018-09-17 10:00:04.000",
			"XYZ | 25 | 2018-09-17 10:00:03.000 | 2018-09-17 10:00:06.000",
			"XYZ | 17 | 2018-09-17 10:00:05.000 | 2018-09-17 10:00:07.000"}},
		{"decreasing period", decreasing, `SELECT * FROM Ticker
    MATCH_RECOGNIZE (
        PARTITION BY symbol
        ORDER BY rowtime
        MEASURES
            START_ROW.rowtime AS start_tstamp,
            LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
            LAST(PRICE_UP.rowtime) AS end_tstamp
        ONE ROW PER MATCH
        AFTER MATCH SKIP TO LAST PRICE_UP
        PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
        DEFINE
            PRICE_DOWN AS
                (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) OR
                    PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
            PRICE_UP AS
                PRICE_UP.price > LAST(PRICE_DOWN.price, 1)
    ) MR`, []string{"ACME | 2011-04-01 10:00:04.000 | 2011-04-01 10:00:07.000 | 2011-04-01 10:00:08.000"}},
		// The documentation prints 14.5 and 13.5; AVG of a BIGINT is a
		// BIGINT in Flink (as in weir), so the rows are 14 and 13.
		{"aggregation", avg, `SELECT * FROM Ticker
    MATCH_RECOGNIZE (
        PARTITION BY symbol
        ORDER BY rowtime
        MEASURES
            FIRST(A.rowtime) AS start_tstamp,
            LAST(A.rowtime) AS end_tstamp,
            AVG(A.price) AS avgPrice
        ONE ROW PER MATCH
        AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A+ B)
        DEFINE
            A AS AVG(A.price) < 15
    ) MR`, []string{
			"ACME | 2011-04-01 10:00:00.000 | 2011-04-01 10:00:03.000 | 14",
			"ACME | 2011-04-01 10:00:05.000 | 2011-04-01 10:00:10.000 | 13",
		}},
		{"greedy", greedy, `SELECT * FROM Ticker
    MATCH_RECOGNIZE(
        PARTITION BY symbol
        ORDER BY rowtime
        MEASURES
            C.price AS lastPrice
        ONE ROW PER MATCH
        AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B* C)
        DEFINE
            A AS A.price > 10,
            B AS B.price < 15,
            C AS C.price > 12
    )`, []string{"XYZ | 16"}},
		{"reluctant", greedy, `SELECT * FROM Ticker
    MATCH_RECOGNIZE(
        PARTITION BY symbol
        ORDER BY rowtime
        MEASURES
            C.price AS lastPrice
        ONE ROW PER MATCH
        AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B*? C)
        DEFINE
            A AS A.price > 10,
            B AS B.price < 15,
            C AS C.price > 12
    )`, []string{"XYZ | 13", "XYZ | 16"}},
	}
	for _, c := range cases {
		for _, p := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p%d", c.name, p), func(t *testing.T) {
				got := mrRun(t, mrEnv(t, p, c.rows), c.sql)
				want := slices.Sorted(slices.Values(c.want))
				if !slices.Equal(got, want) {
					t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	}
}

// mrTable creates table name with the given columns and a rowtime column
// over CSV rows: each row's values, then its second (rowtime is 1970-01-01
// 00:00:00 plus that many seconds), with a watermark 1 second behind.
func mrTable(t *testing.T, tenv *table.Environment, name, cols string, rows ...string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for _, r := range rows {
		i := strings.LastIndexByte(r, ',')
		var sec int
		fmt.Sscan(r[i+1:], &sec)
		fmt.Fprintf(&b, "%s,%s\n", r[:i], time.Unix(int64(sec), 0).UTC().Format("2006-01-02 15:04:05.000"))
	}
	if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fsExec(t, tenv, fmt.Sprintf(`CREATE TABLE %s (%s, rowtime TIMESTAMP(3),
		WATERMARK FOR rowtime AS rowtime - INTERVAL '1' SECOND)
		WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv', 'csv.null-literal' = 'null')`, name, cols, dir))
}

// Cases of Flink's MatchRecognizeITCase: its input rows and expected
// rows. Flink's tests that order by proctime read an in-order collection;
// here the rows get increasing rowtimes in the same order, which gives
// the same sequence per partition. Pattern variables with quotes or
// unicode escapes in their names are renamed.
func TestMatchRecognizeFlinkITCase(t *testing.T) {
	type tbl struct {
		cols string
		rows []string
	}
	ticker := tbl{"symbol STRING, tstamp BIGINT, price INT, tax INT", []string{
		"ACME,1,19,1,1", "ACME,2,17,2,2", "ACME,3,13,3,3", "ACME,4,20,4,4"}}
	cases := []struct {
		name string
		tbl  tbl
		sql  string
		want []string
	}{
		{"testSimplePattern", tbl{"id INT, name STRING", []string{"1,a,1", "2,z,2", "3,b,3", "4,c,4", "5,d,5", "6,a,6", "7,b,7", "8,c,8", "9,h,9"}},
			`SELECT T.aid, T.bid, T.cid FROM T0 MATCH_RECOGNIZE (ORDER BY rowtime
			MEASURES A.id AS aid, l.id AS bid, C.id AS cid
			PATTERN (A l C) DEFINE A AS name = 'a', l AS name = 'b', C AS name = 'c') AS T`,
			[]string{"6 | 7 | 8"}},
		// The same, ordered by processing time: rows in arrival order
		// (one file, read in order).
		{"testSimplePattern/proctime", tbl{"id INT, name STRING, proctime AS PROCTIME()", []string{"1,a,1", "2,z,2", "3,b,3", "4,c,4", "5,d,5", "6,a,6", "7,b,7", "8,c,8", "9,h,9"}},
			`SELECT T.aid, T.bid, T.cid FROM T0 MATCH_RECOGNIZE (ORDER BY proctime
			MEASURES A.id AS aid, l.id AS bid, C.id AS cid
			PATTERN (A l C) DEFINE A AS name = 'a', l AS name = 'b', C AS name = 'c') AS T`,
			[]string{"6 | 7 | 8"}},
		{"testSimplePatternWithNulls", tbl{"id INT, name STRING, nullField STRING", []string{
			"1,a,null,1", "2,b,null,2", "3,c,null,3", "4,d,null,4", "5,null,null,5", "6,a,null,6", "7,b,null,7", "8,c,null,8", "9,null,null,9"}},
			`SELECT T.aid, T.bNull, T.cid, T.aNull FROM T0 MATCH_RECOGNIZE (ORDER BY rowtime
			MEASURES A.id AS aid, A.nullField AS aNull, LAST(B.nullField) AS bNull, C.id AS cid
			PATTERN (A B C)
			DEFINE A AS name = 'a' AND nullField IS NULL, B AS name = 'b' AND LAST(A.nullField) IS NULL, C AS name = 'c') AS T`,
			[]string{"1 | NULL | 3 | NULL", "6 | NULL | 8 | NULL"}},
		{"testCodeSplitsAreProperlyGenerated", tbl{"id INT, name STRING, key1 STRING, key2 STRING", []string{
			"1,a,key1,second_key3,1", "2,b,key1,second_key3,2", "3,c,key1,second_key3,3", "4,d,key,second_key,4", "5,e,key,second_key,5",
			"6,a,key2,second_key4,6", "7,b,key2,second_key4,7", "8,c,key2,second_key4,8", "9,f,key,second_key,9"}},
			`SELECT * FROM T0 MATCH_RECOGNIZE (PARTITION BY key1, key2 ORDER BY rowtime
			MEASURES A.id AS aid, A.key1 AS akey1, LAST(B.id) AS bid, C.id AS cid, C.key2 AS ckey2
			PATTERN (A B C)
			DEFINE A AS name = 'a' AND key1 LIKE '%key%' AND id > 0, B AS name = 'b' AND LAST(A.name, 2) IS NULL,
				C AS name = 'c' AND LAST(A.name) = 'a') AS T`,
			[]string{"key1 | second_key3 | 1 | key1 | 2 | 3 | second_key3", "key2 | second_key4 | 6 | key2 | 7 | 8 | second_key4"}},
		{"testPartitionByWithParallelSource", ticker,
			`SELECT * FROM T0 MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime
			MEASURES DOWN.tax AS bottom_tax, UP.tax AS end_tax AFTER MATCH SKIP PAST LAST ROW
			PATTERN (DOWN UP) DEFINE DOWN AS DOWN.price = 13, UP AS UP.price = 20) AS T`,
			[]string{"ACME | 3 | 4"}},
		{"testLogicalOffsetOutsideOfRangeInMeasures", ticker,
			`SELECT * FROM T0 MATCH_RECOGNIZE (ORDER BY rowtime
			MEASURES FIRST(DOWN.price) AS first, LAST(DOWN.price) AS last, FIRST(DOWN.price, 5) AS nullPrice
			ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (DOWN{2,} UP)
			DEFINE DOWN AS price < LAST(DOWN.price, 1) OR LAST(DOWN.price, 1) IS NULL, UP AS price > LAST(DOWN.price)) AS T`,
			[]string{"19 | 13 | NULL"}},
		{"testLogicalOffsetsWithStarVariable", tbl{"id INT, symbol STRING, tstamp BIGINT, price INT", []string{
			"1,ACME,1,20,1", "2,ACME,2,19,2", "3,ACME,3,18,3", "4,ACME,4,17,4", "5,ACME,5,16,5", "6,ACME,6,15,6", "7,ACME,7,14,7", "8,ACME,8,20,8"}},
			"SELECT * FROM T0 MATCH_RECOGNIZE (ORDER BY rowtime MEASURES " +
				"FIRST(id, 0) AS id0, FIRST(id, 1) AS id1, FIRST(id, 2) AS id2, FIRST(id, 3) AS id3, FIRST(id, 4) AS id4, FIRST(id, 5) AS id5, FIRST(id, 6) AS id6, FIRST(id, 7) AS id7, " +
				"LAST(id, 0) AS id8, LAST(id, 1) AS id9, LAST(id, 2) AS id10, LAST(id, 3) AS id11, LAST(id, 4) AS id12, LAST(id, 5) AS id13, LAST(id, 6) AS id14, LAST(id, 7) AS id15 " +
				"ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (`DOWN\"`{2,} UP) " +
				"DEFINE `DOWN\"` AS price < LAST(price, 1) OR LAST(price, 1) IS NULL, UP AS price = FIRST(price) AND price > FIRST(price, 3) AND price = LAST(price, 7)) AS T",
			[]string{"1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 8 | 7 | 6 | 5 | 4 | 3 | 2 | 1"}},
		{"testLogicalOffsets", tbl{"symbol STRING, tstamp BIGINT, price INT, tax INT", []string{
			"ACME,1,19,1,1", "ACME,2,17,2,2", "ACME,3,13,3,3", "ACME,4,20,4,4", "ACME,5,20,5,5", "ACME,6,26,6,6", "ACME,7,20,7,7", "ACME,8,25,8,8"}},
			`SELECT start_tstamp, bottom_tstamp, end_tstamp, bottom_total, end_total FROM T0 MATCH_RECOGNIZE (ORDER BY rowtime
			MEASURES FIRST(DOWN.tstamp) AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp, UP.tstamp AS end_tstamp,
				FIRST(DOWN.price + DOWN.tax + 1) AS bottom_total, UP.price + UP.tax AS end_total
			ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (DOWN{2,} UP)
			DEFINE DOWN AS price < LAST(DOWN.price, 1) OR LAST(DOWN.price, 1) IS NULL, UP AS price < FIRST(DOWN.price)) AS T`,
			[]string{"6 | 7 | 8 | 33 | 33"}},
		{"testAggregatesWithNullInputs", tbl{"id INT, name STRING, price INT", []string{
			"1,a,10,1", "2,z,10,2", "3,b,null,3", "4,c,null,4", "5,d,3,5", "6,c,3,6", "7,c,3,7", "8,c,3,8", "9,c,2,9"}},
			`SELECT * FROM T0 MATCH_RECOGNIZE (ORDER BY rowtime
			MEASURES SUM(A.price) AS sumA, COUNT(A.id) AS countAId, COUNT(A.price) AS countAPrice, COUNT(*) AS countAll,
				COUNT(price) AS countAllPrice, LAST(id) AS endId
			AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ C)
			DEFINE A AS SUM(A.price) < 30, C AS C.name = 'c') AS T`,
			[]string{"29 | 7 | 5 | 8 | 6 | 8"}},
		{"testWindowedGroupingAppliedToMatchRecognize", tbl{"symbol STRING, price INT, tax INT", []string{
			"ACME,1,1,1", "ACME,2,2,2", "ACME,1,4,4", "ACME,1,3,5"}},
			`SELECT symbol, SUM(price) AS price, TUMBLE_ROWTIME(matchRowtime, INTERVAL '3' SECOND) AS rowTime,
				TUMBLE_START(matchRowtime, INTERVAL '3' SECOND) AS startTime
			FROM T0 MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime
				MEASURES A.price AS price, A.tax AS tax, MATCH_ROWTIME() AS matchRowtime
				ONE ROW PER MATCH PATTERN (A) DEFINE A AS A.price > 0) AS T
			GROUP BY symbol, TUMBLE(matchRowtime, INTERVAL '3' SECOND)`,
			[]string{"ACME | 3 | 1970-01-01 00:00:02.999 | 1970-01-01 00:00:00.000", "ACME | 2 | 1970-01-01 00:00:05.999 | 1970-01-01 00:00:03.000"}},
	}
	for _, c := range cases {
		for _, p := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p%d", c.name, p), func(t *testing.T) {
				tenv := table.NewEnvironment()
				fsExec(t, tenv, fmt.Sprintf("SET 'parallelism.default' = '%d'", p))
				fsExec(t, tenv, "SET 'table.local-time-zone' = 'UTC'")
				mrTable(t, tenv, "T0", c.tbl.cols, c.tbl.rows...)
				got := mrRun(t, tenv, c.sql)
				want := slices.Sorted(slices.Values(c.want))
				if !slices.Equal(got, want) {
					t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			})
		}
	}
}

// What cep cannot run is refused at planning, naming line, column and
// what: Flink refuses the same (its PatternTranslatorTest and the
// documentation's known limitations).
func TestMatchRecognizeRefusals(t *testing.T) {
	tenv := table.NewEnvironment()
	mrTable(t, tenv, "T0", "id INT, name STRING", "1,a,1")
	head := "SELECT * FROM T0 MATCH_RECOGNIZE (\n  ORDER BY rowtime MEASURES A.id AS aid\n  "
	for _, c := range []struct{ clause, want string }{
		{"ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS TRUE)", "line 1, column 18: MATCH_RECOGNIZE: ALL ROWS PER MATCH (only ONE ROW PER MATCH is) is not supported"},
		{"PATTERN ((A | B) C) DEFINE A AS TRUE)", "line 3, column 13: MATCH_RECOGNIZE: alternation (|) is not supported"},
		{"PATTERN ((A B)+ C) DEFINE A AS TRUE)", "line 3, column 13: MATCH_RECOGNIZE: a group pattern (a quantified or nested sequence in parentheses) is not supported"},
		{"PATTERN (PERMUTE(A, B)) DEFINE A AS TRUE)", "line 3, column 12: MATCH_RECOGNIZE: PERMUTE is not supported"},
		{"PATTERN (A?? B) DEFINE A AS TRUE)", "line 3, column 12: MATCH_RECOGNIZE: the reluctant optional quantifier ?? is not supported"},
		{"PATTERN (A B+) DEFINE A AS TRUE)", "line 3, column 12: MATCH_RECOGNIZE: greedy quantifiers are not allowed as the last element of a pattern; end it with a single variable or a reluctant quantifier"},
		{"PATTERN (A B+ C* D) DEFINE A AS TRUE)", "line 3, column 17: MATCH_RECOGNIZE: the optional variable C cannot follow the greedy B; make B reluctant"},
		{"PATTERN (A B A) DEFINE A AS TRUE)", "line 3, column 16: MATCH_RECOGNIZE: pattern variables must be unique; A appears twice"},
		{"PATTERN (A B) DEFINE A AS PREV(A.id) = 1)", "line 3, column 29: MATCH_RECOGNIZE: PREV is not supported: Flink does not support physical offsets within partition; use LAST(v.col, n) or FIRST(v.col, n)"},
		{"PATTERN (A B) DEFINE B AS SUM(A.id + B.id) > 1)", "line 3, column 40: MATCH_RECOGNIZE: an expression inside FIRST, LAST or an aggregate must refer to one pattern variable, not A and B"},
		{"PATTERN (A B) SUBSET S = (A, B) DEFINE A AS TRUE)", "line 3, column 24: MATCH_RECOGNIZE: SUBSET is not supported"},
		{"PATTERN (A B) DEFINE X AS TRUE)", "line 3, column 24: DEFINE X: X is not a variable of the PATTERN"},
		{"AFTER MATCH SKIP TO FIRST X PATTERN (A B) DEFINE A AS TRUE)", "line 3, column 3: AFTER MATCH SKIP TO FIRST X: X is not a variable of the PATTERN"},
		{"PATTERN (A B) WITHIN INTERVAL '1' MONTH DEFINE A AS TRUE)", "line 3, column 24: MATCH_RECOGNIZE: WITHIN takes a positive day-time interval literal (months and years are not supported)"},
	} {
		sql := head + c.clause
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := tenv.ExecuteSQL(ctx, sql)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n got  %v\n want %s", sql, err, c.want)
		}
	}
	// ORDER BY must start with an ascending time attribute, as in Flink.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := tenv.ExecuteSQL(ctx, "SELECT * FROM T0 MATCH_RECOGNIZE (ORDER BY id MEASURES A.id AS aid PATTERN (A) DEFINE A AS TRUE)")
	if err == nil || !strings.Contains(err.Error(), "line 1, column 44: MATCH_RECOGNIZE must be ordered by an ascending time attribute") {
		t.Errorf("ORDER BY id: got %v", err)
	}
}
