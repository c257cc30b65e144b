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
	var b strings.Builder
	base := time.Date(2011, 4, 1, 10, 0, 0, 0, time.UTC)
	for _, r := range rows {
		ts := base.Add(time.Duration(r[3].(int)) * time.Second)
		fmt.Fprintf(&b, "%s,%d,%d,%s\n", r[0], r[1], r[2], ts.Format("2006-01-02 15:04:05.000"))
	}
	return b.String()
}

func mrRun(t *testing.T, tenv *table.Environment, sql string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = ctx
	return fsRows(t, tenv, sql)
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
	cases := []struct {
		name, rows, sql string
		want            []string
	}{
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
