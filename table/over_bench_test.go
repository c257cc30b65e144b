package table_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirproject/weir/internal/benchstat"
	"github.com/weirproject/weir/table"
)

// BenchmarkOverOnPebble runs a streaming OVER aggregate over rows that
// wait 5 s of event time for the watermark, in 5,000 partitions, on
// Pebble with a cache far smaller than the waiting rows: the rows'
// write-backs, read-ahead and drop as the watermark passes are most of
// the cost. It reports rows/s and rows/s per core (CPU time of the
// process).
//
//	go test ./table -run '^$' -bench OverOnPebble -benchtime 1x -count 5
func BenchmarkOverOnPebble(b *testing.B) {
	const rows = 300000
	for _, cache := range []string{"256 kb", "64 mb"} {
		b.Run("cache="+cache, func(b *testing.B) {
			var elapsed, cpu time.Duration
			for range b.N {
				tenv := table.NewEnvironment()
				for _, s := range []string{
					"SET 'parallelism.default' = '1'",
					"SET 'table.local-time-zone' = 'UTC'",
					"SET 'state.backend.type' = 'pebble'",
					"SET 'state.backend.pebble.cache-size' = '" + cache + "'",
					fmt.Sprintf(`CREATE TABLE ev (
						id BIGINT,
						k AS CAST(MOD(id * 31, 5000) AS BIGINT),
						v AS CAST(MOD(id * 17, 100) - 20 AS BIGINT),
						ts AS TO_TIMESTAMP_LTZ(1700000000000 + id * 3 + MOD(id * 7919, 4900), 3),
						WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
					WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000', 'fields.id.kind' = 'sequence',
						'fields.id.start' = '0', 'fields.id.end' = '%d')`, rows-1),
				} {
					if _, err := tenv.ExecuteSQL(context.Background(), s); err != nil {
						b.Fatalf("%s: %v", s, err)
					}
				}
				start, cpu0 := time.Now(), benchstat.ProcessCPU()
				res, err := tenv.ExecuteSQL(context.Background(), `SELECT COUNT(*) FROM (SELECT id,
					SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS s FROM ev)`)
				if err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				cpu += benchstat.ProcessCPU() - cpu0
				if n := res.Rows[len(res.Rows)-1].Row[0]; n != int64(rows) {
					b.Fatalf("the query counted %v rows, want %d", n, rows)
				}
			}
			b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(rows*b.N)/cpu.Seconds(), "rows/s/core")
		})
	}
}
